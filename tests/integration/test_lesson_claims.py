"""The lessons' claims about the numbers hold for the model on screen (issue 47 B): the "Many heads" lesson's [CLS] and
[SEP] steps say what each built-in encoder does on the lesson's sentence, computed from its attention by hand here,
with the special token named as that model has it ([SEP] for BERT's vocabulary, </s> for MPNet's)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from vizcore.lessons.cli import LocalSource
from vizcore.lessons.kinds import KINDS
from vizcore.lessons.lesson import load_lessons
from vizcore.model.catalog import BASE_MODEL, BUILTIN_MODELS, DEFAULT_MODEL, MLM_MODEL

MODELS = [DEFAULT_MODEL, MLM_MODEL] + ([BASE_MODEL] if BUILTIN_MODELS[BASE_MODEL].installed() else [])


@pytest.fixture(scope="module", params=MODELS)
def source(request):
    return LocalSource(request.param, "cpu")


@pytest.mark.parametrize("stat", ["sep", "cls"])
def test_the_special_token_steps_say_what_this_model_does(source, stat):
    (lesson,) = [each for each in load_lessons() if each.id == "heads"]
    (step,) = [s for s in lesson.steps if s.params.get("stat") == stat]
    view = KINDS[step.kind].build(source, lesson.sentence, step.params)
    run = source.run(lesson.sentence)
    tokenizer = source.model().tokenizer
    token = tokenizer.sep_token if stat == "sep" else tokenizer.cls_token
    position = len(run.tokens) - 1 if stat == "sep" else 0
    assert run.tokens[position] == token
    mass = run.attention[..., position].astype(np.float64).mean(-1)  # [layer, head]: mean over queries, by hand
    most, top = int((mass > 0.5).sum()), float(mass.max())
    layer, head = np.unravel_index(np.argmax(mass), mass.shape)
    assert f"In this model ({run.model}), on this sentence" in view.caption
    assert f"on {token}**" in view.caption and f"layer {layer + 1}, head {head + 1}" in view.caption
    assert f"{top:.0%}" in view.caption
    if most:
        assert f"{most} of {mass.size} heads put most of their weight" in view.caption
    else:
        assert "no head puts most of its weight" in view.caption
    other = "[SEP]" if token != "[SEP]" else "</s>"
    assert other not in view.caption  # named as this model has it


def test_no_claim_of_the_heads_lesson_states_a_number_about_the_model_without_saying_whose():
    """The lesson's own text about [SEP] and [CLS] is the paper's finding about BERT-base; the model's is computed."""
    (lesson,) = [each for each in load_lessons() if each.id == "heads"]
    for step in lesson.steps:
        if re.search(r"\[(SEP|CLS)\]", step.claim) and "weight" in step.claim:
            assert "Clark et al." in step.claim and "BERT" in step.claim, step.claim
