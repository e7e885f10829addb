"""The Generate page in AppTest with the offline causal MiniLM: it renders, each control reshapes the bars,
Next token adds a token, a bad prompt or an encoder gives a message, and the link round-trips.

Nothing here depends on what the model predicts (its weights may still be interim): only on the shapes
of the distributions the controls make."""

from __future__ import annotations

import numpy as np
import pytest

from tests.app.conftest import decode_plotly, plotly_traces
from vizcore.model.heads import default_head

PAGE = "pages/decoder.py"


def bars(at) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(model probabilities, after the controls, bar texts) of the next-token chart."""
    plain, shaped = plotly_traces(at, 0)[:2]
    return decode_plotly(plain["x"]).astype(float), decode_plotly(shaped["x"]).astype(float), list(shaped["text"])


def no_exception(at) -> None:
    assert not at.exception, [e.value for e in at.exception]


def link(at) -> dict[str, str]:
    """The address bar's parameters after the run (AppTest keeps each as a list of values)."""
    return {k: v[-1] if isinstance(v, list) else v for k, v in at.query_params.items()}


def tokens_line(at) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("**Tokens ("))


@pytest.fixture(scope="module")
def page():
    from streamlit.testing.v1 import AppTest

    from tests.app.conftest import APP, TIMEOUT

    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.switch_page(PAGE)
    return at.run()


def test_the_default_view_and_each_control_reshape_the_bars(page):
    at = page
    no_exception(at)
    assert "`she` `opened` `the`" in tokens_line(at) and "(0 generated)" in tokens_line(at)
    at.slider(key="generate.temperature").set_value(1.0)
    at.slider(key="generate.top_p").set_value(1.0).run()
    plain, shaped, _ = bars(at)
    np.testing.assert_allclose(shaped, plain, rtol=1e-6)  # temperature 1, nothing cut: the model's own
    assert len(at.get("plotly_chart")) == 5  # bars, attention, causal mask, lens, lens curve

    at.slider(key="generate.temperature").set_value(1.5).run()
    no_exception(at)
    hot_plain, hot, _ = bars(at)
    np.testing.assert_allclose(hot_plain, plain)
    np.testing.assert_allclose(np.log(hot[0] / hot), np.log(plain[0] / plain) / 1.5, rtol=1e-4)  # flatter

    at.slider(key="generate.temperature").set_value(1.0)
    at.slider(key="generate.top_k").set_value(5).run()
    _, cut, texts = bars(at)
    assert (cut > 0).sum() == 5 and texts[5:] == ["cut"] * (len(texts) - 5)
    assert cut[:5].sum() == pytest.approx(1.0) and cut[0] > plain[0]

    at.slider(key="generate.top_k").set_value(0)
    at.slider(key="generate.top_p").set_value(0.05).run()  # low enough that the cut falls among the bars
    _, nucleus, _ = bars(at)
    kept = int((nucleus > 0).sum())
    assert 1 <= kept < len(nucleus)  # the nucleus: the fewest top tokens whose probabilities reach p
    assert plain[:kept].sum() >= 0.05 - 1e-6 and (kept == 1 or plain[:kept - 1].sum() < 0.05)
    assert nucleus[:kept].sum() == pytest.approx(1.0)

    at.radio(key="generate.mode").set_value("greedy").run()
    _, greedy, _ = bars(at)
    assert greedy.tolist() == [1.0] + [0.0] * (len(greedy) - 1)
    assert link(at)["mode"] == "greedy"


def bar_tokens(at) -> list[str]:
    return [row[0] for row in plotly_traces(at, 0)[0]["customdata"]]


def test_the_defaults_sample_whole_words_with_a_tempered_nucleus(new_app):
    from ui.decoder.page import DEFAULTS

    at = new_app(PAGE).run()
    no_exception(at)
    assert at.radio(key="generate.mode").value == "sample" and at.toggle(key="generate.whole_words").value
    assert at.slider(key="generate.temperature").value == DEFAULTS["temperature"] < 1
    plain, shaped, _ = bars(at)
    kept = shaped > 0
    assert 0 < kept.sum() and shaped[0] > plain[0]  # sharpened and cut: the top token gains
    assert not any(token.startswith("##") for token in bar_tokens(at))  # no word piece is even offered
    explained = " ".join(e.label for e in at.expander)
    assert "Word pieces" in explained and any("[unused0]" in m.value for m in at.markdown)


def test_whole_words_only_takes_the_word_pieces_out_of_the_bars(new_app):
    at = new_app(PAGE, prompt="She opened the envel", mode="greedy", words="all").run()
    no_exception(at)
    pieces = [i for i, token in enumerate(bar_tokens(at)) if token.startswith("##")]
    plain, _, _ = bars(at)
    assert pieces and plain[pieces].sum() > 0  # the model would continue the word
    at.toggle(key="generate.whole_words").set_value(True).run()
    no_exception(at)
    assert not any(token.startswith("##") for token in bar_tokens(at))
    assert link(at)["words"] == "whole"


def shown(widget):
    """What a browser shows for a widget it has just drawn again: the value the server sends with it, else
    the widget's default (a run that stopped before the widget made the browser drop it, and its value)."""
    proto = widget.proto
    value = proto.value if proto.set_value else proto.default
    return value[0] if hasattr(value, "__len__") else value


def test_n_and_the_controls_keep_their_values_through_an_error(new_app):
    at = new_app(PAGE).run()
    at.number_input(key="generate.chunk").set_value(7)
    at.slider(key="generate.temperature").set_value(1.3).run()
    at.text_input(key="generate.prompt").set_value("   ").run()  # the page stops before N
    assert any("empty" in e.value for e in at.error) and "generate.chunk" not in [w.key for w in at.number_input]
    at.text_input(key="generate.prompt").set_value("She opened the").run()
    no_exception(at)
    assert shown(at.number_input(key="generate.chunk")) == 7
    at.selectbox(key="generate.model_choice").set_value("Other: hub id or local folder…").run()
    at.text_input(key="generate.model_other").set_value("/no/such/folder").run()  # stops before every control
    assert at.error and not at.slider
    at.selectbox(key="generate.model_choice").set_value("minilm-causal-tuned").run()
    no_exception(at)
    assert shown(at.number_input(key="generate.chunk")) == 7 and shown(at.slider(key="generate.temperature")) == 1.3
    assert at.button(key="generate.many").label == "Generate 7"


def test_a_control_the_mode_hides_keeps_its_value(new_app):
    at = new_app(PAGE).run()
    at.number_input(key="generate.seed").set_value(42).run()
    at.radio(key="generate.mode").set_value("beam").run()  # the seed box is not drawn
    at.radio(key="generate.mode").set_value("sample").run()
    no_exception(at)
    assert shown(at.number_input(key="generate.seed")) == 42 and link(at)["seed"] == "42"


def test_next_token_adds_a_token_and_reset_goes_back(page):
    at = page
    at.radio(key="generate.mode").set_value("greedy").run()
    first_bar = plotly_traces(at, 0)[0]["customdata"][0][0]  # the model's most probable next token
    at.button(key="generate.next").click().run()
    no_exception(at)
    assert "(1 generated)" in tokens_line(at)
    assert tokens_line(at).endswith(f":orange-background[`{first_bar.strip()}`]")  # greedy took the top bar
    at.button(key="generate.many").click().run()  # N = 5
    ended = "ended" in " ".join(i.value for i in at.info)
    assert "(6 generated)" in tokens_line(at) or (ended and "(1 generated)" not in tokens_line(at))
    at.button(key="generate.reset").click().run()
    assert "(0 generated)" in tokens_line(at)


def test_beam_mode_shows_the_beams(page):
    at = page
    at.radio(key="generate.mode").set_value("beam").run()
    at.button(key="generate.next").click().run()
    at.button(key="generate.next").click().run()
    no_exception(at)
    table = at.dataframe[0].value
    assert set(table["step"]) == {1, 2} and (table["status"] == "running").sum() == 6
    assert "(2 generated)" in tokens_line(at)


def test_a_bad_prompt_gives_a_message_not_an_exception(page):
    at = page
    at.text_input(key="generate.prompt").set_value("   ").run()
    no_exception(at)
    assert any("empty" in e.value for e in at.error)


def test_an_encoder_is_refused_with_the_loaders_reason(new_app):
    at = new_app(PAGE, lm="all-MiniLM-L6-v2").run()
    no_exception(at)
    assert any("is an encoder" in e.value for e in at.error)


def test_the_link_sets_the_page_and_is_written_back(new_app):
    params = {"prompt": "I am going to the", "lm": "minilm-causal-tuned", "mode": "sample", "temperature": "0.7",
              "top_k": "5", "top_p": "0.9", "words": "all", "seed": "3", "steps": "2", "layer": "2", "head": "3"}
    at = new_app(PAGE, **params).run()
    no_exception(at)
    assert at.number_input(key="generate.layer").value == 2 and at.number_input(key="generate.head").value == 3
    assert at.slider(key="generate.top_k").value == 5 and at.number_input(key="generate.seed").value == 3
    assert at.toggle(key="generate.whole_words").value is False
    assert "(2 generated)" in tokens_line(at) and "`going`" in tokens_line(at)
    assert {k: link(at)[k] for k in params} == params
    bad = new_app(PAGE, mode="jump", top_p="7", words="some").run()
    assert any("mode=" in w.value for w in bad.warning) and any("top_p=" in w.value for w in bad.warning)
    assert any("words=" in w.value for w in bad.warning)


def test_a_layer_or_head_the_model_lacks_is_reported_not_silently_changed(new_app):
    at = new_app(PAGE, prompt="She opened the", layer="9", head="20").run()
    no_exception(at)
    warnings = " ".join(w.value for w in at.warning)
    assert "layer='9' was not used: it must be a whole number from 1 to 6 here." in warnings
    assert "head='20' was not used: it must be a whole number from 1 to 12 here." in warnings
    layer, head = default_head(6, 12)  # the shipped causal LM's shape: the house default, not the nearest
    assert (at.number_input(key="generate.layer").value, at.number_input(key="generate.head").value) == (
        layer + 1, head + 1)


def test_a_prompt_too_long_for_the_link_leaves_it_and_its_steps_out(new_app):
    at = new_app(PAGE, prompt="She opened the", steps="1", mode="greedy").run()
    prompt = "international " * 150  # 2,100 characters (150 tokens): over the link's limit, under the model's
    widget = next(w for w in [*at.text_input, *at.text_area] if w.value == "She opened the")
    widget.set_value(prompt).run()
    no_exception(at)
    # (AppTest keeps query parameters a run removes, so the page's own note is what is checked here)
    assert any("too long for the page's link" in c.value for c in at.caption)
    assert link(at).get("prompt") != prompt and link(at)["mode"] == "greedy"
