"""Command line: ``python -m vizcore <command> ... --format json``; JSON on stdout, one-line errors on stderr.

The entry only: each topic's ``cli.py`` declares its commands in ``register(subparsers)``, each with a
``handler`` ``(args) -> dict`` that returns what is printed. Imports go one way, from here to the
topics. A handler may return a list (one record per input line): it prints as a JSON list with one
record per line. A VizError (or a bad argument) becomes one clear line on stderr and exit code 2; nothing
prints a traceback. Every error of a command names it (``error: python -m vizcore attention: ...``), an
argument the command does not know included: argparse would hand those up to the top parser, whose
message names no command.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from typing import Sequence

from vizcore import batch
from vizcore.attention import cli as attention_cli
from vizcore.circuits import cli as circuits_cli
from vizcore.cliargs import RawOutput
from vizcore.corpus import cli as corpus_cli
from vizcore.decoder import cli as decoder_cli
from vizcore.embeddings import cli as embeddings_cli
from vizcore.errors import VizError
from vizcore.finetune import cli as finetune_cli
from vizcore.lessons import cli as lessons_cli
from vizcore.mlm import cli as mlm_cli
from vizcore.model import cli as model_cli
from vizcore.neurons import cli as neurons_cli
from vizcore.norms import cli as norms_cli
from vizcore.positional import cli as positional_cli
from vizcore.results import cli as results_cli
from vizcore.seq2seq import cli as seq2seq_cli
from vizcore.sizes import cli as sizes_cli
from vizcore.why import cli as why_cli

# One line per topic; a topic's commands appear in --help in this order.
TOPICS = (model_cli, attention_cli, norms_cli, mlm_cli, decoder_cli, positional_cli, finetune_cli, why_cli,
          circuits_cli, neurons_cli, seq2seq_cli, embeddings_cli, corpus_cli, sizes_cli, lessons_cli, results_cli)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, not argparse's usage dump
        raise VizError(f"{self.prog}: {message} (see --help)")


class _CommandParser(_Parser):
    """A command's parser: it refuses the arguments it does not know itself, so the message names the command."""

    def parse_known_args(self, args=None, namespace=None):
        namespace, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return namespace, extras


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m vizcore", description="See inside BERT-style Transformers.")
    subparsers = parser.add_subparsers(dest="command", required=True, parser_class=_CommandParser)
    for topic in TOPICS:
        topic.register(subparsers)
    for name in batch.BATCH_COMMANDS:
        batch.add_input_option(subparsers.choices[name])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    where = ""  # "python -m vizcore <command>: " once the command is known (its parser's errors name it)
    argv = list(sys.argv[1:] if argv is None else argv)
    if batch.wants_batch(argv):
        return _run_batch(parser, argv)
    try:
        args = parser.parse_args(argv)
        where = f"{parser.prog} {args.command}: "
        payload = args.handler(args)
    except VizError as error:
        print(f"error: {where}{error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"error: {where}interrupted", file=sys.stderr)
        return 130
    except Exception as error:  # a bug or a resource limit: still one line, with its kind, for the report
        print(f"error: {where}unexpected {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    if isinstance(sys.stdout, io.TextIOWrapper):  # JSON is UTF-8 whatever the console's code page (cp1252...)
        sys.stdout.reconfigure(encoding="utf-8")
    try:
        if isinstance(payload, RawOutput):  # a table (CSV) as it is
            sys.stdout.write(payload)
            sys.stdout.flush()
            return 0
        if isinstance(payload, list):  # one record per input line: a JSON list, one record per line
            sys.stdout.write("[\n" + ",\n".join(json.dumps(p, ensure_ascii=False) for p in payload) + "\n]")
        else:  # json.dumps, not json.dump: only the one-shot encoder is C (a 512-token attention, 19 M
            sys.stdout.write(json.dumps(payload, ensure_ascii=False))  # numbers: 8 s instead of 20 s)
        sys.stdout.write("\n")
        sys.stdout.flush()
    except BrokenPipeError:  # `... | head` closed the pipe: not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def _run_batch(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    """``<command> --input FILE``: one JSON line per input line (vizcore.batch); a batch that cannot start is one
    error line and exit code 2, like a single call's."""
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(encoding="utf-8")
    try:
        return batch.run_batch(parser, argv)
    except VizError as error:
        where = f"{parser.prog} {argv[0]}: "
        print(f"error: {where}{str(error).removeprefix(where)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"error: {parser.prog} {argv[0]}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0

