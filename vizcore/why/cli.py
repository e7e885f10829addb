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
from vizcore.errors import VizError
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
    """f = the answer's probability at the first [MASK] (the JSON's ``mask_index``); ``completeness``
    for integrated gradients: ``sum`` of the attributions and ``delta`` = f(x) - f(baseline)."""
    from vizcore.mlm.fill_mask import LITERAL_MASK, TYPED_MASK
    from vizcore.model.catalog import BUILTIN_MODELS
    from vizcore.model.run import check_text
    from vizcore.why.attribution import answer_target, attribute, check_steps, to_json

    check_text(args.text)
    check_steps(args.steps)
    # The built-ins' mask is [MASK]: say it is missing before spending seconds on loading the model.
    if args.model in BUILTIN_MODELS and not TYPED_MASK.search(args.text):
        raise VizError(f"The text has no mask: type {LITERAL_MASK} where the answer should be predicted.")
    loaded = _mlm(args)
    target = answer_target(loaded, args.text, args.answer)
    return to_json(attribute(target, [args.method], args.steps), args.method, loaded.name)


def _register_attribute(subparsers: argparse._SubParsersAction) -> None:
    from vizcore.why.attribution import DEFAULT_STEPS, MAX_STEPS, METHODS

    parser = subparsers.add_parser("attribute", help="which input tokens a masked-LM answer depends on")
    parser.add_argument("--text", required=True,
                        help="a sentence with [MASK] (with several, the first one is explained)")
    parser.add_argument("--method", required=True, choices=list(METHODS), help="the attribution method")
    parser.add_argument("--answer", default=None,
                        help="the word whose probability at the mask is explained (default: the top prediction)")
    parser.add_argument("--steps", type=int, default=DEFAULT_STEPS,
                        help=f"integrated gradients: points on the path, 1 to {MAX_STEPS} (default: %(default)s)")
    add_model_options(parser, default=MLM_MODEL)
    add_format_option(parser)
    parser.set_defaults(handler=_attribute)


# ---- registration ------------------------------------------------------------------------------

def register(subparsers: argparse._SubParsersAction) -> None:
    _register_attribute(subparsers)
