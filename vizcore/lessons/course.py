"""Moving through the course: a presenter's keys (issue 34 B) as pure functions of the lessons' lengths.

``move(course, lesson, step, action)``: ``course`` maps each lesson's id to its number of steps, in course order;
steps are 1-based as in links. ``next`` from a lesson's last step opens the next lesson's first step and
``previous`` from a first step the previous lesson's last, so a clicker's two buttons walk the whole course; at the
course's two ends nothing moves. ``first`` and ``last`` stay in the lesson (Home and End).

``step_link(lesson, step, text)``: the link that reopens one step on one sentence (issue 34 D), as the page shows
it and a handout prints it.
"""

from __future__ import annotations

from typing import Mapping
from urllib.parse import quote, urlencode

from vizcore.lessons.answers import Answer
from vizcore.lessons.lesson import Step

ACTIONS = ("next", "previous", "first", "last")
PATH = "lessons"  # the page's path in the app (pages/lessons.py)


def move(course: Mapping[str, int], lesson: str, step: int, action: str) -> tuple[str, int]:
    """The (lesson, step) that ``action`` opens from ``lesson`` at ``step``; a ValueError names a bad argument."""
    if action not in ACTIONS:
        raise ValueError(f"unknown action {action!r}; one of {', '.join(ACTIONS)}.")
    if lesson not in course:
        raise ValueError(f"unknown lesson {lesson!r}; one of {', '.join(course)}.")
    total = course[lesson]
    if not 1 <= step <= total:
        raise ValueError(f"lesson {lesson!r} has steps 1 to {total}, not {step}.")
    ids = list(course)
    at = ids.index(lesson)
    if action == "first":
        return lesson, 1
    if action == "last":
        return lesson, total
    if action == "next":
        if step < total:
            return lesson, step + 1
        return (ids[at + 1], 1) if at + 1 < len(ids) else (lesson, step)
    if step > 1:
        return lesson, step - 1
    return (ids[at - 1], course[ids[at - 1]]) if at > 0 else (lesson, step)


def speaker_notes(step: Step, answer: Answer | None) -> list[str]:
    """A step's speaker notes as paragraphs: the file's ``notes`` when it has them, else the claim; then what the
    class is asked to do, and the question with its answer computed from the model (``answer``, None when the
    step has no question or its view could not be computed)."""
    notes = [step.notes or step.claim, f"Task: {step.task}"]
    if step.question is not None and answer is not None:
        notes.append(f"Question: {step.question.text} Answer: {answer.right} ({answer.reason}).")
    return notes


def step_link(lesson: str, step: int, text: str, base: str = "", model: str | None = None) -> str:
    """``{base}/lessons?lesson=attention&step=3&text=...`` (``step`` 1-based; ``model`` only when it is not the
    default one). ``base``: the app's address (``http://localhost:8501``); empty, a link from the app's root."""
    from vizcore.model.catalog import DEFAULT_MODEL

    params: dict[str, object] = {"lesson": lesson, "step": step, "text": text}
    if model and model != DEFAULT_MODEL:
        params["model"] = model
    return f"{base.rstrip('/')}/{PATH}?{urlencode(params, quote_via=quote, safe='')}"
