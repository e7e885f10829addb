"""K sessions asking at once: each its own forward pass (the server before the queue) vs the model's queue.

Run: ``.venv/bin/python -m bench.serve_queue [--sizes 1 4 8 30] [--threads 1 2] [--rounds 5]``. Writes its
section of docs/BENCHMARKS.md. The default model (all-MiniLM-L6-v2), K threads released together by a
barrier, each with a sentence of its own (10 to 20 tokens, as students type): *alone* = each thread calls
``vizcore.model.run.run`` (as every session's script thread did), *queue* = each calls
``InferenceQueue.submit`` (what ``ui.state.get_run`` does now). Wall time from the release to the last
result; the two take turns in every round and the median of the rounds' ratios is the claim (a load that
comes and goes on shared cores falls on both alike). The queue's records are checked against the single
runs (largest difference over every attention weight and hidden state; the queue's contract is equality).
torch's thread count is set per configuration; threads started after the change (each round's, and each
configuration's queue worker) use it.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

import numpy as np
import torch

from bench.report import machine, markdown_table, uptime, write_section

WORDS = ("the teacher asked every student in the room to type a sentence of their own about the cat that "
         "sat on the warm mat near the door because it was tired after the long walk").split()


def sentences(count: int) -> list[str]:
    """``count`` different sentences of 8 to 17 words (about 10 to 20 tokens), the same every run."""
    return [" ".join(WORDS[i % 7: i % 7 + 8 + i % 10]) + f" ({i})" for i in range(count)]


def wall(function, arguments: list) -> tuple[float, list]:
    """Seconds from releasing ``len(arguments)`` threads together to the last one's end, and their results."""
    results: list = [None] * len(arguments)
    start = threading.Barrier(len(arguments) + 1)

    def one(i: int) -> None:
        start.wait()
        results[i] = function(arguments[i])

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(arguments))]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    return time.perf_counter() - began, results


def measure(loaded, size: int, threads: int, rounds: int) -> list[object]:
    from vizcore.model.run import Capture, run
    from vizcore.serve.queue import InferenceQueue

    torch.set_num_threads(threads)
    capture = Capture(hidden=True)  # what the pages ask for, and the hidden states the check compares
    queue = InferenceQueue(loaded)  # a new worker thread: it starts with this thread count
    texts = sentences(size)
    ratios, alone_times, queue_times = [], [], []
    worst = {True: 0.0, False: 0.0}  # by whether the input has fewer than 16 tokens
    wall(lambda t: run(loaded, t, capture=capture), texts)  # warm-up, both ways
    wall(lambda t: queue.submit(t, capture=capture), texts)
    before = queue.counts.forwards
    for _ in range(rounds):
        alone, singles = wall(lambda t: run(loaded, t, capture=capture), texts)
        together, batched = wall(lambda t: queue.submit(t, capture=capture), texts)
        alone_times.append(alone)
        queue_times.append(together)
        ratios.append(alone / together)
        for a, b in zip(singles, batched):
            short = len(a.tokens) < 16
            for name in ("attention", "hidden_states"):
                difference = float(np.abs(getattr(a, name) - getattr(b, name)).max())
                worst[short] = max(worst[short], difference)
    forwards = (queue.counts.forwards - before) / rounds
    return [size, threads, f"{statistics.median(alone_times) * 1000:.0f}",
            f"{statistics.median(queue_times) * 1000:.0f}", f"{statistics.median(ratios):.2f}",
            f"{forwards:.1f}", f"{worst[True]:.1e}", f"{worst[False]:.1e}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 4, 8, 30])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    from vizcore.model.catalog import DEFAULT_MODEL
    from vizcore.model.loading import load_model
    from vizcore.serve.settings import Limits

    loaded = load_model(DEFAULT_MODEL, device="cpu")
    load_before = uptime()
    began = time.perf_counter()
    rows = [measure(loaded, size, threads, args.rounds) for threads in args.threads for size in args.sizes]
    limits = Limits()
    body = "\n".join([
        "## Inference queue: K sessions asking at once (`python -m bench.serve_queue`)",
        "",
        f"{DEFAULT_MODEL}, CPU, K threads released together, each with a sentence of its own (10 to 20 tokens), "
        "attention and hidden states (what Step by step asks; the check compares both); "
        f"{machine().split(',')[0]}, torch {torch.__version__}. *Alone*: each "
        "thread runs its own forward pass (the server before the queue); *queue*: each submits to the model's "
        f"`InferenceQueue` (batches of at most {limits.max_batch}, window {limits.window * 1000:g} ms). Median wall "
        f"time of {args.rounds} rounds from the release to the last result; ratio = the median of the rounds' "
        "alone/queue ratios (> 1: the queue is faster); forwards = the queue's forward passes per round; "
        "difference = the largest |queue - alone| over every attention weight and hidden state of every round, for "
        "inputs under 16 tokens and for the others. In a batch each row's attention is computed over its own "
        "tokens (the shapes of its run alone: over a padded width a short row's matrix products and softmax take "
        "other kernels, 2.7e-6 apart before), and an input of a token count whose linear layers MKL multiplies "
        "with other kernels than a batch's (`vizcore.serve.queue.rows_apart`: 1 to 3 rows at one thread; 1-3, "
        "5-7, 9-11 at two) runs alone: the records are equal.",
        "",
        markdown_table(["K", "torch threads", "alone ms", "queue ms", "ratio", "forwards",
                        "difference, < 16 tokens", "difference, >= 16"], rows),
        "",
        f"Load before: `{load_before}`; after ({time.perf_counter() - began:.0f} s): `{uptime()}`.",
    ])
    path = write_section("serve-queue", body)
    print(body)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
