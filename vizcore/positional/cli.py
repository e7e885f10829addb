"""``python -m vizcore positional --kind K ...``: positional encodings and biases as JSON.

* ``--kind sinusoidal`` (default) ``--positions N --dim D``: ``{"positions", "dim", "formula", "encoding": [[...]]}``,
  N rows (positions 0..N-1), D columns, ``PE(pos, 2i) = sin(pos / 10000^(2i/D))`` and ``PE(pos, 2i+1) = cos(...)``.
* ``--kind rotary --positions N --dim D [--seed S]``: a random query and key at every pair of positions,
  rotated (RoPE): ``scores[m][n]``, the closed form ``by_offset`` (m - n from -(N-1) to N-1) and how far the
  scores are from depending on m - n alone.
* ``--kind alibi --heads H --positions N``: ALiBi's slopes and each head's bias ``[head][query][key]``;
  with ``--text T [--model M] --layer L --head H`` (1-based) instead: that head's attention on the sentence
  before and after its slope's bias is added to the model's own pre-softmax scores.
* ``--kind relative [--model M]``: a learned relative position bias (default: all-mpnet-base-v2, installed
  with ``python -m vizcore install-model all-mpnet-base-v2``): per head and bucket, and per offset.

Numbers are rounded to 12 decimals; layers and heads are 0-based in the JSON.
"""

from __future__ import annotations

import argparse

import numpy as np

from vizcore.cliargs import add_format_option
from vizcore.errors import VizError

KINDS = ("sinusoidal", "rotary", "alibi", "relative")


def _numbers(array: np.ndarray) -> list:
    """Rounded nested lists; -inf (a causal mask) becomes null, since JSON has no infinity."""
    array = np.round(np.asarray(array, dtype=np.float64), 12)
    return np.where(np.isfinite(array), array, None).tolist()


def _required(args: argparse.Namespace, *flags: str) -> None:
    for flag in flags:
        if getattr(args, flag.lstrip("-").replace("-", "_")) is None:
            raise VizError(f"{flag} is required for --kind {args.kind}.")


def _sinusoidal(args: argparse.Namespace) -> dict:
    from vizcore.positional.encoding import sinusoidal_encoding

    _required(args, "--positions", "--dim")
    table = sinusoidal_encoding(args.positions, args.dim)
    return {"kind": "sinusoidal", "positions": int(table.shape[0]), "dim": int(table.shape[1]),
            "formula": "PE(pos, 2i) = sin(pos / 10000^(2i/dim)); PE(pos, 2i+1) = cos(pos / 10000^(2i/dim))",
            "encoding": _numbers(table)}


def _rotary(args: argparse.Namespace) -> dict:
    from vizcore.positional.modern import rotary_check

    _required(args, "--positions", "--dim")
    check = rotary_check(args.positions, args.dim, seed=args.seed)
    n = check.scores.shape[0]
    return {"kind": "rotary", "positions": n, "dim": check.dim, "seed": args.seed,
            "formula": "R(m) rotates each pair (x_2i, x_2i+1) by m * theta_i, theta_i = 10000^(-2i/dim); "
                       "R(m)q . R(n)k = sum_i Re[(q_2i + i q_2i+1) conj(k_2i + i k_2i+1) e^(i (m-n) theta_i)]",
            "paper": "Su et al. 2021, RoFormer: Enhanced Transformer with Rotary Position Embedding",
            "theta": _numbers(check.frequencies), "scores": _numbers(check.scores),
            "offsets": list(range(-(n - 1), n)), "by_offset": _numbers(check.by_offset),
            "max_diagonal_spread": check.max_diagonal_spread, "max_closed_form_error": check.max_closed_form_error,
            "unrotated_dot": check.unrotated}


def _alibi(args: argparse.Namespace) -> dict:
    if args.text is not None:
        return _alibi_on_text(args)
    from vizcore.positional.encoding import MAX_POSITIONS, _as_int
    from vizcore.positional.modern import alibi_bias, alibi_slopes

    _required(args, "--heads", "--positions")
    slopes, n = alibi_slopes(args.heads), _as_int(args.positions, "number of positions")
    if not 1 <= n <= MAX_POSITIONS // 4:
        raise VizError(f"ALiBi's bias matrices take 1 to {MAX_POSITIONS // 4:,} positions; got {n:,}.")
    return {"kind": "alibi", "heads": len(slopes), "positions": n,
            "formula": "bias[h][i][j] = -slope_h * |i - j| (the encoder's symmetric distance; the paper's decoder "
                       "has keys j <= i only); slopes 2^(-8/n), 2^(-16/n), ..., 2^(-8) for n heads",
            "paper": "Press et al. 2022, Train Short, Test Long: Attention with Linear Biases",
            "slopes": _numbers(slopes), "bias": _numbers(alibi_bias(slopes, n))}


def _alibi_on_text(args: argparse.Namespace) -> dict:
    from vizcore.text import check_text

    check_text(args.text)
    _required(args, "--layer", "--head")
    from vizcore.model.loading import DEFAULT_MODEL, load_model
    from vizcore.model.run import Capture, run
    from vizcore.positional.modern import alibi_on_head

    loaded = load_model(args.model or DEFAULT_MODEL, device=args.device)
    recorded = run(loaded, args.text, capture=Capture(hidden=False, qkv=True))
    result = alibi_on_head(loaded, recorded, args.layer - 1, args.head - 1)
    return {"kind": "alibi", "model": loaded.name, "text": args.text, "tokens": result.tokens,
            "layer": result.layer, "head": result.head, "slope": result.slope,
            "scores": _numbers(result.scores), "bias": _numbers(result.bias), "attention": _numbers(result.weights),
            "attention_with_alibi": _numbers(result.biased), "recompute_error": result.recompute_error,
            "mean_distance": result.mean_distance, "mean_distance_with_alibi": result.biased_mean_distance}


def _relative(args: argparse.Namespace) -> dict:
    from vizcore.model.catalog import BASE_MODEL
    from vizcore.positional.modern import RELATIVE_MAX_DISTANCE, relative_bias_of

    bias = relative_bias_of(args.model or BASE_MODEL)
    return {"kind": "relative", "model": bias.model, "buckets": int(bias.per_bucket.shape[1]),
            "heads": int(bias.per_bucket.shape[0]), "max_distance": RELATIVE_MAX_DISTANCE,
            "formula": "score[i][j] += b_h[bucket(i - j)]: 32 buckets, half for keys before the query, half after; "
                       "distances 0-7 exact, then logarithmic up to 128",
            "paper": "Raffel et al. 2020 (T5), as used by MPNet (Song et al. 2020)",
            "per_bucket": _numbers(bias.per_bucket), "offsets": bias.offsets.tolist(),
            "bucket_of_offset": bias.buckets_of_offsets.tolist(), "per_offset": _numbers(bias.per_offset)}


def _positional(args: argparse.Namespace) -> dict:
    return {"sinusoidal": _sinusoidal, "rotary": _rotary, "alibi": _alibi, "relative": _relative}[args.kind](args)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "positional", help="positions: sinusoidal table (Vaswani et al. 2017), rotary (RoPE), ALiBi biases, "
        "a model's learned relative bias (--kind)")
    parser.add_argument("--kind", choices=KINDS, default="sinusoidal", help="which positions (default: %(default)s)")
    parser.add_argument("--positions", type=int,
                        help="number of positions N (sinusoidal 1..2048; rotary, alibi 1..512)")
    parser.add_argument("--dim", type=int, help="d_model (sinusoidal) or a head's d_k (rotary), even (2..1024)")
    parser.add_argument("--seed", type=int, default=0, help="rotary: the random query and key (default 0)")
    parser.add_argument("--heads", type=int, help="alibi: number of heads (1..256)")
    parser.add_argument("--text", help="alibi: a sentence whose attention gets the bias (with --layer, --head)")
    parser.add_argument("--layer", type=int, help="alibi with --text: the layer, 1-based")
    parser.add_argument("--head", type=int, help="alibi with --text: the head, 1-based (its slope is ALiBi's "
                        "slope for that head among the model's heads)")
    parser.add_argument("--model", help="alibi with --text: the model (default all-MiniLM-L6-v2); relative: the "
                        "model whose bias is read (default all-mpnet-base-v2)")
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda", "mps"],
                        help="alibi with --text: where to run the model")
    add_format_option(parser)
    parser.set_defaults(handler=_positional)
