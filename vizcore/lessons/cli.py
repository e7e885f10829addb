"""``python -m vizcore lessons``: the course as JSON, a lesson file checked, and each question's computed answer.

* ``lessons``: every lesson (id, title, sentence) and its steps (title, claim, task, kind and parameters, question).
* ``lessons --file my-lesson.toml``: check one lesson file as the page would (a problem: one line naming the file
  and the step, exit 2) and print it.
* ``lessons --lesson attention --answers``: also compute each question's choices, right answer and reason on the
  model (``--model``, ``--text``: the learner's sentence instead of the lesson's), as the page does on "Check".
"""

from __future__ import annotations

import argparse
from pathlib import Path

from vizcore.cliargs import add_format_option, add_model_options


class LocalSource:
    """A step's models and runs, loaded here once each (the page uses the server's caches instead)."""

    def __init__(self, model: str, device: str) -> None:
        self.name, self.device, self.loaded = model, device, {}

    def model(self, head: str = "base", name: str | None = None):
        from vizcore.model.loading import load_model

        key = (name or self.name, head)
        if key not in self.loaded:
            self.loaded[key] = load_model(key[0], device=self.device, head=head)
        return self.loaded[key]

    def run(self, text: str, hidden: bool = False):
        from vizcore.model.run import Capture, run

        return run(self.model(), text, capture=Capture(hidden=hidden))


def _step(step, number: int, source: LocalSource | None, text: str) -> dict:
    record = {"step": number, "title": step.title, "claim": step.claim, "task": step.task, "kind": step.kind,
              "params": dict(step.params)}
    if step.question is not None:
        record["question"] = {"text": step.question.text, "answer": step.question.answer}
        if source is not None:
            from vizcore.lessons.answers import ANSWERS
            from vizcore.lessons.kinds import KINDS

            view = KINDS[step.kind].build(source, text, step.params)
            answer = ANSWERS[step.question.answer](view, step.question.params)
            record["question"].update(choices=answer.choices, right=answer.right, reason=answer.reason)
    return record


def _lessons(args: argparse.Namespace) -> dict:
    from vizcore.errors import VizError
    from vizcore.lessons.lesson import load_lesson, load_lessons

    lessons = [load_lesson(Path(args.file))] if args.file else load_lessons()
    if args.lesson:
        lessons = [lesson for lesson in lessons if lesson.id == args.lesson]
        if not lessons:
            raise VizError(f"No lesson '{args.lesson}': the ids are in docs/LESSONS.md (attention, heads, ...).")
    source = LocalSource(args.model, args.device) if args.answers else None
    return {"lessons": [{"id": lesson.id, "title": lesson.title, "sentence": lesson.sentence,
                         "steps": [_step(step, i, source, args.text or lesson.sentence)
                                   for i, step in enumerate(lesson.steps, 1)]} for lesson in lessons]}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("lessons", help="the Lessons page's course: list it, check a lesson file, compute "
                                                   "its questions' answers")
    parser.add_argument("--file", help="a lesson file (TOML) to check instead of the shipped lessons")
    parser.add_argument("--lesson", help="only this lesson (its id: attention, heads, ...)")
    parser.add_argument("--answers", action="store_true",
                        help="compute each question's choices, right answer and reason on the model")
    parser.add_argument("--text", help="the learner's sentence instead of each lesson's own (with --answers)")
    add_model_options(parser)
    add_format_option(parser)
    parser.set_defaults(handler=_lessons)
