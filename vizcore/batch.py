"""The command line's batches (issue 49 C): a command that computes per sentence reads JSON lines instead of one
``--text``, and answers each with one JSON line, in order, as it goes.

    python -m vizcore fill-mask --input sentences.jsonl --top-k 3 > answers.jsonl
    printf '{"text": "Paris is the capital of [MASK]."}\\n' | python -m vizcore fill-mask --input -

Each input line is an object with the command's flags as fields (``"text"``, ``"top_k"`` or ``"top-k"``, ...): they
are read by the command's own parser, exactly as the same flags on the command line, on top of the flags given
once for the whole batch (so ``--top-k 3`` holds for every line that does not say otherwise). The model is loaded
once (``vizcore.model.loading.reuse_models``); each output line is what the single call prints for that line, or,
for a line that cannot be answered, ``{"line": N, "error": "..."}``, and the next lines go on. An empty line is
skipped (it gets no answer). On a terminal, stderr shows a progress line. The exit code is 0 when every line was
answered, 1 when some were errors (stderr says how many), 2 when the batch could not start (an unreadable file).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from vizcore.errors import VizError

# The commands that compute per sentence. (``embed`` reads a file of sentences by itself: its ``--input``.)
BATCH_COMMANDS = ("attention", "head-stats", "aggregate", "value-norms", "fill-mask", "tuned-lens", "nsp",
                  "generate", "similarity", "neurons", "ablate", "patch", "attribute")
INPUT_HELP = ("JSON lines to answer one by one (a file, or - for stdin): each line an object with this command's "
              "flags as fields, e.g. {\"text\": \"...\"}; one JSON line out per line in, in order")


def add_input_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--input", default=None, metavar="FILE", help=INPUT_HELP)


def wants_batch(argv: list[str]) -> bool:
    """Whether ``argv`` (without the program name) asks a batch command for ``--input``."""
    return bool(argv) and argv[0] in BATCH_COMMANDS and any(a == "--input" or a.startswith("--input=") for a in argv)


def split_input(argv: list[str]) -> tuple[list[str], str]:
    """(``argv`` without ``--input X``, X)."""
    rest, source, skip = [], None, False
    for i, arg in enumerate(argv):
        if skip:
            skip = False
        elif arg == "--input":
            if i + 1 >= len(argv):
                raise VizError("--input needs a file name, or - for stdin")
            source, skip = argv[i + 1], True
        elif arg.startswith("--input="):
            source = arg.split("=", 1)[1]
        else:
            rest.append(arg)
    if not source:
        raise VizError("--input needs a file name, or - for stdin")
    return rest, source


def _flags(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """The parser's options by field name ("top_k"), the ones a line may set."""
    return {action.dest: action for action in parser._actions
            if action.option_strings and action.dest not in ("help", "format", "input")}


def line_argv(record: object, parser: argparse.ArgumentParser) -> list[str]:
    """A line's object as the flags it stands for."""
    if not isinstance(record, dict):
        raise VizError("the line is not a JSON object (write {\"text\": \"...\"})")
    flags = _flags(parser)
    argv: list[str] = []
    for key, value in record.items():
        field = str(key).replace("-", "_")
        action = flags.get(field)
        if action is None:
            raise VizError(f"unknown field {key!r}: this command's fields are {', '.join(sorted(flags))}")
        option = action.option_strings[-1]
        if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
            if not isinstance(value, bool):
                raise VizError(f"field {key!r} is true or false, not {json.dumps(value)}")
            if value != (isinstance(action, argparse._StoreFalseAction)):
                argv.append(option)
        elif value is None:
            continue
        elif isinstance(value, list):
            if action.nargs in (None, "?"):
                raise VizError(f"field {key!r} takes one value, not a list")
            argv += [option, *map(_text, value)]
        elif isinstance(value, dict):
            raise VizError(f"field {key!r} takes a value, not an object")
        else:
            argv.append(f"{option}={_text(value)}")  # "=": a value that starts with "-" stays a value
    return argv


def _text(value: object) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _lines(source: str) -> Iterator[tuple[int, str]]:
    if source == "-":
        stream: TextIO = sys.stdin
        yield from enumerate(stream, start=1)
        return
    path = Path(source).expanduser()
    if not path.is_file():
        raise VizError(f"--input '{source}' " + ("is a folder" if path.is_dir() else "does not exist"))
    try:
        with path.open(encoding="utf-8") as handle:
            yield from enumerate(handle, start=1)
    except UnicodeDecodeError as error:
        raise VizError(f"--input '{source}' is not UTF-8 text ({error.reason} at byte {error.start})") from error


def _count(source: str) -> int | None:
    if source == "-":
        return None
    try:
        with open(Path(source).expanduser(), "rb") as handle:
            return sum(1 for line in handle if line.strip())
    except OSError:
        return None


class _Progress:
    """``fill-mask: 120 of 1,000 lines, 35 a second, 3 errors`` on stderr, rewritten in place, on a terminal only."""

    def __init__(self, name: str, total: int | None, err: TextIO) -> None:
        self.name, self.total, self.err = name, total, err
        self.shown = err.isatty()
        self.started = self.last = time.monotonic()

    def update(self, done: int, errors: int, final: bool = False) -> None:
        now = time.monotonic()
        if not self.shown or (not final and now - self.last < 0.2):
            return
        self.last = now
        rate = done / max(now - self.started, 1e-9)
        of = f" of {self.total:,}" if self.total is not None else ""
        text = f"{self.name}: {done:,}{of} lines, {rate:,.0f} a second"
        if errors:
            text += f", {errors:,} error" + "s" * (errors != 1)
        self.err.write("\r" + text + ("\n" if final else ""))
        self.err.flush()


def run_batch(parser: argparse.ArgumentParser, argv: list[str], out: TextIO | None = None,
              err: TextIO | None = None) -> int:
    """Answer ``--input``'s lines with ``argv[0]``'s command (``parser``: the whole command line's parser)."""
    from vizcore.model.loading import reuse_models

    out, err = out or sys.stdout, err or sys.stderr
    base, source = split_input(argv)
    command = _subparser(parser, base[0])
    required = [action.required for action in command._actions]
    for action in command._actions:  # the batch's flags may leave out what every line gives (--text)
        action.required = False
    try:
        command.parse_args(base[1:])  # the flags for the whole batch: checked once, before any line
    finally:
        for action, was in zip(command._actions, required):  # each line needs them again
            action.required = was
    progress = _Progress(base[0], _count(source), err)
    done = errors = 0
    with reuse_models():
        for number, text in _lines(source):
            if not text.strip():
                continue
            payload, answered = _answer(command, base[1:], number, text)
            errors += not answered
            out.write(json.dumps(payload, ensure_ascii=False) + "\n")
            out.flush()
            done += 1
            progress.update(done, errors)
    progress.update(done, errors, final=True)
    if errors:
        err.write(f"{errors:,} of {done:,} lines could not be answered (their error lines say why)\n")
    return 1 if errors else 0


def _answer(command: argparse.ArgumentParser, base: list[str], number: int, text: str) -> tuple[dict, bool]:
    """(the command's answer to one line, its flags on top of the batch's, True) or (``{"line", "error"}``, False)."""
    try:
        args = command.parse_args(base + line_argv(json.loads(text), command))
        return args.handler(args), True
    except json.JSONDecodeError as error:
        why = f"not JSON: {error.msg} at column {error.colno}"
    except VizError as error:
        why = str(error).removeprefix(f"{command.prog}: ")  # the line's error says the command once, not twice
    except Exception as error:  # noqa: BLE001  (a bug or a limit on one line: the others go on)
        why = f"unexpected {type(error).__name__}: {error}"
    return {"line": number, "error": why}, False


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[name]
