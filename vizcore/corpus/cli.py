"""``python -m vizcore corpus``: per-head measures (and dependency accuracy) over a corpus; JSON on stdout.

``python -m vizcore corpus --input FILE --out DIR [--engine local|ray] [--ray-address ADDR] [--syntax]
[--neurons K] [--model M] [--batch-size B] [--text-column C] --format json`` writes ``DIR``
(see ``vizcore.corpus.engine``)
and prints the summary; a progress bar goes to stderr. A rerun with the same input and settings keeps
the finished shards and computes the rest.
"""

from __future__ import annotations

import argparse
import sys
import time

from vizcore.cliargs import add_format_option, add_model_options
from vizcore.corpus.settings import DEFAULT_SHARD, ENGINES, Settings

BAR = 30


def progress_bar(every: float = 1.0):
    """A text bar on stderr, redrawn at most every ``every`` seconds, and always at the end."""
    start, last = time.monotonic(), [0.0]

    def report(done: int, total: int) -> None:
        now = time.monotonic()
        if done != total and now - last[0] < every:
            return
        last[0] = now
        filled = BAR * done // max(total, 1)
        rate = done / (now - start) if now > start else 0.0
        print(f"corpus [{'#' * filled}{'.' * (BAR - filled)}] {done:,}/{total:,} sentences "
              f"({100 * done // max(total, 1)} %, {rate:,.0f}/s since start)", file=sys.stderr, flush=True)
    return report


def _corpus(args: argparse.Namespace) -> dict:
    from vizcore.corpus.inputs import read_corpus

    settings = Settings(input=args.input, out=args.out, engine=args.engine, model=args.model, device=args.device,
                        syntax=args.syntax, batch_size=args.batch_size, shard_size=args.shard_size,
                        text_column=args.text_column, ray_address=args.ray_address, workers=args.workers,
                        neurons=args.neurons).validate()
    corpus = read_corpus(settings.input, settings.text_column)  # before seconds of loading a model
    from vizcore.corpus.engine import run_corpus  # torch and the model: only for a good input

    print(f"corpus: {len(corpus):,} sentences from '{corpus.source}' ({corpus.skipped:,} blank lines skipped), "
          f"{settings.model}, engine {settings.engine}", file=sys.stderr, flush=True)
    return run_corpus(settings, progress=progress_bar(), corpus=corpus)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "corpus", help="Clark et al.'s per-head measures (and dependency accuracy) over a corpus, to Parquet")
    parser.add_argument("--input", required=True,
                        help="a UTF-8 text file (one sentence per line), or a .csv / .parquet file")
    parser.add_argument("--text-column", default=None,
                        help="CSV/Parquet: the column with the sentences (default: the only one, or 'text')")
    parser.add_argument("--out", required=True, help="the results folder (heads.parquet, summary.json, ...)")
    parser.add_argument("--engine", choices=ENGINES, default="local",
                        help="local: in this process; ray: Ray Data actors (default: %(default)s)")
    parser.add_argument("--ray-address", default=None, help="a Ray cluster to join (default: a local runtime)")
    parser.add_argument("--workers", type=int, default=2, help="Ray actors, one model each (default: %(default)s)")
    parser.add_argument("--syntax", action="store_true",
                        help="also score heads against spaCy dependency parses (relations.parquet)")
    parser.add_argument("--neurons", type=int, default=0, metavar="K",
                        help="also keep each feed-forward neuron's K top-activating tokens (neurons.parquet; "
                             "python -m vizcore neurons reads it; default: %(default)s, none)")
    parser.add_argument("--batch-size", type=int, default=32, help="sentences per forward pass (default: %(default)s)")
    parser.add_argument("--shard-size", type=int, default=DEFAULT_SHARD,
                        help="sentences per shard, the unit a rerun resumes from (default: %(default)s)")
    add_model_options(parser)
    add_format_option(parser)
    parser.set_defaults(handler=_corpus)
