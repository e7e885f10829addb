"""``python -m vizcore ablate | patch | attribute | attention-attribution | attribution-patching ... --format json``:
the Why? page's numbers for scripts.

Layer and head flags are 1-based like the UI (``--heads 3:5,4:1`` = layer 3 head 5, layer 4 head 1);
indices inside the JSON are 0-based like everywhere else in the project. The default model is the
fill-mask default (the offline masked-LM); scores are probabilities. Field names are fixed:

* ``ablate``    -> ``{"model", "heads": [[layer, head], ...], "masks": [{"index", "baseline": [{"token",
  "score"}], "ablated": [{"token", "score"}]}]}``
* ``patch``     -> ``{"model", "tokens", "recovered": [[one value per position] for each of L+1 states]}``
  (state 0 = the embedding output, state l = the output of layer l)
* ``attribute`` -> ``{"model", "tokens", "attributions", "target": {"token", "score"}, "completeness":
  {"sum", "delta"}}`` (completeness for integrated gradients; null for the other methods)
* ``attention-attribution`` -> ``{"model", "tokens", "target": {"token", "score"}, "mask_index", "roots", "steps",
  "attributions": [layer][head][query][key], "head_scores": [layer][head] (each head's maximum),
  "heads_ranked": [{"layer", "head", "score"}], "completeness": [{"layer", "sum", "delta", "f_zero", "gap"}],
  "tree": {"threshold", "edges": [{"layer", "query", "key", "score", "share"}]}}`` (with ``--layer``, the
  other layers' attributions are 0 and they have no completeness entry)
* ``attribution-patching`` -> ``{"model", "tokens", "recovered": [L+1][T], "heads": [L][H], "seconds", ...}``
  as ``patch`` (the first-order estimate); with ``--compare``, also ``"exact"`` (``patch``'s record) and
  ``"agreement": {"spearman": {"states", "heads"}, "top_k_overlap": {"k", "states", "heads"}}``
"""

from __future__ import annotations

import argparse

from vizcore.cliargs import add_format_option, add_model_options
from vizcore.errors import VizError
from vizcore.mlm.cli import load_masked_lm
from vizcore.model.catalog import fill_mask_model

# ---- ablate ------------------------------------------------------------------------------------

def _ablate(args: argparse.Namespace) -> dict:
    from vizcore.model.loading import model_shape
    from vizcore.why.ablation import ablate_mlm, parse_heads

    parse_heads(args.heads, 10**6, 10**6)  # the syntax, before importing torch
    shape = model_shape(args.model)  # the heads against the configuration, before the weights load
    heads = parse_heads(args.heads, shape.layers, shape.heads)
    loaded = load_masked_lm(args, args.text)
    if not heads:
        raise VizError("No heads to ablate: give --heads layer:head[,layer:head...], 1-based, e.g. 3:5,4:1.")
    result = ablate_mlm(loaded, args.text, heads, mode=args.mode, top_k=args.top_k)
    payload = result.to_dict()
    return {"model": payload["model"], "heads": payload["heads"], "masks": payload["masks"],
            "mode": payload["mode"], "tokens": payload["tokens"], "device": str(loaded.device)}


def _register_ablate(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "ablate", help="switch attention heads off and compare the masked-LM's answer before and after")
    parser.add_argument("--text", required=True, help='a sentence with [MASK], e.g. "The capital of France is [MASK]."')
    parser.add_argument("--heads", required=True, help="heads to ablate, layer:head, 1-based, e.g. 3:5,4:1")
    parser.add_argument("--mode", choices=("zero", "mean"), default="zero",
                        help="zero the heads' output, or replace it with its mean over reference sentences "
                             "(default: %(default)s)")
    parser.add_argument("--top-k", type=int, default=5, help="predictions per mask, 1 to 15 (default: %(default)s)")
    add_model_options(parser, default=fill_mask_model())
    add_format_option(parser)
    parser.set_defaults(handler=_ablate)


# ---- patch -------------------------------------------------------------------------------------

def _patch(args: argparse.Namespace) -> dict:
    from vizcore.why.patching import patch_sweep

    loaded = load_masked_lm(args, args.clean, args.corrupt)
    result = patch_sweep(loaded, args.clean, args.corrupt, args.answer, args.contrast)
    return {**result.to_dict(), "device": str(loaded.device)}


def _register_patch(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "patch", help="activation patching: how much of the answer each layer x position of a clean run restores")
    parser.add_argument("--clean", required=True, help='e.g. "The capital of France is [MASK]."')
    parser.add_argument("--corrupt", required=True,
                        help='the same number of tokens, e.g. "The capital of Italy is [MASK]."')
    parser.add_argument("--answer", required=True, help="the clean sentence's answer, one token (e.g. paris)")
    parser.add_argument("--contrast", required=True, help="the corrupted sentence's answer (e.g. rome)")
    add_model_options(parser, default=fill_mask_model())
    add_format_option(parser)
    parser.set_defaults(handler=_patch)


# ---- attribute ---------------------------------------------------------------------------------

def _attribute(args: argparse.Namespace) -> dict:
    """f = the answer's probability at the first [MASK] (the JSON's ``mask_index``); ``completeness``
    for integrated gradients: ``sum`` of the attributions and ``delta`` = f(x) - f(baseline)."""
    from vizcore.why.attribution import DEFAULT_STEPS, answer_target, attribute, check_steps, to_json

    steps = check_steps(DEFAULT_STEPS if args.steps is None else args.steps)
    loaded = load_masked_lm(args, args.text)
    target = answer_target(loaded, args.text, args.answer)
    return to_json(attribute(target, [args.method], steps), args.method, loaded.name)


# The parser is built for every command: it names the methods without importing torch (a unit test
# checks these against vizcore.why.attribution.METHODS).
ATTRIBUTION_METHODS = ("integrated-gradients", "grad-x-input", "occlusion", "rollout")


def _register_attribute(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("attribute", help="which input tokens a masked-LM answer depends on")
    parser.add_argument("--text", required=True,
                        help="a sentence with [MASK] (with several, the first one is explained)")
    parser.add_argument("--method", required=True, choices=ATTRIBUTION_METHODS, help="the attribution method")
    parser.add_argument("--answer", default=None,
                        help="the word whose probability at the mask is explained (default: the top prediction)")
    parser.add_argument("--steps", type=int, default=None,
                        help="integrated gradients: points on the path (default: 50, measured to keep the "
                             "completeness gap under 1 %%; see docs/WHY.md)")
    add_model_options(parser, default=fill_mask_model())
    add_format_option(parser)
    parser.set_defaults(handler=_attribute)


# ---- attention-attribution -------------------------------------------------------------------

def _attention_attribution(args: argparse.Namespace) -> dict:
    from vizcore.why.attention_attribution import attention_attribution, check_steps, check_threshold

    steps, threshold = check_steps(args.steps), check_threshold(args.threshold)
    from vizcore.model.loading import model_shape

    layers = model_shape(args.model).layers  # before the weights load
    if args.layer is not None and not 1 <= args.layer <= layers:
        raise VizError(f"--layer must be between 1 and {layers} for {args.model}; got {args.layer}.")
    loaded = load_masked_lm(args, args.text)
    layers = None if args.layer is None else [args.layer - 1]
    result = attention_attribution(loaded, args.text, args.answer, steps, layers)
    return {**result.to_dict(threshold), "device": str(loaded.device)}


def _register_attention_attribution(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "attention-attribution",
        help="integrated gradients over every head's attention probabilities (Hao et al. 2021): heads ranked, "
             "the attribution tree")
    parser.add_argument("--text", required=True,
                        help="a sentence with [MASK] (with several, the first one is explained)")
    parser.add_argument("--answer", default=None,
                        help="the word whose probability at the mask is explained (default: the top prediction)")
    parser.add_argument("--layer", type=int, default=None, help="attribute this layer only, 1-based (default: all)")
    parser.add_argument("--steps", type=int, default=20,
                        help="Riemann steps per layer (default: %(default)s, measured to keep every layer's "
                             "completeness gap under 1 %%; see docs/WHY.md)")
    parser.add_argument("--threshold", type=float, default=0.4,
                        help="the tree keeps edges at or above this fraction of their layer's largest "
                             "(default: %(default)s, the paper's)")
    add_model_options(parser, default=fill_mask_model())
    add_format_option(parser)
    parser.set_defaults(handler=_attention_attribution)


# ---- attribution-patching --------------------------------------------------------------------

def _attribution_patching(args: argparse.Namespace) -> dict:
    from vizcore.why.attribution_patching import agreement, attribution_patching
    from vizcore.why.patching import patch_sweep

    if args.top_k < 1:
        raise VizError(f"--top-k must be at least 1; got {args.top_k}.")
    loaded = load_masked_lm(args, args.clean, args.corrupt)
    estimate = attribution_patching(loaded, args.clean, args.corrupt, args.answer, args.contrast)
    payload = {**estimate.to_dict(), "device": str(loaded.device)}
    if args.compare:
        exact = patch_sweep(loaded, args.clean, args.corrupt, args.answer, args.contrast)
        payload |= {"exact": exact.to_dict(), "agreement": agreement(exact, estimate, args.top_k).to_dict()}
    return payload


def _register_attribution_patching(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "attribution-patching",
        help="the first-order estimate of every activation patch from one backward pass (Nanda 2023)")
    parser.add_argument("--clean", required=True, help='e.g. "The capital of France is [MASK]."')
    parser.add_argument("--corrupt", required=True,
                        help='the same number of tokens, e.g. "The capital of Italy is [MASK]."')
    parser.add_argument("--answer", required=True, help="the clean sentence's answer, one token (e.g. paris)")
    parser.add_argument("--contrast", required=True, help="the corrupted sentence's answer (e.g. rome)")
    parser.add_argument("--compare", action="store_true",
                        help="also run the exact patching sweep: its record, rank correlation and top-k overlap")
    parser.add_argument("--top-k", type=int, default=10, help="with --compare: k of the overlap (default: %(default)s)")
    add_model_options(parser, default=fill_mask_model())
    add_format_option(parser)
    parser.set_defaults(handler=_attribution_patching)


# ---- registration ------------------------------------------------------------------------------

def register(subparsers: argparse._SubParsersAction) -> None:
    _register_ablate(subparsers)
    _register_patch(subparsers)
    _register_attribute(subparsers)
    _register_attention_attribution(subparsers)
    _register_attribution_patching(subparsers)
