"""AppTest: the app shell and the Home page, driven like a user would, asserting on what is shown."""

import json

import numpy as np
import pytest

from tests.app.conftest import decode_plotly, plotly_traces, set_shared
from ui.state import DEFAULT_TEXT, OTHER_MODEL


@pytest.fixture
def app(new_app):
    return new_app().run()


def heatmap(at):
    return plotly_traces(at)[0]


def test_home_shows_heatmap_of_the_default_sentence(app):
    assert not app.exception
    assert app.title[0].value == "See inside BERT-style Transformers"
    assert app.text_area(key="shared.text").value == DEFAULT_TEXT
    data = heatmap(app)
    z = decode_plotly(data["z"])
    assert z.shape == (16, 16)
    np.testing.assert_allclose(z.sum(1), 1.0, atol=1e-4)
    assert "animal" in data["y"] and "animal" in data["x"]  # hover: "query %{y} → key %{x}"
    assert "customdata" not in data  # no hover string per cell: the labels carry the tokens


def test_example_button_sets_the_shared_sentence_and_heatmap(app):
    app.button(key="home.example2").click().run()
    assert app.session_state["shared.text"] == "The cat sat on the mat."
    assert len(heatmap(app)["y"]) == len(["[CLS]", "the", "cat", "sat", "on", "the", "mat", ".", "[SEP]"])


def test_pair_example_fills_both_sentences(app):
    app.button(key="home.example4").click().run()
    assert app.session_state["shared.pair"] == "The dog lay on the rug."
    assert len(heatmap(app)["y"]) == 9 + 8  # [CLS] a . [SEP] + b . [SEP]


def test_layer_and_head_sliders_change_the_shown_head(app):
    before = heatmap(app)["z"]
    app.slider(key="home.layer").set_value(1).run()
    app.slider(key="home.head").set_value(5).run()
    assert heatmap(app)["z"] != before
    assert "layer 1, head 5" in json.dumps(app.get("plotly_chart")[0].proto.spec)


@pytest.mark.parametrize("text", ["", "   "])
def test_empty_sentence_typed_in_the_sidebar_shows_a_clear_message_not_a_traceback(app, text):
    app.text_area(key="shared.text").set_value(text).run()
    assert not app.exception
    assert "empty" in app.error[0].value


def test_markup_and_emoji_in_the_sentence_are_shown_as_tokens(app):
    set_shared(app, text="<img src=x onerror=alert(1)> 🦊 ok")
    assert not app.exception
    labels = heatmap(app)["x"]
    assert labels[0] == "[CLS]" and labels[1] == "&lt;" and labels[17] == "[UNK]"  # the emoji is unknown to BERT
    assert "<" not in "".join(labels)  # escaped: user text never becomes plotly markup


def test_long_text_is_truncated_with_a_warning(app):
    set_shared(app, text="many words here " * 300)
    assert not app.exception
    assert "at most 512" in app.warning[0].value


def test_unknown_local_model_keeps_the_sentence_and_says_what_is_wrong(app):
    set_shared(app, text="Keep this sentence.", model_choice=OTHER_MODEL, model_other="/no/such/model")
    assert not app.exception
    assert "does not exist" in app.error[0].value
    assert app.session_state["shared.text"] == "Keep this sentence."


def test_query_params_set_the_sentence_on_first_load(new_app):
    at = new_app(text="Shared by a teacher.").run()
    assert at.text_area(key="shared.text").value == "Shared by a teacher."
    assert "shared" in heatmap(at)["x"]


def test_opening_heatmap_comes_from_the_startup_cache_and_the_warm_up_corrects_it(new_app, tmp_path, monkeypatch):
    """Home shows a cached entry without the model; `prepare` (the server's warm-up) replaces a wrong one."""
    from ui.state import clear_caches
    from vizcore.attention.extract import extract_attention
    from vizcore.model import catalog, startup_cache
    from vizcore.model.loading import DEFAULT_MODEL, load_model

    monkeypatch.setenv(startup_cache.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(catalog, "accelerator_possible", lambda: False)
    loaded = load_model(DEFAULT_MODEL, device="cpu")
    planted = extract_attention(loaded, DEFAULT_TEXT)
    n = len(planted.tokens)
    planted.attention[2, 0] = np.eye(n, dtype=np.float32)  # layer 3, head 1: what Home opens on
    assert startup_cache.store(planted, "cpu") == "written"
    clear_caches()
    z = decode_plotly(heatmap(new_app().run())["z"])
    np.testing.assert_array_equal(z, np.eye(n))

    assert {e["status"] for e in startup_cache.prepare(loaded)["entries"]} == {"written", "replaced"}
    clear_caches()
    z = decode_plotly(heatmap(new_app().run())["z"])
    np.testing.assert_array_equal(z, extract_attention(loaded, DEFAULT_TEXT).attention[2, 0])
    clear_caches()
