"""``python -m vizcore neurons [top | sentence | search | nmf] ...``: feed-forward neurons, JSON on stdout.

Layers and neurons count from 1 in the flags, as in the app; from 0 in the JSON.

* ``neurons --layer L --neuron N [--top K] [--corpus DIR]`` (``top``, the default): the neuron's top-activating
  tokens over a corpus run made with ``corpus --neurons K`` (default: the built-in demo) ->
  ``{"layer", "neuron", "corpus", "k", "top": [{"sentence_id", "token", "position", "activation", "context",
  "token_start", "token_end"}...]}`` (the token's characters in the context).
* ``neurons sentence --text TEXT [--pair P] --layer L [--neuron N] [--model M]``: one neuron over the sentence's
  tokens (``"activations"``, one per token), or without ``--neuron`` the layer's strongest (``"strongest"``).
* ``neurons search --token T [--top K] [--corpus DIR]``: the neurons whose top examples are that token most
  often -> ``{"token", "corpus", "k", "neurons": [{"layer", "neuron", "hits", "share", "max_activation",
  "mean_activation"}...]}``.
* ``neurons nmf --text TEXT [--pair P] [--layer L] [--factors F] [--special] [--model M]``: the non-negative
  factors of the sentence's activations (one layer, or every layer without ``--layer``) ->
  ``{"model", "tokens", "positions", "layer", "factors": [factor][token], "top_neurons", "relative_error"}``.

Definitions: vizcore/neurons/ and docs/NEURONS.md.
"""

from __future__ import annotations

import argparse

from vizcore.cliargs import add_format_option, add_model_options
from vizcore.errors import VizError

ACTIONS = ("top", "sentence", "search", "nmf")
MAX_TOP = 100


def _count(flag: str, value: int | None) -> int | None:
    """A 1-based flag -> 0-based, refused below 1."""
    if value is None:
        return None
    if value < 1:
        raise VizError(f"{flag} counts from 1, not {value}.")
    return value - 1


def _need(args: argparse.Namespace, *flags: str) -> None:
    for flag in flags:
        if getattr(args, flag.lstrip("-").replace("-", "_")) is None:
            raise VizError(f"neurons {args.action} needs {flag}.")


def _corpus_table(args: argparse.Namespace):
    from vizcore.corpus.results import DEMO_DIR
    from vizcore.neurons.corpus import load_neurons

    folder = args.corpus or str(DEMO_DIR)
    return folder, load_neurons(folder)


def _top(args: argparse.Namespace) -> dict:
    _need(args, "--layer", "--neuron")
    layer, neuron = _count("--layer", args.layer), _count("--neuron", args.neuron)
    from vizcore.neurons.corpus import neuron_top, shape_of

    folder, table = _corpus_table(args)
    return {"layer": layer, "neuron": neuron, "corpus": folder, "k": shape_of(table)[2],
            "top": neuron_top(table, layer, neuron, args.top)}


def _search(args: argparse.Namespace) -> dict:
    _need(args, "--token")
    from vizcore.neurons.corpus import search_token, shape_of

    folder, table = _corpus_table(args)
    found = search_token(table, args.token, args.top or 20)
    return {"token": args.token, "corpus": folder, "k": shape_of(table)[2],
            "neurons": [{"layer": int(r.layer), "neuron": int(r.neuron), "hits": int(r.hits), "share": float(r.share),
                         "max_activation": float(r.max_activation), "mean_activation": float(r.mean_activation)}
                        for r in found.itertuples()]}


def _sentence_neurons(args: argparse.Namespace):
    from vizcore.model.loading import load_model
    from vizcore.neurons.sentence import sentence_neurons

    return sentence_neurons(load_model(args.model, device=args.device), args.text, args.pair)


def _sentence(args: argparse.Namespace) -> dict:
    _need(args, "--text", "--layer")
    layer, neuron = _count("--layer", args.layer), _count("--neuron", args.neuron)
    from vizcore.neurons.sentence import check_neuron, neuron_over_tokens, strongest

    s = _sentence_neurons(args)
    check_neuron(s, layer, neuron)
    out = {"model": s.model, "tokens": s.tokens, "truncated": s.truncated, "layer": layer, "neuron": neuron}
    if neuron is None:
        return {**out, "strongest": strongest(s, args.top or 10, layer)}
    return {**out, "activations": [float(v) for v in neuron_over_tokens(s, layer, neuron)]}


def _nmf(args: argparse.Namespace) -> dict:
    _need(args, "--text")
    layer = _count("--layer", args.layer)
    from vizcore.neurons.sentence import sentence_factors

    s = _sentence_neurons(args)
    f = sentence_factors(s, args.factors, layer, special=args.special)
    return {"model": s.model, "tokens": f.tokens, "positions": f.positions, "layer": f.layer,
            "factors": f.strengths.round(6).tolist(), "top_neurons": f.top_neurons,
            "relative_error": round(f.relative_error, 6), "truncated": s.truncated}


def _neurons(args: argparse.Namespace) -> dict:
    if args.top is not None and not 1 <= args.top <= MAX_TOP:
        raise VizError(f"--top must be from 1 to {MAX_TOP}, not {args.top}.")
    return {"top": _top, "sentence": _sentence, "search": _search, "nmf": _nmf}[args.action](args)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "neurons", help="feed-forward neurons: top examples over a corpus, over a sentence, search by token, NMF")
    parser.add_argument("action", nargs="?", choices=ACTIONS, default="top",
                        help="top (default): a neuron's top examples over a corpus run; sentence: over --text; "
                             "search: neurons by --token; nmf: factors of --text's activations")
    parser.add_argument("--layer", type=int, default=None, help="the layer, counted from 1 as in the app")
    parser.add_argument("--neuron", type=int, default=None, help="the neuron of that layer, counted from 1")
    parser.add_argument("--top", type=int, default=None, help=f"how many to list, 1 to {MAX_TOP}")
    parser.add_argument("--corpus", default=None,
                        help="top, search: a corpus run made with --neurons (default: the built-in demo)")
    parser.add_argument("--token", default=None, help="search: a word or word piece (compared without ## and case)")
    parser.add_argument("--text", default=None, help="sentence, nmf: the sentence (segment A)")
    parser.add_argument("--pair", default=None, help="sentence, nmf: an optional second sentence (segment B)")
    parser.add_argument("--factors", type=int, default=5, help="nmf: how many factors (default: %(default)s)")
    parser.add_argument("--special", action="store_true", help="nmf: factorise [CLS] and [SEP] too")
    add_model_options(parser)
    add_format_option(parser)
    parser.set_defaults(handler=_neurons)
