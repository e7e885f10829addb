"""``python -m vizcore translate-date --text TEXT [--beam K] [--steps] --format json``: the date translator.

Prints ``{"output": "1999-03-21", "input_tokens": [...], "output_tokens": [...], "cross_attention":
[layer][head][output][input], ...}`` (0-based), with the other two attentions, the gold alignment when
the input is in the grammar, ``expected`` / ``correct``, and ``outside_training`` with a ``reason`` for
an input the model was not trained on (it still answers). ``--steps`` adds each decoding step's
distribution and the beams' scores.

``--input FILE`` reads one date per line and prints a JSON list with one object per line, in the
file's order; an empty line (or one the translator refuses) is reported in its place as
``{"line": n, "error": "..."}``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from vizcore.cliargs import add_format_option

MAX_LINES = 10_000


def _record(text: str, args: argparse.Namespace) -> dict:
    from vizcore.seq2seq.translator import translate

    translation = translate(text, beam=args.beam)
    out = translation.to_dict()
    if args.steps:
        out["decoding"] = translation.decoding.to_dict()
    return out


def _lines(path: Path) -> list[str]:
    from vizcore.errors import VizError

    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise VizError(f"Cannot read --input {path}: {error.strerror or error}. Give a UTF-8 text file, "
                       "one date per line.") from None
    if not lines:
        raise VizError(f"--input {path} is empty: write one date per line.")
    if len(lines) > MAX_LINES:
        raise VizError(f"--input {path} has {len(lines):,} lines; translate at most {MAX_LINES:,} at a time.")
    return lines


def _translate_date(args: argparse.Namespace) -> dict | list[dict]:
    from vizcore.errors import VizError
    from vizcore.seq2seq.dates import check_date_text

    if args.input is None:
        check_date_text(args.text)  # before importing torch
    from vizcore.seq2seq.decoding import check_width

    check_width(args.beam)
    if args.input is None:
        return _record(args.text, args)
    out = []
    for number, line in enumerate(_lines(args.input), start=1):
        try:
            out.append({"line": number, **_record(line, args)})
        except VizError as error:
            out.append({"line": number, "text": line, "error": str(error)})
    return out


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "translate-date", help="spelled-out English date -> ISO date with the encoder-decoder trained here "
                               "(its three attentions, the gold alignment)")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--text", help='a date in words, e.g. "the twenty first of march nineteen ninety nine"')
    source.add_argument("--input", type=Path, help="a text file, one date per line: prints a JSON list, "
                        "one object per line, in order")
    parser.add_argument("--beam", type=int, default=1, help="beam width: 1 = greedy (default), up to 5")
    parser.add_argument("--steps", action="store_true", help="add each step's distribution and the beams' scores")
    add_format_option(parser)
    parser.set_defaults(handler=_translate_date)
