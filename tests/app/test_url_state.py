"""The address bar reproduces every page's view: each page takes its parameters from a link and writes
the sentence, the model and its own choices back (ui/url_state.py)."""

import pytest

from tests.app.conftest import set_shared


def param(at, name):
    value = at.query_params.get(name)
    return value[0] if isinstance(value, list) else value


# page, the link's page parameters, (widget kind or "session", key, expected value) after opening it
PAGES = [
    ("pages/home.py", {"layer": "2", "head": "5"}, [("session", "home.layer", 2), ("session", "home.head", 5)]),
    ("pages/inside.py", {"layer": "4", "head": "7"},
     [("slider", "step_by_step.layer", 4), ("slider", "step_by_step.head", 7)]),
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
    assert "layer='99' was not used: layer must be a whole number from 1 to 6" in messages
    assert "head='x' was not used" in messages
    assert at.session_state["home.layer"] == 3 and param(at, "layer") == "3"


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
