"""The client-side renderer's payload: 8-bit weights, which layers travel, sizes, and the standalone HTML file."""

import json

import numpy as np
import pytest

from tests.support.synthetic import EVIL, synthetic_run
from vizcore.attention.aggregate import ViewOptions
from vizcore.attention.payload import (
    FULL_MAX_TOKENS,
    attention_payload,
    binary_payload,
    decode_layer,
    encode_layer,
    payload_bytes,
    read_binary_payload,
)
from vizcore.attention.renderer import attention_view_html, streamlit_module_js, widget_esm
from vizcore.errors import VizError


def test_weights_round_trip_within_0_004_and_small_weights_keep_their_size():
    run = synthetic_run()
    back = decode_layer(encode_layer(run.attention[1]), run.num_heads, len(run.tokens))
    assert back.shape == run.attention[1].shape
    assert np.abs(back - run.attention[1]).max() <= 1 / 255 + 1e-6
    uniform = np.full((1, 512, 512), 1 / 512, dtype=np.float32)  # a diffuse head at 512 tokens
    rows = decode_layer(encode_layer(uniform), 1, 512).sum(-1)
    np.testing.assert_allclose(rows, 1.0, atol=0.06)  # a linear 8-bit code would give rows of 0
    assert decode_layer(encode_layer(np.eye(4, dtype=np.float32)[None]), 1, 4).tolist() == [np.eye(4).tolist()]


def test_short_inputs_carry_every_layer_long_inputs_only_the_chosen_one():
    short = synthetic_run(layers=3, words=10)
    assert sorted(attention_payload(short, layer=2)["layers"]) == ["0", "1", "2"]
    long = synthetic_run(layers=3, heads=2, words=FULL_MAX_TOKENS)
    assert len(long.tokens) > FULL_MAX_TOKENS
    payload = attention_payload(long, layer=2, head=1)
    assert list(payload["layers"]) == ["2"]
    assert payload["initial"] == {"layer": 2, "head": 1, "view": "heatmap"}
    grid = payload["grid"]
    assert grid["cells"] == 24 and len(json.dumps(grid)) < 4 * 3 * 2 * 24 * 24  # block means, not weights


def test_the_input_id_ignores_selection_options_and_carried_layers_but_not_the_input():
    run = synthetic_run(layers=2, words=FULL_MAX_TOKENS)
    a = attention_payload(run, layer=0)
    b = attention_payload(run, layer=1, head=2, view="grid", options=ViewOptions(hide_special=True))
    assert a["inputId"] == b["inputId"] and a["layers"] != b["layers"]
    assert attention_payload(synthetic_run(layers=2, seed=1, words=FULL_MAX_TOKENS))["inputId"] != a["inputId"]


def test_words_and_tokens_follow_the_python_grouping():
    payload = attention_payload(synthetic_run())
    tokens = payload["tokens"]
    assert tokens[2:4] == ["play", "##ful"] and payload["wordOf"][2] == payload["wordOf"][3]
    assert payload["wordLabels"][payload["wordOf"][2]] == "playful"
    assert payload["wordOf"][4] != payload["wordOf"][3]  # "<img ..." is a word of its own
    assert payload["segments"][-1] == 1 and payload["special"][0] == 1


@pytest.mark.parametrize("kwargs, message", [({"layer": 3}, "not in this model"), ({"view": "pie"}, "Unknown view"),
                                             ({"options": ViewOptions(pair_filter="A->C")}, "pair filter")])
def test_bad_requests_say_what_is_wrong(kwargs, message):
    with pytest.raises(VizError, match=message):
        attention_payload(synthetic_run(layers=3), **kwargs)


def test_a_512_token_layer_of_12_heads_stays_under_5_mb():
    run = synthetic_run(layers=2, heads=12, pair=False, words=512 - 8)
    assert len(run.tokens) == 512
    payload = attention_payload(run, layer=1)
    assert list(payload["layers"]) == ["1"]  # above 128 tokens, the shown layer alone
    base64_codes = 512 * 512 * 12 * 4 / 3
    assert payload_bytes(payload) < 0.75 * base64_codes  # deflated, even for these noisy synthetic weights


def test_standalone_html_is_offline_and_user_text_is_escaped_json():
    page = attention_view_html(synthetic_run(), layer=1, head=2)
    assert "default-src 'none'" in page and "http://" not in page.replace("http://www.w3.org", "")
    assert EVIL not in page and "\\u003cimg src=x onerror=alert(1)\\u003e" in page
    assert "InsideBertAttention.mount" in page and '"canFetch":false' in page


def test_hosts_wrap_the_same_renderer_file():
    for module in (streamlit_module_js(), widget_esm()):
        assert "global.InsideBertAttention = {mount" in module and "export default" in module


def test_the_binary_form_holds_the_same_payload_with_a_quarter_fewer_bytes():
    run = synthetic_run(layers=3, heads=4, words=100)
    payload = attention_payload(run, layer=2, head=1)
    packed = binary_payload(payload)
    back = read_binary_payload(packed)
    assert {k: v for k, v in back.items() if k != "layers"} == {k: v for k, v in payload.items() if k != "layers"}
    for key, text in payload["layers"].items():
        np.testing.assert_array_equal(decode_layer(back["layers"][key], 4, len(run.tokens)),
                                      decode_layer(text, 4, len(run.tokens)))
    layer_text = sum(len(text) for text in payload["layers"].values())
    assert payload_bytes(payload) - len(packed) > 0.24 * layer_text  # base64 is 4 characters per 3 bytes
    with pytest.raises(VizError, match="Not an attention view payload"):
        read_binary_payload(b"PK\x03\x04" + packed[4:])
