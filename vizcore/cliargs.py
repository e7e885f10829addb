"""The options that several commands share. Topic ``cli.py`` modules import this, never ``vizcore.cli``."""

from __future__ import annotations

import argparse

from vizcore.model.catalog import DEFAULT_MODEL


class RawOutput(str):
    """A command's output written as it is (a CSV table), not as JSON."""


def add_format_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=["json"], default="json", help="output format (JSON on stdout)")


def add_model_options(parser: argparse.ArgumentParser, default: str | None = None) -> None:
    parser.add_argument("--model", default=default or DEFAULT_MODEL,
                        help="built-in name, local Hugging Face folder, or hub id (default: %(default)s)")
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda", "mps"],
                        help="where to run the model (default: auto = cuda, then mps, then cpu)")


def add_text_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--text", required=True, help="the sentence (segment A)")
    parser.add_argument("--pair", default=None, help="an optional second sentence (segment B)")
