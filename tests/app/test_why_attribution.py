"""The Why? page's attribution part in AppTest: every method and the completeness as computed by vizcore,
the answer and steps with the link, the picked word, and the session's classifier."""

from __future__ import annotations

import copy
import json
from types import SimpleNamespace

import numpy as np

from tests.app.conftest import decode_plotly, set_shared
from vizcore.model.catalog import MLM_MODEL
from vizcore.why.attribution import DEFAULT_STEPS, METHODS, answer_target, attribute

FRANCE = "The capital of France is [MASK]."


def attribution_part(new_app, **params):
    return new_app("pages/why.py", part="attribution", **params).run()


def chart(at, key: str) -> dict:
    element = next(e for e in at.get("plotly_chart") if e.proto.id.endswith(key) or key in e.proto.id)
    return json.loads(element.proto.spec)


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def shown_html(at) -> str:
    return "".join(e.proto.body for e in at.get("html"))


def param(at, name: str) -> str | None:
    value = at.query_params.get(name)
    return value[0] if isinstance(value, list) else value


def test_the_part_shows_every_method_and_the_completeness(new_app):
    from ui.state import get_model

    at = attribution_part(new_app)
    set_shared(at, text=FRANCE)
    assert not at.exception and not at.error
    expected = attribute(answer_target(get_model(MLM_MODEL, "auto", "mlm"), FRANCE), steps=DEFAULT_STEPS)
    ig = expected.integrated
    assert metrics(at) == {"Sum of the attributions": f"{ig.total:.5f}", "f(x) − f(baseline)": f"{ig.delta:.5f}",
                           "Gap": f"{ig.gap:.2%}", "Steps": str(DEFAULT_STEPS)}
    assert ig.gap < 0.01 and not at.warning
    assert any(f"f = P({expected.token}) at the [MASK] (token 6)" in m.value for m in at.markdown)
    assert any("Baseline: every ordinary token's word embedding replaced" in c.value for c in at.caption)
    html = shown_html(at)
    assert all(label in html for label in METHODS.values()) and "france" in html and "linear-gradient" in html
    bars = chart(at, "why.attribution.bars")["data"]
    assert len(bars) == 2 * len(METHODS)
    for number, method in enumerate(METHODS):
        raises, lowers = (np.asarray(decode_plotly(bars[2 * number + k]["y"]), dtype=float) for k in (0, 1))
        shown = np.where(np.isnan(raises), np.nan_to_num(lowers), raises)
        np.testing.assert_allclose(shown, expected.scores[method], atol=1e-6)
    cells = chart(at, "why.attribution.correlation")["data"][0]["text"]
    assert cells[0][2] == f"{expected.correlation[0, 2]:+.2f}" and cells[3][3] == "+1.00"
    table = at.dataframe[0].value
    assert list(table.columns) == ["token", *METHODS.values()] and len(table) == 9
    assert param(at, "part") == "attribution" and param(at, "steps") == str(DEFAULT_STEPS)


def test_an_answer_and_fewer_steps_change_the_result_and_the_link(new_app):
    at = attribution_part(new_app)
    set_shared(at, text=FRANCE)
    at.text_input(key="why.attribution.answer").set_value("paris").run()
    assert not at.exception and any("f = P(paris)" in m.value for m in at.markdown)
    assert param(at, "output") == "paris"
    at.slider(key="why.attribution.steps").set_value(8).run()
    assert metrics(at)["Steps"] == "8" and param(at, "steps") == "8"
    assert float(metrics(at)["Gap"].rstrip("%")) > 1 and "Raise the steps" in at.warning[0].value
    at.text_input(key="why.attribution.answer").set_value("unbelievably").run()
    assert "not one token" in at.error[0].value


def test_a_link_sets_the_answer_and_steps_and_a_bad_one_is_reported(new_app):
    at = attribution_part(new_app, output="paris", steps="100")
    assert at.text_input(key="why.attribution.answer").value == "paris" and metrics(at)["Steps"] == "100"
    at = attribution_part(new_app, steps="9999")
    assert any("steps=" in w.value and "whole number from 1 to 400" in w.value for w in at.warning)
    assert metrics(at)["Steps"] == str(DEFAULT_STEPS)


def test_the_models_own_answer_is_the_default_and_a_typed_word_replaces_it(new_app):
    from tests.app.test_why import TIRED, models_answer

    at = attribution_part(new_app)  # the sidebar's sentence has no mask: its last word is picked and masked
    assert not at.exception and at.selectbox(key="why.word").value == "tired"
    answer = models_answer(TIRED)
    assert at.text_input(key="why.attribution.answer").value == answer
    assert any(f"f = P({answer})" in m.value for m in at.markdown)
    at.text_input(key="why.attribution.answer").set_value("tired").run()
    assert any("f = P(tired)" in m.value for m in at.markdown)


def test_the_session_s_classifier_class_is_explained(new_app):
    from ui.state import get_model
    from vizcore.finetune.classify import SENTENCE, SequenceClassifier
    from vizcore.model.catalog import DEFAULT_MODEL

    base = get_model(DEFAULT_MODEL, "auto", "base")
    classifier = SequenceClassifier(copy.deepcopy(base.model), num_labels=2).eval()
    result = SimpleNamespace(classifier=classifier, tokenizer=base.tokenizer, label_names=("negative", "positive"),
                             config=SimpleNamespace(max_length=64), model_name=DEFAULT_MODEL)
    at = attribution_part(new_app)
    at.session_state["finetune.job"] = SimpleNamespace(finished=True, result=result, data=None, loaded=base,
                                                       task=SENTENCE)
    at.run()
    at.radio(key="why.attribution.explain").set_value("class").run()
    assert not at.exception and not at.error
    chosen = at.selectbox(key="why.attribution.class").value
    assert chosen in ("negative", "positive") and any(f"f = P({chosen}) for the unmasked sentence" in m.value
                                                      for m in at.markdown)
    assert float(metrics(at)["Gap"].rstrip("%")) < 1
    assert param(at, "explain") == "class" and param(at, "output") == chosen
    assert all(label in shown_html(at) for label in METHODS.values())
    assert "[MASK]" not in shown_html(at)  # the unmasked sentence
