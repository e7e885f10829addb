"""``python -m vizcore fill-mask --text TEXT [--model M] [--top-k K] [--iterative] --format json``.

Prints ``{"model", "text", "tokens", "masks": [{"index", "predictions": [{"token", "score", ...}]}]}``;
with ``--iterative`` also ``"iterative"``: the masks filled one at a time, most confident first.
The default model is the offline masked-LM trained in this repo.
"""

from __future__ import annotations

import argparse

from vizcore.cliargs import add_format_option, add_model_options
from vizcore.errors import VizError
from vizcore.model.catalog import BUILTIN_MODELS, MLM_MODEL


def _fill_mask(args: argparse.Namespace) -> dict:
    from vizcore.mlm.fill_mask import LITERAL_MASK, TYPED_MASK, fill_iteratively, fill_mask
    from vizcore.model.loading import load_model
    from vizcore.model.run import check_text

    check_text(args.text)
    # The built-ins' mask is [MASK]: say it is missing before spending seconds on loading the model.
    if args.model in BUILTIN_MODELS and not TYPED_MASK.search(args.text):
        raise VizError(f"The text has no mask: type {LITERAL_MASK} where a word should be predicted.")
    loaded = load_model(args.model, device=args.device, head="mlm")
    result = fill_mask(loaded, args.text, top_k=args.top_k)
    payload = {**result.to_dict(), "device": str(loaded.device)}
    if args.iterative:
        payload["iterative"] = [
            {"index": s.index, "token": s.token, "score": s.score, "text": s.text}
            for s in fill_iteratively(loaded, args.text)
        ]
    return payload


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "fill-mask", help="predict the [MASK] words of a sentence with a masked-LM (top-k with probabilities)")
    parser.add_argument("--text", required=True, help='a sentence with [MASK], e.g. "The capital of France is [MASK]."')
    parser.add_argument("--top-k", type=int, default=5, help="predictions per mask (default: %(default)s)")
    parser.add_argument("--iterative", action="store_true",
                        help="also fill the masks one at a time, most confident first")
    add_model_options(parser, default=MLM_MODEL)
    add_format_option(parser)
    parser.set_defaults(handler=_fill_mask)
