"""AppTest: the app shell and the Home page, driven like a user would, asserting on what is shown."""

import numpy as np
import pytest

from tests.app.conftest import renderer_head, renderer_payload, set_shared
from ui.state import DEFAULT_TEXT, OTHER_MODEL
from vizcore.model.heads import default_head


@pytest.fixture
def app(new_app):
    return new_app().run()


def param(at, name):
    value = at.query_params.get(name)
    return value[0] if isinstance(value, list) else value


def heatmap(at):
    return renderer_payload(at)


def test_home_shows_heatmap_of_the_default_sentence(app):
    assert not app.exception
    assert app.title[0].value == "See inside BERT-style Transformers"
    assert app.text_area(key="shared.text").value == DEFAULT_TEXT
    assert not app.get("plotly_chart")  # E: the opening view needs no plotly.js
    payload = heatmap(app)
    z = renderer_head(payload)
    assert z.shape == (16, 16)
    np.testing.assert_allclose(z.sum(1), 1.0, atol=0.02)  # 8-bit weights
    assert "animal" in payload["tokens"]
    layer, head = default_head(6, 12)  # all-MiniLM-L6-v2's shape: layer 3, head 1
    assert payload["initial"] == {"layer": layer, "head": head, "view": "heatmap"}
    assert sorted(payload["layers"]) == [str(l) for l in range(6)]  # every layer: switches need no server


def test_example_button_sets_the_shared_sentence_and_heatmap(app):
    app.button(key="home.example2").click().run()
    assert app.session_state["shared.text"] == "The cat sat on the mat."
    assert heatmap(app)["tokens"] == ["[CLS]", "the", "cat", "sat", "on", "the", "mat", ".", "[SEP]"]


def test_pair_example_fills_both_sentences(app):
    app.button(key="home.example4").click().run()
    assert app.session_state["shared.pair"] == "The dog lay on the rug."
    payload = heatmap(app)
    assert payload["n"] == 9 + 8  # [CLS] a . [SEP] + b . [SEP]
    assert payload["segments"] == [0] * 9 + [1] * 8


def test_a_link_opens_that_layer_and_head_and_the_url_keeps_it(new_app):
    at = new_app(layer="1", head="5").run()
    assert heatmap(at)["initial"] == {"layer": 0, "head": 4, "view": "heatmap"}
    assert param(at, "layer") == "1" and param(at, "head") == "5"


def test_a_switch_made_in_the_browser_updates_the_url_without_resending_the_weights(app):
    """The component's callback (what a browser switch calls) stores the head; the data stays the same."""
    from ui.attention_component import store_selection

    before = heatmap(app)
    store_selection(app.session_state, "home.view", {"layer": "shared.layer", "head": "shared.head"},
                    {"layer": 0, "head": 4, "view": "heatmap"})
    app.run()
    assert param(app, "layer") == "1" and param(app, "head") == "5"
    assert heatmap(app) == before  # same message: Streamlit sends a reference, not the weights
    app.session_state["shared.layer"] = 2  # a switch from elsewhere (a link, an example) opens on it
    app.run()
    assert heatmap(app)["initial"] == {"layer": 1, "head": 4, "view": "heatmap"}


def test_bad_layer_in_the_link_is_reported(new_app):
    at = new_app(layer="9").run()
    assert "layer='9' was not used: it must be a whole number from 1 to 6 here." in at.warning[0].value
    assert heatmap(at)["initial"]["layer"] == default_head(6, 12)[0]


@pytest.mark.parametrize("text", ["", "   "])
def test_empty_sentence_typed_in_the_sidebar_shows_a_clear_message_not_a_traceback(app, text):
    app.text_area(key="shared.text").set_value(text).run()
    assert not app.exception
    assert "empty" in app.error[0].value


def test_markup_and_emoji_in_the_sentence_are_shown_as_tokens(app):
    set_shared(app, text="<img src=x onerror=alert(1)> 🦊 ok")
    assert not app.exception
    tokens = heatmap(app)["tokens"]
    assert tokens[0] == "[CLS]" and tokens[1] == "<" and tokens[17] == "[UNK]"  # the emoji is unknown to BERT
    # Tokens travel as JSON data and the renderer sets them with textContent or draws them on a canvas
    # (tests/e2e/test_renderer_browser.py): raw "<" is right here, never HTML-escaped twice.


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
    assert "shared" in heatmap(at)["tokens"]


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
    z = renderer_head(heatmap(new_app().run()))
    np.testing.assert_array_equal(z, np.eye(n))

    assert {e["status"] for e in startup_cache.prepare(loaded)["entries"]} == {"written", "replaced"}
    clear_caches()
    z = renderer_head(heatmap(new_app().run()))
    np.testing.assert_allclose(z, extract_attention(loaded, DEFAULT_TEXT).attention[2, 0], atol=1 / 255 + 1e-6)
    clear_caches()


def test_the_base_model_not_installed_is_listed_with_its_size_and_how_to_install(new_app, tmp_path, monkeypatch):
    monkeypatch.setenv("VIZCORE_MODELS_DIR", str(tmp_path))  # an empty model cache
    from vizcore.model.catalog import BASE_MODEL, BUILTIN_MODELS

    app = new_app(model=BASE_MODEL).run()  # a link chooses it (AppTest drops the sidebar after the first run)
    assert not app.exception and app.selectbox(key="shared.model_choice").value == BASE_MODEL
    listed = app.selectbox(key="shared.model_choice").options
    assert f"{BASE_MODEL} ({BUILTIN_MODELS[BASE_MODEL].size}), not installed" in listed
    hint = f"run `python -m vizcore install-model {BASE_MODEL}` (about 400 MB download)"
    assert any(hint in caption.value for caption in app.sidebar.caption)
    assert any(hint in error.value for error in app.error)  # the page says it too, and downloads nothing
