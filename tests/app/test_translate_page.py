"""The Translate page in AppTest: the shipped date translator's answer, each control (examples, random date,
beam width, step, layer and head), the outside-training warning, the link, a training job started, stopped
and used, hub models (a tiny T5 in a folder; an unknown id offline gives a message).

Expected values come from an independent call of ``vizcore.seq2seq.translator.translate`` on the same text,
not from the page."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.app.conftest import decode_plotly
from vizcore.seq2seq.dates import EXAMPLES, random_text
from vizcore.seq2seq.translator import translate

PAGE = "pages/seq2seq.py"
FIRST = EXAMPLES[0]  # "the twenty first of march nineteen ninety nine"


def no_exception(at) -> None:
    assert not at.exception, [e.value for e in at.exception]


def link(at) -> dict[str, str]:
    return {k: v[-1] if isinstance(v, list) else v for k, v in at.query_params.items()}


def output_line(at) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("## Output:"))


def chart(at, key: str) -> dict:
    """The plotly chart drawn with widget key ``key`` (e.g. "translate.cross"), as its JSON spec."""
    for element in at.get("plotly_chart"):
        if element.proto.id.endswith(f"-{key}"):
            return json.loads(element.proto.spec)
    raise AssertionError(f"no chart with key {key!r}: {[e.proto.id for e in at.get('plotly_chart')]}")


def heat(at, key: str) -> np.ndarray:
    return decode_plotly(chart(at, key)["data"][0]["z"]).astype(float)


@pytest.fixture(scope="module")
def page():
    from streamlit.testing.v1 import AppTest

    from tests.app.conftest import APP, TIMEOUT

    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.switch_page(PAGE)
    return at.run()


def test_the_first_example_is_translated_right_with_every_view(page):
    at = page
    no_exception(at)
    assert output_line(at) == "## Output: `1999-03-21`"
    assert at.success[0].value == "Right: the grammar reads this date as 1999-03-21."
    expected = translate(FIRST)
    np.testing.assert_allclose(heat(at, "translate.encoder"), expected.run.encoder[0, 0], atol=1e-6)
    np.testing.assert_allclose(heat(at, "translate.cross"), expected.run.cross[0, 0], atol=1e-6)
    decoder = heat(at, "translate.decoder")
    assert np.isnan(decoder[np.triu_indices(10, k=1)]).all()  # the mask: later outputs are not drawn as weights
    np.testing.assert_allclose(np.tril(decoder), expected.run.decoder[0, 0], atol=1e-6)
    gold = chart(at, "translate.cross")["data"][1]
    assert gold["name"] == "gold alignment" and len(gold["x"]) == int(expected.run.gold.sum())
    assert any("Layer 1, head 1: **7 of 8**" in m.value for m in at.markdown)  # measured on this input
    assert chart(at, "translate.heldout")["layout"]["title"]["text"].startswith("1,000 held-out dates")
    assert [b.proto.label for b in at.get("download_button")] == ["Download this run (JSON)"]
    assert {k: link(at)[k] for k in ("source", "translator", "beam", "step", "layer", "enc_layer", "head")} == {
        "source": FIRST, "translator": "date-translator", "beam": "1", "step": "11", "layer": "1",
        "enc_layer": "1", "head": "1"}


def test_the_step_buttons_and_slider_show_that_steps_distribution(page):
    at = page
    at.button(key="translate.previous").click().run()
    no_exception(at)
    assert at.slider(key="translate.step").value == 10 and link(at)["step"] == "10"
    at.slider(key="translate.step").set_value(3).run()
    step = translate(FIRST).decoding.steps[2]
    assert any(m.value.startswith("**Step 3 of 11.** The decoder reads `<s>` `1` `9` and writes **`9`**")
               for m in at.markdown)
    bars = chart(at, "translate.step_bars")["data"][0]
    shown = decode_plotly(bars["x"]).astype(float)
    np.testing.assert_allclose(shown, np.sort(step.distribution)[::-1][:10], rtol=1e-6)
    assert bars["marker"]["color"][0] == "#e69f00"  # the written token, the most probable: orange
    assert len(heat(at, "translate.step_cross")) == 3  # the cross-attention rows written so far
    at.button(key="translate.next").click().run()
    assert at.slider(key="translate.step").value == 4


def test_layer_and_head_change_the_figures_data(page):
    at = page
    expected = translate(FIRST).run
    at.number_input(key="translate.head").set_value(3).run()
    at.number_input(key="translate.enc_layer").set_value(2).run()
    no_exception(at)
    np.testing.assert_allclose(heat(at, "translate.cross"), expected.cross[0, 2], atol=1e-6)
    np.testing.assert_allclose(heat(at, "translate.encoder"), expected.encoder[1, 2], atol=1e-6)
    assert not np.allclose(expected.cross[0, 2], expected.cross[0, 0])  # so the check above could fail
    assert chart(at, "translate.cross")["layout"]["title"]["text"] == "Cross-attention · layer 1, head 3"
    assert (link(at)["head"], link(at)["enc_layer"]) == ("3", "2")
    at.radio(key="translate.arrangement").set_value("Side by side").run()  # one under another by default
    assert chart(at, "translate.cross")["layout"]["title"]["text"] == "Cross-attention<br>layer 1, head 3"


def test_examples_and_the_seeded_random_date(page):
    at = page
    at.selectbox(key="translate.example").set_value(EXAMPLES[2]).run()
    no_exception(at)
    assert at.text_input(key="translate.source").value == EXAMPLES[2]
    assert output_line(at) == "## Output: `1900-01-01`"
    at.number_input(key="translate.seed").set_value(7).run()
    at.button(key="translate.random").click().run()
    no_exception(at)
    text = random_text(7)
    assert at.text_input(key="translate.source").value == text and link(at)["source"] == text
    assert output_line(at) == f"## Output: `{translate(text).run.output}`"
    assert at.number_input(key="translate.seed").value == 8  # the next press draws another date


def test_beam_width_shows_the_beams_with_their_scores(page):
    at = page
    at.text_input(key="translate.source").set_value(EXAMPLES[1]).run()
    at.slider(key="translate.beam").set_value(3).run()
    no_exception(at)
    decoding = translate(EXAMPLES[1], 3).decoding
    assert at.slider(key="translate.step").value == len(decoding.steps) and link(at)["beam"] == "3"
    at.slider(key="translate.step").set_value(4).run()
    table = at.dataframe[0].value
    kept = decoding.steps[3].beams
    assert list(table["written"][:3]) == [" ".join(b.tokens) for b in kept]
    np.testing.assert_allclose(table["score"][:3], [b.score for b in kept], rtol=1e-6)
    assert output_line(at) == f"## Output: `{decoding.text}`"
    at.selectbox(key="translate.beam_read").set_value(1).run()  # the second beam's own distribution
    bars = chart(at, "translate.step_bars")["data"][0]
    second = decoding.steps[3].distributions[1]
    np.testing.assert_allclose(decode_plotly(bars["x"]).astype(float), np.sort(second)[::-1][:10], rtol=1e-6)
    at.slider(key="translate.beam").set_value(1).run()
    assert output_line(at) == f"## Output: `{translate(EXAMPLES[1]).run.output}`"


def test_an_impossible_date_and_unknown_words_are_outside_training(page):
    at = page
    at.text_input(key="translate.source").set_value("the thirty first of february two thousand").run()
    no_exception(at)
    warning = at.warning[0].value
    assert warning.startswith("**Outside what the model was trained on.** No such date: February has 29 days in "
                              "2000")
    assert f"It still answers, `{translate('the thirty first of february two thousand').run.output}`" in warning
    assert not at.success and not at.error
    at.text_input(key="translate.source").set_value(EXAMPLES[-1]).run()  # "... in the year two thousand"
    warning = at.warning[0].value
    assert "Not in the grammar: 'in' is not a word" in warning and "(read as <unk>): 'in', 'year'" in warning
    assert ":red-background[`in`]" in next(m.value for m in at.markdown if m.value.startswith("**The encoder"))
    assert any("No gold alignment: Not in the grammar" in i.value for i in at.info)


def test_an_empty_text_is_a_message(page):
    at = page
    at.text_input(key="translate.source").set_value("  ").run()
    no_exception(at)
    assert "The text is empty" in at.error[0].value


def test_the_link_sets_the_controls_and_bad_values_are_reported(new_app):
    params = {"source": EXAMPLES[4], "beam": "2", "step": "5", "enc_layer": "2", "head": "4"}
    at = new_app(PAGE, **params).run()
    no_exception(at)
    assert at.slider(key="translate.beam").value == 2 and at.slider(key="translate.step").value == 5
    assert at.number_input(key="translate.enc_layer").value == 2 and at.number_input(key="translate.head").value == 4
    assert output_line(at) == f"## Output: `{translate(EXAMPLES[4], 2).run.output}`"
    assert {k: link(at)[k] for k in params} == params
    bad = new_app(PAGE, beam="9", layer="3", step="40", translator="trained-here").run()
    no_exception(bad)
    warnings = " ".join(w.value for w in bad.warning)
    assert "beam=" in warnings and "translator=" in warnings
    assert "layer='3' was not used: it must be a whole number from 1 to 1 here." in warnings
    assert "step='40' was not used: it must be a whole number from 1 to 11 here." in warnings
    assert "layer" not in link(bad) and "step" not in link(bad)


def test_training_starts_stops_and_the_trained_model_can_be_used(new_app):
    at = new_app(PAGE).run()
    at.number_input(key="translate.train_steps").set_value(3000).run()
    at.button(key="translate.train").click().run()
    job = at.session_state["translate.job"]
    at.button(key="translate.stop").click().run()
    job.join(60)
    assert job.finished and job.status == "stopped"
    at.run()
    no_exception(at)
    assert any("(stopped)" in p.proto.text or "Stopped" in p.proto.text for p in at.get("progress")) or any(
        "Stopped" in w.value for w in at.warning)
    at.number_input(key="translate.train_steps").set_value(10).run()
    at.button(key="translate.train").click().run()
    job = at.session_state["translate.job"]
    job.join(120)
    at.run()
    no_exception(at)
    assert job.status == "done" and any("step 10/10" in p.proto.text for p in at.get("progress"))
    curves = chart(at, "translate.curves")["data"]
    assert list(curves[0]["x"]) == [s["step"] for s in job.snapshot().steps] == [1, 5, 10]
    assert chart(at, "translate.train_cross")["layout"]["title"]["text"].startswith("Step 10: cross-attention")
    at.button(key="translate.use_trained").click().run()
    no_exception(at)
    assert at.selectbox(key="translate.model_choice").value == "trained-here"
    assert output_line(at) == f"## Output: `{translate(FIRST, translator=_trained(job)).run.output}`"
    assert chart(at, "translate.heldout")["layout"]["title"]["text"] == "200 held-out dates (measured now)"


def _trained(job):
    from vizcore.seq2seq.translator import Translator

    return Translator(job.result.model)


def test_an_unknown_hub_id_offline_is_a_message_and_training_stays_usable(new_app, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # offline even where the tests have a network
    at = new_app(PAGE, translator="no-such-org/no-such-seq2seq").run()
    no_exception(at)
    assert at.selectbox(key="translate.model_choice").value.startswith("Other")
    assert "Could not load 'no-such-org/no-such-seq2seq'" in at.error[0].value
    assert at.button(key="translate.train")  # the training tab is still drawn
    assert at.slider(key="translate.beam_hub").disabled


def test_choosing_a_hub_model_offline_gives_its_example_text_and_a_message(new_app, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # offline even where the tests have a network
    at = new_app(PAGE).run()
    at.selectbox(key="translate.model_choice").set_value("t5-small").run()
    no_exception(at)
    assert at.text_input(key="translate.source").value.startswith("translate English to German:")
    assert "Could not load 't5-small'" in at.error[0].value and "HF_HUB_OFFLINE=1" in at.error[0].value
    at.selectbox(key="translate.model_choice").set_value("date-translator").run()
    assert at.text_input(key="translate.source").value == FIRST and output_line(at) == "## Output: `1999-03-21`"


def test_a_tiny_t5_in_a_folder_shows_its_three_attentions_and_steps(new_app, tmp_path):
    from tests.support.tiny_seq2seq import save_tiny_seq2seq
    from vizcore.seq2seq.hub import load_seq2seq
    from vizcore.seq2seq.hub import translate as hub_translate

    folder = str(save_tiny_seq2seq("t5", tmp_path / "t5"))
    text = "the cat sat on the mat"
    at = new_app(PAGE, translator=folder, source=text).run()
    no_exception(at)
    run = hub_translate(load_seq2seq(folder, "cpu"), text)
    assert any(m.value.startswith(f"**The decoder writes** ({len(run.output_tokens)} tokens)") for m in at.markdown)
    np.testing.assert_allclose(heat(at, "translate.cross"), run.cross[0, 0], atol=1e-5)
    np.testing.assert_allclose(heat(at, "translate.encoder"), run.encoder[0, 0], atol=1e-5)
    assert len(chart(at, "translate.step_bars")["data"][0]["y"]) == 10  # the step's ten most probable tokens
    assert any("no known alignment" in i.value for i in at.info)
    assert link(at)["translator"] == folder and "beam" not in link(at)


def test_the_download_is_the_translation_with_its_decoding_in_strict_json():
    from ui.seq2seq.page import View

    translation = translate(FIRST, 2)
    record = json.loads(json.dumps(View(translation.run, translation, None).to_dict(), allow_nan=False))
    assert record["output"] == "1999-03-21" and record["correct"] is True and record["beam"] == 2
    assert np.asarray(record["cross_attention"]).shape == (1, 4, 10, 8)
    assert len(record["decoding"]["steps"]) == len(translation.decoding.steps)
    assert record["decoding"]["hypotheses"][0]["text"] == "1999-03-21"
