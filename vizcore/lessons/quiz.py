"""The quizzes before and after a lesson (issue 50 A): the same concepts asked on different items, each right answer
computed from the model as the lessons' questions are. No streamlit here.

A lesson file's ``[quiz]`` table::

    [quiz]
    pre = { sentence = "The trophy didn't fit in the suitcase because it was too big." }
    post = { sentence = "The cat chased the ball because it was bored." }

    [[quiz.items]]
    step = 3                                   # the step that teaches it: its view kind and its question
    pre = { layer = 4, head = 2 }              # the view's parameters before the lesson (over the step's)
    post = { layer = 3, head = 7 }             # and after it: another head, another sentence, other numbers

    [[quiz.items]]
    step = 4
    question = { text = "...", answer = "concept", choices = [...], right = "...", why = "..." }  # its own question
    post = { text = "...", choices = [...], right = "...", why = "..." }   # a phase may reword it and its choices

A phase's table may set any parameter of the step's view kind, and the question's text, answer function and its
parameters (the quiz after a lesson on parameters may ask for the smallest part where the one before asked for the
largest).
An item's id (``step3``, or its own ``id``) is what the results store keeps. An item shows the view's first figure
and never its caption (captions often state the answer); ``figures = false`` asks without it (a question about an
idea, or one the chart would answer by itself), ``figures = [2]`` shows the view's second figure instead.
``suggests`` says what a wrong choice suggests (the class report shows it beside the most common wrong answer)::

    suggests = { "384" = "took the model's width d for one head's d_k" }

``asked(lesson, phase, build)`` turns a quiz into the questions a student sees: each view built by ``build(text,
kind, params)`` (the app: its cached views; the CLI and tests: the kinds on a model), each answer by the answer
function on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Protocol

from vizcore.errors import VizError
from vizcore.lessons.answers import ANSWERS, REQUIRED, Answer
from vizcore.lessons.kinds import KINDS
from vizcore.lessons.parts import Question, Step, check_question
from vizcore.lessons.view import View

PHASES = ("pre", "post")
PHASE_NAMES = {"pre": "before the lesson", "post": "after the lesson"}
MIN_ITEMS, MAX_ITEMS = 3, 8


@dataclass(frozen=True)
class QuizItem:
    id: str
    step: int  # 1-based: the step that teaches it (a student's missed question links there)
    question: Mapping[str, object] | None  # its own question (text, answer, parameters), else the step's
    phases: Mapping[str, Mapping[str, object]]  # "pre"/"post" -> overrides (view and question parameters)
    figures: tuple[int, ...] = (1,)  # the view's figures it shows (1-based): its first, by default; () none
    suggests: Mapping[str, str] = field(default_factory=dict)  # a wrong choice -> what choosing it suggests


@dataclass(frozen=True)
class Quiz:
    sentences: Mapping[str, str]  # "pre"/"post" -> the quiz's sentence in that phase
    items: tuple[QuizItem, ...]


class QuizLesson(Protocol):
    """What a quiz reads of its lesson (``vizcore.lessons.lesson.Lesson``, which holds the quiz: loading a lesson
    file loads its quiz, so this module does not import that one)."""

    id: str
    steps: tuple[Step, ...]
    path: Path
    quiz: Quiz | None


@dataclass(frozen=True)
class Asked:
    """One question as a phase asks it: its view, the figures of it shown, and its computed answer."""

    id: str
    step: int
    text: str
    kind: str
    sentence: str
    params: Mapping[str, object]
    view: View
    answer: Answer
    figures: tuple = ()  # the figures the student sees (without the view's caption, which often states the answer)
    context: str = ""  # what the question is about when it is not the quiz's sentence (a pair of sentences)


def _question_table(step: Step, item: Mapping, where: str) -> dict:
    own = item.get("question")
    if own is None:
        if step.question is None:
            raise VizError(f"{where}: step {item['step']} has no question; give the item a 'question' table.")
        return {"text": step.question.text, "answer": step.question.answer, **step.question.params}
    if not isinstance(own, dict) or not isinstance(own.get("text"), str) or own.get("answer") not in ANSWERS:
        raise VizError(f"{where}: 'question' must be a table with a text and an answer, one of {', '.join(ANSWERS)}.")
    return dict(own)


def _checked_question(table: Mapping, kind: str, where: str) -> Question:
    return check_question(dict(table), kind, where)


def _item(item: object, steps: tuple[Step, ...], seen: set[str], where: str) -> QuizItem:
    if not isinstance(item, dict) or not isinstance(item.get("step"), int) or not 1 <= item["step"] <= len(steps):
        raise VizError(f"{where}: an item needs 'step', a step number from 1 to {len(steps)}.")
    unknown = [name for name in item if name not in ("step", "id", "question", "figures", "suggests", *PHASES)]
    if unknown:
        raise VizError(f"{where}: an item has no {', '.join(unknown)}; it takes step, id, question, figures, "
                       "suggests, pre, post.")
    suggests = item.get("suggests", {})
    if not isinstance(suggests, dict) or not all(isinstance(v, str) and v.strip() for v in suggests.values()):
        raise VizError(f"{where}: 'suggests' must be a table of wrong choices and what choosing each suggests.")
    step = steps[item["step"] - 1]
    base = _question_table(step, item, where)
    spec = KINDS[step.kind]
    phases = {}
    for phase in PHASES:
        changes = item.get(phase, {})
        if not isinstance(changes, dict):
            raise VizError(f"{where}: '{phase}' must be a table.")
        answer = changes.get("answer", base["answer"])
        if answer not in ANSWERS:
            raise VizError(f"{where}: '{phase}' asks with the answer '{answer}'; one of {', '.join(ANSWERS)}.")
        allowed = {"text", "answer", *spec.params, *REQUIRED[answer]}
        wrong = [name for name in changes if name not in allowed]
        if wrong:
            raise VizError(f"{where}: '{phase}' cannot set {', '.join(wrong)}; it may set: "
                           f"{', '.join(sorted(allowed))}.")
        _checked_question({**base, **{k: v for k, v in changes.items() if k not in spec.params}}, step.kind,
                          f"{where} ({phase})")
        phases[phase] = dict(changes)
    item_id = str(item.get("id") or f"step{item['step']}")
    if item_id in seen:
        raise VizError(f"{where}: the id '{item_id}' is used twice; give the item its own 'id'.")
    seen.add(item_id)
    return QuizItem(id=item_id, step=item["step"], question=item.get("question"), phases=phases,
                    figures=_figures(item.get("figures", True), where),
                    suggests={str(k): v.strip() for k, v in suggests.items()})


def _figures(value: object, where: str) -> tuple[int, ...]:
    if value is True:
        return (1,)
    if value is False:
        return ()
    if isinstance(value, list) and value and all(isinstance(n, int) and not isinstance(n, bool) and n >= 1
                                                 for n in value):
        return tuple(value)
    raise VizError(f"{where}: 'figures' is true (the view's first figure), false (none) or a list of figure numbers "
                   "from 1.")


def load_quiz(table: object, steps: tuple[Step, ...], where: str) -> Quiz:
    """A lesson file's ``[quiz]``, checked against its steps (``where``: the file's name, for messages)."""
    if not isinstance(table, dict):
        raise VizError(f"{where}: 'quiz' must be a table.")
    sentences = {}
    for phase in PHASES:
        value = table.get(phase)
        if not isinstance(value, dict) or not isinstance(value.get("sentence"), str) or not value["sentence"].strip():
            raise VizError(f"{where}: the quiz needs '{phase} = {{ sentence = \"...\" }}', the sentence it asks about "
                           f"{PHASE_NAMES[phase]}.")
        sentences[phase] = value["sentence"].strip()
    if sentences["pre"] == sentences["post"]:
        raise VizError(f"{where}: the quiz's two sentences are the same; the quiz after the lesson asks on other "
                       "items.")
    items = table.get("items")
    if not isinstance(items, list) or not MIN_ITEMS <= len(items) <= MAX_ITEMS:
        count = len(items) if isinstance(items, list) else 0
        raise VizError(f"{where}: a quiz has {MIN_ITEMS} to {MAX_ITEMS} items ([[quiz.items]]); this one has {count}.")
    seen: set[str] = set()
    return Quiz(sentences=sentences,
                items=tuple(_item(item, steps, seen, f"{where}, quiz item {i}") for i, item in enumerate(items, 1)))


def item_question(lesson: QuizLesson, item: QuizItem, phase: str) -> tuple[str, str, dict, Question]:
    """What ``phase`` asks for ``item``: (sentence, view kind, view parameters, the question)."""
    step = lesson.steps[item.step - 1]
    changes = item.phases.get(phase, {})
    spec = KINDS[step.kind]
    params = {**step.params, **{k: v for k, v in changes.items() if k in spec.params}}
    base = _question_table(step, {"step": item.step, "question": item.question}, lesson.path.name)
    asked = {**base, **{k: v for k, v in changes.items() if k not in spec.params}}
    sentence = lesson.quiz.sentences[phase]
    return sentence, step.kind, params, _checked_question(asked, step.kind, lesson.path.name)


Build = Callable[[str, str, Mapping[str, object]], View]
# What a question of these kinds is about, said above it: a view's own input that is not the quiz's sentence.
CONTEXT: dict[str, Callable[[Mapping[str, object]], str]] = {
    "next_sentence": lambda params: f"Sentence A: “{params['first']}” Sentence B: “{params['second']}”",
}


def asked(lesson: QuizLesson, phase: str, build: Build) -> list[Asked]:
    """Every item of the lesson's quiz as ``phase`` asks it, with its view and its answer computed."""
    if phase not in PHASES:
        raise VizError(f"A quiz is taken 'pre' (before the lesson) or 'post' (after it); got {phase!r}.")
    if lesson.quiz is None:
        raise VizError(f"The lesson '{lesson.id}' has no quiz.")
    out = []
    for item in lesson.quiz.items:
        sentence, kind, params, question = item_question(lesson, item, phase)
        view = build(sentence, kind, params)
        answer = ANSWERS[question.answer](view, question.params)
        shown = tuple(view.figures[n - 1] for n in item.figures if n <= len(view.figures))
        context = CONTEXT[kind](params) if kind in CONTEXT else ""
        out.append(Asked(item.id, item.step, question.text, kind, sentence, params, view, answer, shown, context))
    return out


def score(asked_items: list[Asked], chosen: Mapping[str, str]) -> tuple[int, list[Asked]]:
    """How many of ``asked_items`` ``chosen`` (id -> choice) got right, and the ones missed (unanswered included)."""
    missed = [item for item in asked_items if not item.answer.verdict(chosen.get(item.id, ""))]
    return len(asked_items) - len(missed), missed
