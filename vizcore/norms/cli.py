"""``python -m vizcore value-norms --text T [--pair P] [--model M] --format json``: value-weighted attention.

Prints ``{"model", "tokens", "weights", "norms"}``, ``weights`` the attention weights alpha and ``norms``
``||alpha_ij f(x_j)||`` (Kobayashi et al. 2020: the value vector with its bias, through the head's rows of
W_O, W_O's bias left out), both ``[layer][head][query][key]``; also ``residual_norms`` ``[state][token]``
(state 0 = the embeddings) and ``sinks``: per layer, the share on [CLS], [SEP] and punctuation of the
weights and of the norms. The default model is the embedded all-MiniLM-L6-v2, as for ``attention``.
"""

from __future__ import annotations

import argparse

from vizcore.cliargs import add_format_option, add_model_options, add_text_options
from vizcore.text import check_text, is_blank


def _value_norms(args: argparse.Namespace) -> dict:
    check_text(args.text)  # before seconds of importing torch
    if not is_blank(args.pair):
        check_text(args.pair, "second sentence")
    from vizcore.model.loading import load_model
    from vizcore.norms.value_norms import to_json, value_norms

    loaded = load_model(args.model, device=args.device)
    return {**to_json(value_norms(loaded, args.text, args.pair)), "device": str(loaded.device)}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "value-norms", help="attention weights beside ||alpha f(x)||, what each weight moves (Kobayashi et al. 2020)")
    add_text_options(parser)
    add_model_options(parser)
    add_format_option(parser)
    parser.set_defaults(handler=_value_norms)
