"""The tools' command line, the same in each: ``python -m tools.<tool> <command> --work-dir DIR``, a
dataclass's fields as flags (each value checked as it is parsed, so a bad one is argparse's one-line
error with exit code 2, not a traceback), the result as JSON on stdout and a ``VizError`` as one
``error:`` line with exit code 2; and the JSON files the tools hand each other, read with a message
that says what to run when one is missing or broken."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Iterable
from dataclasses import fields
from pathlib import Path

from vizcore.errors import VizError

# Fields that count something of which a run needs at least one; every other number may not be negative.
AT_LEAST_ONE = ("steps", "batch_size", "eval_every", "seq_len")


def _yes_no(text: str) -> bool:
    if text.lower() in ("1", "true", "yes"):
        return True
    if text.lower() in ("0", "false", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def number(kind: type, least: int = 0) -> Callable[[str], int | float]:
    """An argparse type: an int or float of at least ``least``, else a message naming the flag."""
    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected {'a whole number' if kind is int else 'a number'}, got {text!r}") from None
        if not math.isfinite(value) or value < least:
            raise argparse.ArgumentTypeError(f"must be a number of at least {least}, got {text}")
        return value

    return parse


def add_config_flags(parser: argparse.ArgumentParser, config: type, skip: Iterable[str] = ()) -> None:
    """One ``--field-name`` flag per field of the dataclass ``config``, its default the field's, its help
    from the class's ``HELP`` (a dict by field name) if it has one."""
    helps = getattr(config, "HELP", {})
    for field in fields(config):
        if field.name in skip:
            continue
        default = field.default
        if isinstance(default, bool):
            kind = _yes_no
        elif isinstance(default, (int, float)):
            kind = number(type(default), 1 if field.name in AT_LEAST_ONE else 0)
        else:
            kind = type(default)
        parser.add_argument("--" + field.name.replace("_", "-"), type=kind, default=default,
                            help=helps.get(field.name))


def config_from(args: argparse.Namespace, config: type, **given):
    """The dataclass ``config`` from parsed flags (fields without a flag: from ``given`` or their default)."""
    values = {f.name: getattr(args, f.name) for f in fields(config) if hasattr(args, f.name)}
    return config(**{**values, **given})


def tool_parser(module: str, doc: str, work_dir: str, commands: Iterable[str],
                config: type | None = None) -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """``python -m <module>`` with ``commands``, each with ``--work-dir``; ``train`` gets ``config``'s flags."""
    parser = argparse.ArgumentParser(prog=f"python -m {module}", description=doc.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in commands:
        sub.add_parser(name).add_argument("--work-dir", type=Path, default=Path(work_dir))
    if config is not None:
        add_config_flags(sub.choices["train"], config)
    return parser, sub.choices


def run_command(command: Callable[[], dict]) -> int:
    """Run a tool's command: its result as JSON on stdout (without the probes), a VizError as one line."""
    try:
        result = command()
    except VizError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    result.pop("probes", None)
    print(json.dumps(result, indent=2))
    return 0


def read_json(path: Path, hint: str) -> dict:
    """A JSON file a tool wrote; missing or broken, a one-line VizError ending in ``hint`` (what to run)."""
    if not path.is_file():
        raise VizError(f"'{path}' is missing: {hint}.")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as error:
        raise VizError(f"'{path}' is not valid JSON ({error}): {hint}.") from error
