"""``python -m vizcore positional --positions N --dim D``: the sinusoidal table as JSON.

Prints ``{"positions": N, "dim": D, "encoding": [[...]]}``: N rows (positions 0..N-1), D columns,
``PE(pos, 2i) = sin(pos / 10000^(2i/D))`` and ``PE(pos, 2i+1) = cos(...)``, rounded to 12 decimals.
"""

from __future__ import annotations

import argparse

import numpy as np

from vizcore.cliargs import add_format_option


def _positional(args: argparse.Namespace) -> dict:
    from vizcore.positional.encoding import sinusoidal_encoding

    table = sinusoidal_encoding(args.positions, args.dim)
    return {"positions": int(table.shape[0]), "dim": int(table.shape[1]),
            "formula": "PE(pos, 2i) = sin(pos / 10000^(2i/dim)); PE(pos, 2i+1) = cos(pos / 10000^(2i/dim))",
            "encoding": np.round(table, 12).tolist()}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "positional", help="sinusoidal positional encoding (Vaswani et al. 2017), [position][dimension]")
    parser.add_argument("--positions", required=True, type=int, help="number of positions N (1..2048)")
    parser.add_argument("--dim", required=True, type=int, help="d_model D, even (2..1024)")
    add_format_option(parser)
    parser.set_defaults(handler=_positional)
