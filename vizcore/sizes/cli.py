"""``python -m vizcore sizes [--model M ...] [--lengths N ...] [--runs R] --format json``: models side by side.

Prints ``{"components", "lengths", "models"}``: per model its layers, heads, hidden, d_k, parameters per
component (the counting rule: vizcore/sizes/sizes.py), their total, the parameters' bytes and the median
forward time in milliseconds at each length (one torch thread, measured now on this machine; null above the
model's maximum). The default models are the embedded all-MiniLM-L6-v2, the base-size all-mpnet-base-v2 (when
it is not installed, its row says how to install it) and ``tiny-transformer`` (the Fine-tuning lab's
from-scratch model). ``--model`` replaces them: a built-in, a local folder or ``tiny-transformer``.
"""

from __future__ import annotations

import argparse
import sys
import time

from vizcore.errors import VizError

LENGTH_LIMIT = 4096


def default_models() -> list[str]:
    from vizcore.model.catalog import BASE_MODEL, DEFAULT_MODEL
    from vizcore.sizes import TINY_NAME

    return [DEFAULT_MODEL, BASE_MODEL, TINY_NAME]


def not_installed(name: str) -> dict | None:
    """The row of a built-in that must be installed first and is not, else None."""
    from vizcore.model.catalog import BUILTIN_MODELS

    builtin = BUILTIN_MODELS.get(name)
    if builtin is None or builtin.installed():
        return None
    return {"model": name, "installed": False, "install": builtin.install_hint()}


def size_rows(names: list[str], lengths: tuple[int, ...], runs: int, device: str = "cpu") -> list[dict]:
    from vizcore.model.loading import load_model, resolve_source
    from vizcore.sizes.sizes import TINY_NAME, loaded_sizes, tiny_sizes

    for name in names:  # every name checked before the first progress line: a wrong one is the command's one line
        if name != TINY_NAME and not_installed(name) is None:
            resolve_source(name)
    rows = []
    for number, name in enumerate(names, start=1):
        missing = not_installed(name)
        if missing is not None:
            rows.append(missing)
            progress(f"sizes: {number}/{len(names)} {name}: not installed")
            continue
        progress(f"sizes: {number}/{len(names)} {name}: loading and timing {runs} runs at "
                 f"{', '.join(map(str, lengths))} tokens…")
        started = time.perf_counter()
        sizes = tiny_sizes(lengths, runs) if name == TINY_NAME else loaded_sizes(load_model(name, device=device),
                                                                                  lengths, runs)
        rows.append({**sizes.to_json(), "installed": True})
        progress(f"sizes: {number}/{len(names)} {name}: done in {time.perf_counter() - started:.1f} s")
    return rows


def progress(line: str) -> None:
    """A progress line on stderr (stdout is the JSON): the command times several models for a minute or more."""
    print(line, file=sys.stderr, flush=True)


def _sizes(args: argparse.Namespace) -> dict:
    lengths = tuple(args.lengths)
    if any(not 1 <= n <= LENGTH_LIMIT for n in lengths):
        raise VizError(f"Lengths must be 1 to {LENGTH_LIMIT} tokens; got {list(lengths)}.")
    if not 1 <= args.runs <= 50:
        raise VizError(f"--runs must be 1 to 50; got {args.runs}.")
    from vizcore.sizes import COMPONENTS

    names = args.model or default_models()
    return {"components": list(COMPONENTS), "lengths": list(lengths),
            "models": size_rows(names, lengths, args.runs, args.device)}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "sizes", help="models side by side: parameters per component, memory, forward time at 16/128/512 tokens")
    parser.add_argument("--model", action="append", default=None,
                        help="a built-in, a local folder or tiny-transformer; repeat for several (default: "
                             "all-MiniLM-L6-v2, all-mpnet-base-v2, tiny-transformer)")
    parser.add_argument("--lengths", type=int, nargs="*", default=[16, 128, 512],
                        help="input lengths in tokens to time (default: 16 128 512; none: no timing)")
    parser.add_argument("--runs", type=int, default=3, help="timed runs per length; the median is printed")
    parser.add_argument("--device", default="cpu", choices=["auto", "cpu", "cuda", "mps"],
                        help="where to run the models (default: cpu, where the timings are comparable)")
    parser.add_argument("--format", choices=["json"], default="json", help="output format (JSON on stdout)")
    parser.set_defaults(handler=_sizes)
