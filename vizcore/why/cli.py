"""``python -m vizcore ablate | patch | attribute ... --format json``: the Why? page's numbers for scripts.

Layer and head flags are 1-based like the UI (``--heads 3:5,4:1`` = layer 3 head 5, layer 4 head 1);
indices inside the JSON are 0-based like everywhere else in the project. The default model is the
fill-mask default (the offline masked-LM); scores are probabilities. Field names are fixed:

* ``ablate``    -> ``{"model", "heads": [[layer, head], ...], "masks": [{"index", "baseline": [{"token",
  "score"}], "ablated": [{"token", "score"}]}]}``
* ``patch``     -> ``{"model", "tokens", "recovered": [[one value per position] for each of L+1 states]}``
  (state 0 = the embedding output, state l = the output of layer l)
* ``attribute`` -> ``{"model", "tokens", "attributions", "target": {"token", "score"}, "completeness":
  {"sum", "delta"}}`` (completeness for integrated gradients; null for the other methods)
"""

from __future__ import annotations

import argparse

from vizcore.cliargs import add_format_option, add_model_options
from vizcore.model.catalog import MLM_MODEL


def _mlm(args: argparse.Namespace):
    from vizcore.model.loading import load_model

    return load_model(args.model, device=args.device, head="mlm")


# ---- ablate ------------------------------------------------------------------------------------

def _ablate(args: argparse.Namespace) -> dict:
    raise NotImplementedError


# ---- patch -------------------------------------------------------------------------------------

def _patch(args: argparse.Namespace) -> dict:
    raise NotImplementedError


# ---- attribute ---------------------------------------------------------------------------------

def _attribute(args: argparse.Namespace) -> dict:
    raise NotImplementedError


def _register_attribute(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("attribute", help="which input tokens a masked-LM answer depends on")
    parser.add_argument("--text", required=True, help='a sentence with one [MASK]')
    add_model_options(parser, default=MLM_MODEL)
    add_format_option(parser)
    parser.set_defaults(handler=_attribute)


# ---- registration ------------------------------------------------------------------------------

def register(subparsers: argparse._SubParsersAction) -> None:
    _register_attribute(subparsers)
