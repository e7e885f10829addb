"""Lesson files: the format, loading and the checks, with errors that name the file and the step.

One TOML file per lesson in ``vizcore/lessons/data/`` (read with the stdlib ``tomllib``), in course order by
file name (``01-attention.toml`` ...)::

    id = "attention"                  # used in links: /lessons?lesson=attention&step=3
    title = "One query's attention"
    sentence = "The animal didn't cross the street because it was too tired."

    [[steps]]
    title = "Scores"
    claim = "..."                     # one short claim, at most MAX_CLAIM_WORDS words
    task = "..."                      # one thing to do
    notes = "..."                     # optional: the presenter's speaker notes (else the claim and the answer)
    view = { kind = "query_steps", layer = 3, head = 1, show = "scores" }   # a kind of vizcore.lessons.kinds
    [steps.question]                  # optional: predict, then reveal
    text = "Which key gets the largest q·k?"
    answer = "largest"                # a function of vizcore.lessons.answers, computed from the step's view
    series = "scores"                 # that function's parameters (answers.REQUIRED)

docs/LESSONS.md describes the format for authors.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import tomllib

from vizcore.errors import VizError
from vizcore.lessons.kinds import KINDS
from vizcore.lessons.parts import Step, check_question, required_text
from vizcore.lessons.quiz import Quiz, load_quiz

DATA = Path(__file__).parent / "data"
MIN_STEPS, MAX_STEPS = 4, 10
MAX_CLAIM_WORDS = 60
MAX_TASK_WORDS = 40


@dataclass(frozen=True)
class Lesson:
    id: str
    title: str
    sentence: str
    steps: tuple[Step, ...]
    path: Path
    quiz: Quiz | None = None  # the quizzes before and after the lesson (vizcore.lessons.quiz)


def _words(text: str, limit: int, name: str, where: str) -> None:
    count = len(text.split())
    if count > limit:
        raise VizError(f"{where}: the {name} has {count} words; at most {limit}.")


def _step(table: object, where: str) -> Step:
    if not isinstance(table, dict):
        raise VizError(f"{where}: a step must be a table.")
    claim, task = required_text(table, "claim", where), required_text(table, "task", where)
    _words(claim, MAX_CLAIM_WORDS, "claim", where)
    _words(task, MAX_TASK_WORDS, "task", where)
    view = table.get("view")
    if not isinstance(view, dict) or view.get("kind") not in KINDS:
        kind = view.get("kind") if isinstance(view, dict) else None
        raise VizError(f"{where}: 'view' needs a kind, one of {', '.join(KINDS)} (got {kind!r}).")
    kind = view["kind"]
    unknown = [name for name in view if name != "kind" and name not in KINDS[kind].params]
    if unknown:
        raise VizError(f"{where}: the kind '{kind}' has no parameter {', '.join(unknown)}; it takes "
                       f"{', '.join(KINDS[kind].params) or 'none'}.")
    params = {**KINDS[kind].params, **{k: v for k, v in view.items() if k != "kind"}}
    for name, options in KINDS[kind].choices.items():
        if params[name] not in options:
            raise VizError(f"{where}: the kind '{kind}' has no {name} '{params[name]}'; one of {', '.join(options)}.")
    notes = table.get("notes", "")
    if not isinstance(notes, str):
        raise VizError(f"{where}: 'notes' must be a string.")
    return Step(title=required_text(table, "title", where), claim=claim, task=task, kind=kind, params=params,
                question=check_question(table.get("question"), kind, where), notes=notes.strip())


def load_lesson(path: Path) -> Lesson:
    """One lesson file, checked; a VizError names the file (and the step) of any problem."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise VizError(f"{Path(path).name}: cannot read the lesson ({error}).") from error
    name = Path(path).name
    steps = data.get("steps")
    if not isinstance(steps, list) or not MIN_STEPS <= len(steps) <= MAX_STEPS:
        count = len(steps) if isinstance(steps, list) else 0
        raise VizError(f"{name}: a lesson has {MIN_STEPS} to {MAX_STEPS} steps ([[steps]]); this one has {count}.")
    lesson_id = required_text(data, "id", name)
    if not lesson_id.isidentifier() or not lesson_id.islower():
        raise VizError(f"{name}: the id '{lesson_id}' must be lower-case letters (it goes into links).")
    parsed = tuple(_step(step, f"{name}, step {i}") for i, step in enumerate(steps, 1))
    quiz = None if data.get("quiz") is None else load_quiz(data["quiz"], parsed, name)
    return Lesson(id=lesson_id, title=required_text(data, "title", name),
                  sentence=required_text(data, "sentence", name), steps=parsed, path=Path(path), quiz=quiz)


def load_lessons(folder: Path = DATA) -> list[Lesson]:
    """Every lesson of ``folder``, in file-name order; ids must be unique."""
    lessons = [load_lesson(path) for path in sorted(Path(folder).glob("*.toml"))]
    seen: dict[str, str] = {}
    for lesson in lessons:
        if lesson.id in seen:
            raise VizError(f"{lesson.path.name}: the id '{lesson.id}' is already used by {seen[lesson.id]}.")
        seen[lesson.id] = lesson.path.name
    return lessons


def in_model_terms(text: str, cls_token: str | None, sep_token: str | None) -> str:
    """A step's title, task or question with BERT's [CLS] and [SEP] named as the model on screen writes its first
    and closing special tokens (MPNet's <s> and </s>; issue 47 B); a model without one keeps BERT's name. Claims that
    report what BERT was found to do keep BERT's names: they are about BERT."""
    for bert, own in (("[CLS]", cls_token), ("[SEP]", sep_token)):
        if own:
            text = text.replace(bert, own)
    return text
