"""Offline HTML views: nothing fetched from outside, user text only as escaped JSON, data as computed."""

import json
import re

import numpy as np
import pytest

from vizcore.attention.extract import extract_attention
from vizcore.attention.html_views import (
    bertviz_head_view_html,
    bertviz_model_view_html,
    bertviz_neuron_view_html,
    head_view_html,
    queries_and_keys,
    script_json,
)
from vizcore.errors import VizError
from vizcore.model.loading import load_model

EVIL = "<script>alert(1)</script> <img src=x onerror=alert(2)> & done"


@pytest.fixture(scope="module")
def tiny(tiny_bert_dir):
    return load_model(str(tiny_bert_dir), device="cpu")


@pytest.fixture(scope="module")
def evil(tiny):
    return extract_attention(tiny, EVIL, "A second <b>bold</b> one.")


def assert_offline_and_inert(page: str) -> None:
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page), "an external resource is referenced"
    assert "cdnjs" not in page and "cdn." not in page
    assert page.count("</script>") == page.count("<script>\n")  # every block closes where we closed it
    assert "<!--" not in page  # which would make the parser skip a </script>
    assert "onerror=alert" not in page and "<img" not in page and "<b>" not in page
    assert "<script>alert" not in page


def test_script_json_cannot_close_the_script_or_open_a_tag():
    text = script_json({"t": "</script><!-- & \u2028"})
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == {"t": "</script><!-- & \u2028"}


def test_head_view_page_holds_the_heads_weights_and_escaped_tokens(evil):
    page = head_view_html(evil, layer=1, heads=[0, 2], initial_head=2)
    assert_offline_and_inert(page)
    data = json.loads(re.search(r"window\.HEAD_VIEW = (\{.*?\});\n", page).group(1))
    assert data["left"][1] == "<" and data["initialHead"] == "head 3"
    np.testing.assert_allclose(data["heads"]["head 3"], evil.attention[1, 2], atol=5e-5)
    assert data["rightSegments"][-1] == 1
    assert "textContent" in page and "innerHTML" not in page


def test_head_view_pair_filter_and_length_limit(tiny, evil):
    page = head_view_html(evil, layer=0, heads=[0], initial_head=0, pair_filter="B->A")
    data = json.loads(re.search(r"window\.HEAD_VIEW = (\{.*?\});\n", page).group(1))
    b = int((evil.segment_ids == 1).sum())
    assert len(data["left"]) == b and len(data["right"]) == len(evil.tokens) - b
    long = extract_attention(tiny, "word " * 62)  # 64 tokens: fine for the head view
    assert "HEAD_VIEW" in head_view_html(long, 0, [0], 0)
    with pytest.raises(VizError, match="at most 200 tokens"):
        head_view_html(_fake_long(evil, 201), 0, [0], 0)


def _fake_long(result, n):
    from dataclasses import replace

    return replace(result, tokens=["w"] * n, segment_ids=np.zeros(n, int), special_mask=np.zeros(n, bool),
                   attention=np.full((1, 1, n, n), 1 / n, np.float32))


def test_bertviz_head_and_model_views_are_offline_with_libraries_inlined(evil):
    for page in (bertviz_head_view_html(evil, layer=1), bertviz_model_view_html(evil)):
        assert_offline_and_inert(page)
        assert "d3js.org v5" in page and "jQuery" in page and "window.require = window.requirejs" in page
        # the libraries come before bertviz's code, which calls require(['jquery', 'd3'], ...)
        assert page.index("window.require = ") < page.index("requirejs(['jquery', 'd3']")
        params = json.loads(re.search(r"const params = (\{.*?\}); // HACK", page).group(1))
        names = [f["name"] for f in params["attention"]]
        assert names == ["All", "A -> A", "B -> B", "A -> B", "B -> A"]
        np.testing.assert_allclose(params["attention"][0]["attn"], evil.attention, atol=5e-5)


def test_bertviz_numbers_layers_and_heads_from_1_as_the_app_does(evil, tiny):
    """Its menus get 0-based option texts from its own code; a script relabels them (checked in Chromium by
    tests/e2e/test_attention_browser.py). The model view's row and column labels are the include lists."""
    short = extract_attention(tiny, "The cat sat on the mat.")
    for page in (bertviz_head_view_html(evil), bertviz_neuron_view_html(tiny, short)):
        relabel = page.index("String(Number(option.value) + 1)")
        assert relabel > page.rindex("config.layer"), "the relabelling runs after bertviz's code"
    params = json.loads(re.search(r"const params = (\{.*?\}); // HACK", bertviz_model_view_html(evil)).group(1))
    assert params["include_layers"] == list(range(1, evil.num_layers + 1))
    assert params["include_heads"] == list(range(1, evil.num_heads + 1))


def test_bertviz_limits_say_why(evil):
    with pytest.raises(VizError, match="limited here to 64 tokens"):
        bertviz_head_view_html(_fake_long(evil, 65))


def test_neuron_view_queries_and_keys_reproduce_the_weights(tiny):
    result = extract_attention(tiny, "The cat sat on the mat.")
    queries, keys = queries_and_keys(tiny, result)
    d = queries.shape[-1]
    scores = queries @ np.swapaxes(keys, -1, -2) / np.sqrt(d)  # (L, H, T, T)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    np.testing.assert_allclose(weights, result.attention, atol=1e-5)
    page = bertviz_neuron_view_html(tiny, result, layer=1, head=2)
    assert_offline_and_inert(page)
    params = json.loads(re.search(r"window\.bertviz_params = (\{.*?\});\n", page).group(1))
    assert params["layer"] == 1 and params["head"] == 2 and params["bidirectional"] is True
    assert np.asarray(params["attention"]["all"]["queries"]).shape == queries.shape


def test_neuron_view_refuses_non_bert_models_and_long_inputs(tiny_model_dir, evil, tiny):
    gpt2 = load_model(str(tiny_model_dir("gpt2")), device="cpu")
    with pytest.raises(VizError, match="BERT-style encoder"):
        bertviz_neuron_view_html(gpt2, extract_attention(gpt2, "Hello there."))
    with pytest.raises(VizError, match="32 tokens"):
        bertviz_neuron_view_html(tiny, _fake_long(evil, 33))
