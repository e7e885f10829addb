"""A lesson's parts as data: a step and its question, and the question's check against the step's view kind.

Shared by the lesson files (vizcore/lessons/lesson.py) and the quizzes (vizcore/lessons/quiz.py), which both check
questions the same way; neither imports the other's loading.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from vizcore.errors import VizError
from vizcore.lessons.answers import ANSWERS, REQUIRED
from vizcore.lessons.kinds import KINDS


@dataclass(frozen=True)
class Question:
    text: str
    answer: str  # a name in answers.ANSWERS
    params: Mapping[str, object]


@dataclass(frozen=True)
class Step:
    title: str
    claim: str
    task: str
    kind: str  # a name in kinds.KINDS
    params: Mapping[str, object]  # the kind's defaults, overridden by the file
    question: Question | None
    notes: str = ""  # the presenter's speaker notes; empty: the notes window shows the claim and the answer


def required_text(table: Mapping, name: str, where: str) -> str:
    """``table[name]``, a non-empty string (stripped), or a VizError naming the file and step (``where``)."""
    value = table.get(name)
    if not isinstance(value, str) or not value.strip():
        raise VizError(f"{where}: '{name}' must be a non-empty string.")
    return value.strip()


def check_question(table: object, kind: str, where: str) -> Question | None:
    """A question's table (text, answer and the answer's parameters) checked against the step's view kind."""
    if table is None:
        return None
    if not isinstance(table, dict):
        raise VizError(f"{where}: 'question' must be a table.")
    text, answer = required_text(table, "text", where), required_text(table, "answer", where)
    if answer not in ANSWERS:
        raise VizError(f"{where}: unknown answer function '{answer}'; one of {', '.join(ANSWERS)}.")
    params = {k: v for k, v in table.items() if k not in ("text", "answer")}
    missing = [name for name in REQUIRED[answer] if name not in params]
    if missing:
        raise VizError(f"{where}: the answer '{answer}' needs {', '.join(missing)}.")
    spec = KINDS[kind]
    if "series" in params and params["series"] not in spec.series:
        raise VizError(f"{where}: the kind '{kind}' has no series '{params['series']}'; it has "
                       f"{', '.join(spec.series) or 'none'}.")
    if "number" in params and params["number"] not in spec.numbers:
        raise VizError(f"{where}: the kind '{kind}' has no number '{params['number']}'; it has "
                       f"{', '.join(spec.numbers) or 'none'}.")
    if answer == "concept" and params["right"] not in params["choices"]:
        raise VizError(f"{where}: the right choice '{params['right']}' is not among the choices.")
    return Question(text=text, answer=answer, params=params)
