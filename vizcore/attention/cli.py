"""CLI commands of the Attention Explorer: ``attention``, ``head-stats`` and ``aggregate`` (JSON on stdout).

``python -m vizcore attention --text T [--pair P] [--model M] [--layer L] [--head H]`` prints tokens, offsets
and the weights as ``[layer][head][query][key]``; ``--layer`` and ``--head`` (1-based, as in the app) keep
one layer and/or one head, and ``layers`` / ``heads`` list the ones kept, 0-based like every index in the
JSON; ``python -m vizcore head-stats --text T [--pair P] [--model M]`` prints Clark
et al.'s per-head statistics as ``[layer][head]`` arrays; ``python -m vizcore aggregate --text T --kind
mean|rollout|flow`` prints head means or rollout as ``[layer][query][key]``, or attention flow as
``[query][key]`` (flow: at most 40 tokens; ``--query`` picks the output tokens, default 0).
"""

from __future__ import annotations

import argparse

import numpy as np

from vizcore.cliargs import add_format_option, add_model_options, add_text_options
from vizcore.errors import VizError
from vizcore.text import check_text  # no torch: bad text is refused in a fraction of a second

ROUND = 8


def _result(args: argparse.Namespace):
    check_text(args.text)  # fail on empty text before spending seconds on importing torch and loading a model
    from vizcore.attention.extract import extract_attention
    from vizcore.model.loading import load_model

    return extract_attention(load_model(args.model, device=args.device), args.text, args.pair)


def _head_stats(args: argparse.Namespace) -> dict:
    from vizcore.attention.head_stats import LABELS, head_statistics

    result = _result(args)
    stats = head_statistics(result.attention, result.tokens, result.special_mask)
    return {"model": result.model, "tokens": result.tokens, "num_layers": result.num_layers,
            "num_heads": result.num_heads, "truncated": result.truncated, "shape": "[layer][head]",
            "labels": LABELS, "statistics": {k: np.round(v, ROUND).tolist() for k, v in stats.items()}}


def _queries(spec: str, n: int) -> list[int]:
    if spec == "all":
        return list(range(n))
    try:
        chosen = [int(part) for part in spec.split(",")]
    except ValueError as error:
        raise VizError(f"--query takes token indices like 0 or 0,3, or 'all'; got '{spec}'.") from error
    if any(not 0 <= q < n for q in chosen):
        raise VizError(f"--query indices must be between 0 and {n - 1} (the input has {n} tokens).")
    return chosen


def _aggregate(args: argparse.Namespace) -> dict:
    from vizcore.attention.aggregate import ViewOptions, apply_view, attention_flow, attention_rollout, head_mean

    result = _result(args)
    data = {"model": result.model, "kind": args.kind, "truncated": result.truncated}
    if args.kind == "flow":
        queries = _queries(args.query, len(result.tokens))
        flow = attention_flow(result.attention, queries=queries)
        return {**data, "tokens": result.tokens, "queries": queries, "shape": "[query][key]",
                "values": np.round(flow, ROUND).tolist()}
    matrix = head_mean(result.attention) if args.kind == "mean" else attention_rollout(result.attention)
    options = ViewOptions(hide_special=args.hide_special, merge_words=args.merge_words)
    shown, rows, cols = apply_view(matrix, result.tokens, result.offsets, result.special_mask,
                                   result.segment_ids, options)
    return {**data, "tokens": cols.tokens, "hide_special": args.hide_special, "merge_words": args.merge_words,
            "shape": "[layer][query][key]", "values": np.round(shown, ROUND).tolist()}


def _kept(flag: str, number: int | None, count: int, what: str) -> slice:
    """The 0-based slice a 1-based ``--layer`` / ``--head`` keeps (all when not given)."""
    if number is None:
        return slice(0, count)
    if not 1 <= number <= count:
        raise VizError(f"{flag} must be from 1 to {count} (this model has {count} {what}s, counted from 1 as in "
                       f"the app), not {number}.")
    return slice(number - 1, number)


def _attention(args: argparse.Namespace) -> dict:
    check_text(args.text)  # fail on empty text or a layer 0 before spending seconds on importing torch
    for flag, number in (("--layer", args.layer), ("--head", args.head)):
        if number is not None and number < 1:
            raise VizError(f"{flag} counts from 1, as in the app, not {number}.")
    from vizcore.attention.extract import extract_attention
    from vizcore.model.loading import load_model, model_shape

    shape = model_shape(args.model)  # --layer and --head against the configuration, before the weights load
    layers = _kept("--layer", args.layer, shape.layers, "layer")
    heads = _kept("--head", args.head, shape.heads, "head")
    loaded = load_model(args.model, device=args.device)
    result = extract_attention(loaded, args.text, args.pair)
    kept = result.attention[layers, heads]  # [layer, head, query, key]: a view, no copy of a long text's weights
    return {**result.to_dict(include_attention=False), "layers": list(range(layers.start, layers.stop)),
            "heads": list(range(heads.start, heads.stop)),
            "attention": np.round(kept.astype(np.float64), ROUND).tolist(), "device": str(loaded.device)}


def _add_input(parser: argparse.ArgumentParser) -> None:
    add_text_options(parser)
    add_model_options(parser)
    add_format_option(parser)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "attention", help="attention weights of every layer and head, as [layer][head][query][key]")
    _add_input(parser)
    parser.add_argument("--layer", type=int, default=None,
                        help="only this layer, counted from 1 as in the app (JSON indices stay 0-based)")
    parser.add_argument("--head", type=int, default=None,
                        help="only this head (of each layer kept), counted from 1 as in the app")
    parser.set_defaults(handler=_attention)

    parser = subparsers.add_parser(
        "head-stats", help="per-head entropy, max weight, mass on [CLS]/[SEP]/punctuation/self/previous/next")
    _add_input(parser)
    parser.set_defaults(handler=_head_stats)

    parser = subparsers.add_parser("aggregate", help="head mean, attention rollout or attention flow")
    _add_input(parser)
    parser.add_argument("--kind", choices=["mean", "rollout", "flow"], default="rollout",
                        help="mean over heads, rollout (residual included), or max-flow (default: %(default)s)")
    parser.add_argument("--query", default="0",
                        help="flow only: output token indices (0-based, comma-separated) or 'all' (default: 0)")
    parser.add_argument("--hide-special", action="store_true",
                        help="mean/rollout: drop [CLS]/[SEP] rows and columns, renormalise rows")
    parser.add_argument("--merge-words", action="store_true",
                        help="mean/rollout: merge word pieces (sum over key pieces, mean over query pieces)")
    parser.set_defaults(handler=_aggregate)
