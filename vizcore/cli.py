"""Command line: ``python -m vizcore <command> ... --format json``; JSON on stdout, one-line errors on stderr.

Each command is a pair: ``add_<command>_parser(subparsers)`` declares it and sets ``handler``,
a function ``(args) -> dict`` that returns what is printed. A VizError (or a bad argument) becomes
one clear line on stderr and exit code 2; nothing prints a traceback.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from typing import Callable, Sequence

from vizcore.errors import VizError
from vizcore.positional_cli import add_positional_parser

Handler = Callable[[argparse.Namespace], dict]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, not argparse's usage dump
        raise VizError(f"{self.prog}: {message} (see --help)")


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=["json"], default="json", help="output format (JSON on stdout)")


def _add_model_options(parser: argparse.ArgumentParser, default: str | None = None) -> None:
    from vizcore.models import DEFAULT_MODEL

    parser.add_argument("--model", default=default or DEFAULT_MODEL,
                        help="built-in name, local Hugging Face folder, or hub id (default: %(default)s)")
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda", "mps"],
                        help="where to run the model (default: auto = cuda, then mps, then cpu)")


def _models(args: argparse.Namespace) -> dict:
    from vizcore.models import DEFAULT_MODEL, available_models

    return {"default": DEFAULT_MODEL, "models": available_models()}


def add_models_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("models", help="list the built-in and suggested models")
    _add_common(parser)
    parser.set_defaults(handler=_models)


def _attention(args: argparse.Namespace) -> dict:
    from vizcore.attention import check_text, extract_attention
    from vizcore.models import load_model

    check_text(args.text)  # fail on empty text before spending seconds on loading a model
    loaded = load_model(args.model, device=args.device)
    result = extract_attention(loaded, args.text, args.pair)
    return {**result.to_dict(), "device": str(loaded.device)}


def add_attention_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "attention", help="attention weights of every layer and head, as [layer][head][query][key]")
    parser.add_argument("--text", required=True, help="the sentence (segment A)")
    parser.add_argument("--pair", default=None, help="an optional second sentence (segment B)")
    _add_model_options(parser)
    _add_common(parser)
    parser.set_defaults(handler=_attention)


def _prepare(args: argparse.Namespace) -> dict:
    from vizcore.startup_cache import prepare

    return prepare()


def add_prepare_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "prepare", help="check that the embedded model loads offline and cache the opening heatmaps "
        "(run by `make run` after installing; the server refreshes the cache at every start)")
    _add_common(parser)
    parser.set_defaults(handler=_prepare)


from vizcore.fill_mask_cli import add_fill_mask_parser  # noqa: E402
from vizcore.finetune_cli import add_finetune_parser  # noqa: E402  (imports vizcore.cli's helpers lazily)
from vizcore.cli_attention import add_aggregate_parser, add_head_stats_parser  # noqa: E402  (same)

# Each issue's command registers itself here: one line per command.
PARSER_FACTORIES: list[Callable[[argparse._SubParsersAction], None]] = [
    add_models_parser,
    add_attention_parser,
    add_prepare_parser,
    add_fill_mask_parser,
    add_positional_parser,
    add_finetune_parser,
    add_head_stats_parser,
    add_aggregate_parser,
]


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m vizcore", description="See inside BERT-style Transformers.")
    subparsers = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for add in PARSER_FACTORIES:
        add(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        payload = args.handler(args)
    except VizError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as error:  # a bug or a resource limit: still one line, with its kind, for the report
        print(f"error: unexpected {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    if isinstance(sys.stdout, io.TextIOWrapper):  # JSON is UTF-8 whatever the console's code page (cp1252...)
        sys.stdout.reconfigure(encoding="utf-8")
    try:
        json.dump(payload, sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
        sys.stdout.flush()
    except BrokenPipeError:  # `... | head` closed the pipe: not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
