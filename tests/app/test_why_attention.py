"""The Why? page's attention attribution part in AppTest: the heads' map, one head's edges and the tree as the
computation gives them, the warning when a layer's completeness gap is over 1 %, the link's threshold and
steps, a word that is not one token, and the session's classifier. (Four steps keep it cheap; the
completeness at the default steps is checked in tests/integration/test_why_cli.py.)"""

from __future__ import annotations

import copy
import json
from types import SimpleNamespace

import numpy as np
import pytest

from tests.app.conftest import decode_plotly
from vizcore.model.catalog import MLM_MODEL

FRANCE = "The capital of France is [MASK]."


def chart(at, key: str) -> dict:
    element = next(e for e in at.get("plotly_chart") if key in e.proto.id)
    return json.loads(element.proto.spec)


def test_the_part_shows_what_the_computation_gives_and_follows_the_link(new_app):
    from ui.state import get_model
    from vizcore.why.attention_attribution import attention_attribution

    at = new_app("pages/why.py", part="attention", threshold="100", attention_steps="4")
    at.session_state["shared.text"] = FRANCE  # before the first run: one computation, not two
    at.run()
    assert not at.exception and not at.error
    expected = attention_attribution(get_model(MLM_MODEL, "auto", "mlm"), FRANCE, steps=4)
    assert any(f"F = P({expected.answer}) at the [MASK] (token 6)" in m.value for m in at.markdown)
    heads = decode_plotly(chart(at, "why.attention.heads")["data"][0]["z"])
    # the map's cell (layer, head) is that head's largest attribution over every query -> key edge
    np.testing.assert_allclose(heads, expected.attributions.max(axis=(2, 3)), rtol=1e-5, atol=1e-9)
    layer, head, _ = expected.ranked_heads()[0]  # the strongest head is shown first
    assert at.selectbox(key="why.attention.head").value == f"{layer + 1}.{head + 1}"
    edges = decode_plotly(chart(at, "why.attention.head_map")["data"][0]["z"])
    np.testing.assert_allclose(edges, expected.attributions[layer, head], rtol=1e-5, atol=1e-9)
    assert np.nanmax(expected.gaps) > 0.01  # four steps are too few here: the page says so
    assert at.warning and "Raise the steps" in at.warning[0].value
    assert any(f"largest gap {np.nanmax(expected.gaps):.2%} at 4 steps" in e.label for e in at.expander)
    # threshold=100 %: one edge per layer at most (each layer's largest, when its query is in the tree)
    tree = [t for t in chart(at, "why.attention.tree")["data"] if t.get("mode") == "lines"]
    assert len(tree) == len(expected.tree(1.0)) <= 6
    at.slider(key="why.attention.threshold").set_value(40).run()
    tree = [t for t in chart(at, "why.attention.tree")["data"] if t.get("mode") == "lines"]
    assert len(tree) == len(expected.tree(0.4)) and at.query_params["threshold"] in ("40", ["40"])
    at.text_input(key="why.attention.answer").set_value("Paris Texas").run()
    assert not at.exception and at.error and "not one token" in at.error[0].value


@pytest.mark.parametrize("steps", ["0"])
def test_a_bad_link_is_reported_not_raised(new_app, steps):
    at = new_app("pages/why.py", part="attention", attention_steps=steps).run()
    assert not at.exception
    assert any("attention_steps" in w.value for w in at.warning)


def test_the_session_s_classifier_can_be_explained_instead(new_app):
    from ui.state import get_model
    from vizcore.finetune.classify import SENTENCE, SequenceClassifier, predict_proba
    from vizcore.model.catalog import DEFAULT_MODEL

    base = get_model(DEFAULT_MODEL, "auto", "base")
    classifier = SequenceClassifier(copy.deepcopy(base.model), num_labels=2).eval()
    result = SimpleNamespace(classifier=classifier, label_names=("negative", "positive"), tokenizer=base.tokenizer,
                             config=SimpleNamespace(max_length=64), model_name=base.name)
    at = new_app("pages/why.py", part="attention", attention_steps="4")
    at.session_state["finetune.job"] = SimpleNamespace(finished=True, result=result, data=None, loaded=base,
                                                       task=SENTENCE)
    at.session_state["why.attention.explain"] = "class"
    at.session_state["shared.text"] = FRANCE  # typed with [MASK]: the classifier reads it as it is
    at.run()
    assert not at.exception and not at.error
    probs = predict_proba(classifier, base.tokenizer, [FRANCE], 64)[0]
    name = result.label_names[int(probs.argmax())]
    assert any(f"F = P({name}) for the unmasked sentence = {probs.max():.4f}" in m.value for m in at.markdown)
    assert any("From [CLS] at the top" in c.value or "every token the classifier pools" in c.value
               for c in at.caption)
