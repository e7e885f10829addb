"""``python -m vizcore models`` and ``python -m vizcore prepare`` (JSON on stdout)."""

from __future__ import annotations

import argparse

from vizcore.cliargs import add_format_option


def _models(args: argparse.Namespace) -> dict:
    from vizcore.model.catalog import DEFAULT_MODEL, available_models

    return {"default": DEFAULT_MODEL, "models": available_models()}


def _prepare(args: argparse.Namespace) -> dict:
    from vizcore.model.startup_cache import prepare

    return prepare()


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("models", help="list the built-in and suggested models")
    add_format_option(parser)
    parser.set_defaults(handler=_models)

    parser = subparsers.add_parser(
        "prepare", help="check that the embedded model loads offline and cache the opening heatmaps "
        "(run by `make run` after installing; the server refreshes the cache at every start)")
    add_format_option(parser)
    parser.set_defaults(handler=_prepare)
