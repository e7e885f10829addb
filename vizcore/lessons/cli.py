"""``python -m vizcore lessons``: the course as JSON, a lesson file checked, and each question's computed answer.

* ``lessons``: every lesson (id, title, sentence) and its steps (title, claim, task, kind and parameters, question).
* ``lessons --file my-lesson.toml``: check one lesson file as the page would (a problem: one line naming the file
  and the step, exit 2) and print it.
* ``lessons --lesson attention --answers``: also compute each question's choices, right answer and reason on the
  model (``--model``, ``--text``: the learner's sentence instead of the lesson's), as the page does on "Check".
* ``lessons handout --lesson attention -o attention.html``: the lesson as one offline HTML file (its figures,
  questions and answers computed on the model; ``vizcore.lessons.handout``); prints where it went and its size.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from vizcore.cliargs import add_format_option, add_model_options

APP_ADDRESS = "http://localhost:8501"  # where `make run` serves the app: the handout's links point there


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


def _handout(args: argparse.Namespace) -> dict:
    from vizcore.errors import VizError
    from vizcore.lessons.handout import build_handout
    from vizcore.lessons.lesson import load_lessons

    lessons = {lesson.id: lesson for lesson in load_lessons()}
    if args.lesson not in lessons:
        raise VizError(f"No lesson '{args.lesson}'; the lessons are {', '.join(lessons)}.")
    lesson = lessons[args.lesson]
    output = Path(args.output or f"{lesson.id}-handout.html")
    made = build_handout(lesson, LocalSource(args.model, args.device), args.text or lesson.sentence, base=args.base,
                         model=args.model)
    try:
        output.write_text(made.html, encoding="utf-8")
    except OSError as error:
        raise VizError(f"cannot write {output}: {error.strerror or error}.") from error
    return {"lesson": lesson.id, "file": str(output), "bytes": len(made.html.encode("utf-8")),
            "steps": len(lesson.steps), "figures": made.figures, "problems": list(made.problems)}


def _register_handout(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("handout", help="one lesson as one offline HTML handout (figures, questions, "
                                                   "answers computed on the model)")
    parser.add_argument("--lesson", required=True, help="the lesson's id (attention, heads, ...)")
    parser.add_argument("--text", help="the learner's sentence instead of the lesson's")
    parser.add_argument("-o", "--output", help="the HTML file to write (default: <lesson>-handout.html)")
    parser.add_argument("--base", default=APP_ADDRESS, help="the app's address for the steps' links (default: "
                                                            "%(default)s, as make run serves it; '' for links "
                                                            "from the app's root)")
    add_model_options(parser)
    add_format_option(parser)
    parser.set_defaults(handler=_handout)


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
    _register_handout(parser.add_subparsers(dest="action", metavar="handout"))
