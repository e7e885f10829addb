"""The address bar reproduces every page's view: each page takes its parameters from a link and writes
the sentence, the model and its own choices back (ui/url_state.py)."""

import pytest

from tests.app.conftest import set_shared
from vizcore.model.heads import default_head


def param(at, name):
    value = at.query_params.get(name)
    return value[0] if isinstance(value, list) else value


# page, the link's page parameters, (widget kind or "session", key, expected value) after opening it
PAGES = [
    ("pages/home.py", {"layer": "2", "head": "5"}, [("session", "shared.layer", 2), ("session", "shared.head", 5)]),
    ("pages/inside.py", {"layer": "4", "head": "7"},
     [("number_input", "shared.layer", 4), ("number_input", "shared.head", 7)]),
    ("pages/positional.py", {"length": "32", "d_model": "16"},
     [("number_input", "positional.length", 32), ("number_input", "positional.d_model", 16)]),
]


@pytest.mark.parametrize(("page", "params", "widgets"), PAGES, ids=lambda v: v if isinstance(v, str) else "")
def test_a_link_opens_the_view_and_the_page_writes_it_back(new_app, page, params, widgets):
    link = {"text": "Birds sing at dawn.", **params}
    at = new_app(**link).run()  # app.py first, on Home: it reads the shared text (see test_attention)
    if page != "pages/home.py":
        at.query_params.clear()
        at.query_params.update(link)
        at.switch_page(page).run()
    assert not at.exception and not at.error
    for kind, key, expected in widgets:
        shown = at.session_state[key] if kind == "session" else getattr(at, kind)(key=key).value
        assert shown == expected
    for name, value in params.items():
        assert param(at, name) == value
    assert param(at, "text") == "Birds sing at dawn." and param(at, "model") == "all-MiniLM-L6-v2"


def test_a_bad_value_in_a_link_is_reported_and_the_page_still_works(new_app):
    at = new_app(layer="99", head="x").run()
    assert not at.exception and not at.error
    messages = " ".join(w.value for w in at.warning)
    assert "layer='99' was not used: it must be a whole number from 1 to 6 here." in messages
    assert "head='x' was not used" in messages
    layer, head = default_head(6, 12)  # all-MiniLM-L6-v2: 6 layers x 12 heads
    assert (at.session_state["shared.layer"], at.session_state["shared.head"]) == (layer + 1, head + 1)
    assert param(at, "layer") is None and param(at, "head") is None  # left out of the rewritten link


def test_the_layer_and_head_carry_across_pages_from_one_default(new_app):
    at = new_app().run()
    layer, head = default_head(6, 12)
    assert (at.session_state["shared.layer"], at.session_state["shared.head"]) == (layer + 1, head + 1)
    at.switch_page("pages/inside.py").run()
    assert at.number_input(key="shared.layer").value == layer + 1
    at.number_input(key="shared.layer").set_value(5)
    at.number_input(key="shared.head").set_value(9).run()
    for page in ("pages/attention.py", "pages/home.py"):
        at.switch_page(page).run()
        assert (at.session_state["shared.layer"], at.session_state["shared.head"]) == (5, 9), page
        assert (param(at, "layer"), param(at, "head")) == ("5", "9"), page


def test_changing_the_sentence_rewrites_the_link_on_every_page(new_app):
    for page in ("pages/home.py", "pages/positional.py", "pages/finetune.py"):
        at = new_app().run().switch_page(page).run()
        set_shared(at, text="A new sentence for the link.")
        assert not at.exception
        assert param(at, "text") == "A new sentence for the link.", page


def test_fill_mask_writes_its_model_and_sentence(new_app):
    at = new_app().run()
    at.query_params.update({"masked": "The cat sat on the [MASK]."})
    at.switch_page("pages/mlm.py").run()
    assert not at.exception and not at.error
    assert param(at, "masked") == "The cat sat on the [MASK]." and param(at, "mlm") == "minilm-mlm-tuned"


def test_the_projector_setting_comes_from_the_link_reaches_every_chart_and_stays_in_the_link(new_app):
    import json

    from tests.app.conftest import renderer_payload

    at = new_app(present="1").run()
    assert not at.exception and at.session_state["shared.present"] is True
    assert renderer_payload(at)["font"] == 20  # the attention view's labels
    assert any("font-size: 24px" in html.proto.body for html in at.get("html"))
    assert param(at, "present") == "1"
    at.switch_page("pages/positional.py").run()
    layouts = [json.loads(chart.proto.spec)["layout"] for chart in at.get("plotly_chart")]
    assert layouts and all(layout["font"]["size"] == 24 for layout in layouts)
    assert param(at, "present") == "1"
    at.session_state["shared.present"] = False  # the sidebar's toggle, off
    at.run()
    layouts = [json.loads(chart.proto.spec)["layout"] for chart in at.get("plotly_chart")]
    assert all(layout["font"]["size"] == 16 for layout in layouts) and param(at, "present") is None


def test_a_projector_value_that_is_not_1_or_0_is_reported_and_left_out(new_app):
    at = new_app(present="yes").run()
    assert not at.exception
    assert "present='yes' was not used: it is 1 (the projector setting) or 0." in " ".join(w.value for w in at.warning)
    assert at.session_state["shared.present"] is False and param(at, "present") is None
