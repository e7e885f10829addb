"""``python -m vizcore circuits --layer L --head H [--top K] [--model M] --format json``: one head's circuits
from the weights alone (Elhage et al. 2021), no sentence.

``--layer`` and ``--head`` count from 1 as in the app; the JSON's ``layer`` and ``head`` from 0. Prints
``{"model", "layer", "head", "qk_top": [{"query_token", "key_token", "score"}...], "ov_copying"}``, with
``composition_from_previous`` (``{"q" | "k" | "v": [one score per head of the layer before]}``, empty lists
for layer 1), ``frequent_tokens`` (how many tokens the QK and OV circuits are restricted to) and
``frequency_source``. Definitions: vizcore/circuits/circuits.py and docs/WHY.md.
"""

from __future__ import annotations

import argparse

from vizcore.cliargs import add_format_option, add_model_options
from vizcore.errors import VizError

# As vizcore.circuits.circuits's (a test checks), here without importing torch: bad flags fail at once
DEFAULT_TOKENS, MAX_TOP = 500, 200


def _circuits(args: argparse.Namespace) -> dict:
    for flag, number in (("--layer", args.layer), ("--head", args.head), ("--top", args.top),
                         ("--tokens", args.tokens)):
        if number < 1:
            raise VizError(f"{flag} counts from 1, not {number}.")
    if args.top > MAX_TOP:
        raise VizError(f"--top must be from 1 to {MAX_TOP}, not {args.top}.")
    from vizcore.circuits.circuits import circuits, head_record
    from vizcore.model.loading import load_model, model_shape

    shape = model_shape(args.model)  # before the weights load
    if args.layer > shape.layers or args.head > shape.heads:
        raise VizError(f"Layer {args.layer}, head {args.head} does not exist: '{args.model}' has {shape.layers} "
                       f"layers x {shape.heads} heads (counted from 1).")
    loaded = load_model(args.model, device=args.device)
    result = circuits(loaded, args.tokens)
    return {**head_record(loaded, result, args.layer - 1, args.head - 1, args.top), "device": str(loaded.device)}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "circuits", help="one head's QK token pairs, OV copying score and composition, from the weights alone")
    parser.add_argument("--layer", type=int, required=True, help="the layer, counted from 1 as in the app")
    parser.add_argument("--head", type=int, required=True, help="the head, counted from 1 as in the app")
    parser.add_argument("--top", type=int, default=10, help="token pairs to list, 1 to 200 (default: %(default)s)")
    parser.add_argument("--tokens", type=int, default=DEFAULT_TOKENS,
                        help="restrict the QK and OV circuits to this many most frequent tokens of "
                             "vizcore/data/corpus-demo.txt (default: %(default)s)")
    add_model_options(parser)
    add_format_option(parser)
    parser.set_defaults(handler=_circuits)
