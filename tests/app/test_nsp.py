"""AppTest: the pre-training page's Next sentence prediction section, driven like a user would.

The built-in ``minilm-nsp-tuned`` runs on ``VIZCORE_NSP_WEIGHTS`` until the shipped file is committed;
the assertions compare what is shown with ``next_sentence`` itself, never with what the model should say.
"""

from __future__ import annotations

import json

import pytest

from tests.app.conftest import decode_plotly, set_shared
from ui.mlm.nsp import KEY_A, KEY_B
from ui.state import get_model
from vizcore.mlm.nsp import EXAMPLES, next_sentence
from vizcore.model.catalog import NSP_MODEL

PAGE = "pages/mlm.py"


def chart(at, key: str) -> dict | None:
    for element in at.get("plotly_chart"):
        if element.proto.id.endswith(key):
            return json.loads(element.proto.spec)
    return None


def shown_probability(at) -> float:
    return chart(at, "fill_mask.nsp_gauge")["data"][0]["value"] / 100


def expected(text: str, pair: str) -> float:
    return next_sentence(get_model(NSP_MODEL, "auto", "nsp"), text, pair).is_next


@pytest.fixture
def app(new_app):
    return new_app(PAGE).run()


def test_default_shows_the_first_examples_probability_and_the_examples_table(app):
    assert not app.exception and not app.error
    assert app.title[0].value == "Pre-training: masked words & next sentence"
    assert [h.value for h in app.header] == ["Masked words", "Next sentence prediction"]
    text, pair, _ = EXAMPLES[0]
    assert (app.text_input(key=KEY_A).value, app.text_input(key=KEY_B).value) == (text, pair)
    assert shown_probability(app) == pytest.approx(expected(text, pair), abs=1e-6)
    table = next(t.value for t in app.dataframe if "P(IsNext)" in t.value.columns)
    assert table["sentence B"].tolist() == [b for _, b, _ in EXAMPLES]
    assert any("MLM + NSP tuned here" in c.value for c in app.caption)
    assert chart(app, "fill_mask.nsp_share") is not None and chart(app, "fill_mask.nsp_bars") is not None
    assert "nsp_a" not in app.query_params  # the default pair needs no link parameter


def test_an_example_button_sets_the_pair_and_the_link(app):
    text, pair, _ = EXAMPLES[1]
    app.button(key="fill_mask.nsp_example1").click().run()
    assert not app.exception
    assert (app.text_input(key=KEY_A).value, app.text_input(key=KEY_B).value) == (text, pair)
    assert shown_probability(app) == pytest.approx(expected(text, pair), abs=1e-6)
    assert (app.query_params["nsp_a"], app.query_params["nsp_b"]) == (text, pair)


def test_a_missing_sentence_b_says_so_and_shows_no_gauge(app):
    app.text_input(key=KEY_B).set_value("   ").run()
    assert not app.exception
    assert any("second sentence (B)" in e.value for e in app.error)
    assert chart(app, "fill_mask.nsp_gauge") is None
    assert chart(app, "fill_mask.bars0") is not None  # the masked-words section is still there


def test_the_sidebar_pair_is_used_and_followed(app):
    a, b = "It was raining hard.", "She took her umbrella."
    set_shared(app, text=a, pair=b)
    assert (app.text_input(key=KEY_A).value, app.text_input(key=KEY_B).value) == (a, b)
    assert shown_probability(app) == pytest.approx(expected(a, b), abs=1e-6)
    assert any("sidebar's sentence pair" in c.value for c in app.caption)
    assert "nsp_a" not in app.query_params and app.query_params["pair"] == b


def test_a_link_sets_the_pair(new_app):
    a, b = "The river flooded the town.", "Bananas are yellow."
    at = new_app(PAGE, nsp_a=a, nsp_b=b).run()
    assert (at.text_input(key=KEY_A).value, at.text_input(key=KEY_B).value) == (a, b)
    assert shown_probability(at) == pytest.approx(expected(a, b), abs=1e-6)


def test_the_head_steppers_pick_the_cls_row_shown(app):
    app.number_input(key="fill_mask.nsp_layer").set_value(2)
    app.number_input(key="fill_mask.nsp_head").set_value(5).run()
    figure = chart(app, "fill_mask.nsp_bars")
    assert "layer 2, head 5" in figure["layout"]["title"]["text"]
    result = next_sentence(get_model(NSP_MODEL, "auto", "nsp"), *EXAMPLES[0][:2])
    shown = {}  # token (a category, in reading order) -> weight
    for trace in figure["data"]:
        shown.update(zip(decode_plotly(trace["x"]).tolist(), decode_plotly(trace["y"]).tolist()))
    order = figure["layout"]["xaxis"]["categoryarray"]
    assert [shown[token] for token in order] == pytest.approx(
        result.cls_attention[1, 4].tolist(), abs=1e-6)


def test_a_class_on_one_pair_shares_the_figures_and_the_projector_draws_a_copy(new_app, monkeypatch):
    """A class opens the section on the same pair: its figures are built once for the server (they were a sixth of
    the page's CPU), every student gets the same chart, and a projector's session re-lays a copy, not the shared one."""
    from ui.mlm import nsp

    built = []
    original = nsp.cls_share_heatmaps
    monkeypatch.setattr(nsp, "cls_share_heatmaps", lambda *args: built.append(1) or original(*args))
    pair = {"nsp_a": "Only this test reads this sentence.", "nsp_b": "And this one follows it."}
    first = new_app(PAGE, **pair).run()
    projector = new_app(PAGE, **pair)
    projector.session_state["shared.present"] = True  # the sidebar's projector setting (app.py draws the sidebar)
    projector.run()
    second = new_app(PAGE, **pair).run()
    assert not first.exception and not projector.exception and not second.exception
    assert len(built) == 1
    shared = chart(first, "fill_mask.nsp_share")
    assert chart(second, "fill_mask.nsp_share") == shared
    assert chart(second, "fill_mask.nsp_bars") == chart(first, "fill_mask.nsp_bars")
    assert chart(projector, "fill_mask.nsp_share")["layout"]["height"] > shared["layout"]["height"]
    assert shown_probability(second) == pytest.approx(expected(*pair.values()), abs=1e-6)
