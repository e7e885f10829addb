"""Speed of ``python -m vizcore embed`` against sentence-transformers' ``encode`` on the same 1,000 texts.

Run: ``.venv/bin/python -m bench.bench_embed`` (``make bench``). Writes its section of docs/BENCHMARKS.md.
In one process, on the CPU, batch size 32, the embedded all-MiniLM-L6-v2:

* ours: ``vizcore.embeddings.vectors.sentence_vectors(..., normalize=True)``, the call ``embed`` makes (its
  file reading and Parquet writing are left out, as ``encode`` has neither), on the app's shared model,
  which is loaded with eager attention because the app shows attention weights;
* sentence-transformers: ``SentenceTransformer(folder).encode(texts, batch_size=32)`` on the same folder
  (transformers' default SDPA attention);
* ours on SDPA: the same call on a second copy of the weights loaded with SDPA attention, to measure what
  the eager attention costs.

The three take turns in each round, in a rotating order, so that other work on the shared cores falls
on all alike; each one's fastest round is compared (the median is shown too). The texts are the 519
sentences of the built-in search collection and 481 pairs of them joined into one text (1,000 texts,
7 to 30 tokens, 16 on average), so batches see different lengths.
"""

from __future__ import annotations

import dataclasses
import os
import statistics
import time

import numpy as np

from bench.report import machine, markdown_table, write_section

TEXTS = 1_000
BATCH = 32
ROUNDS = 3
GOAL = 0.9  # issue 19: sentence-transformers' time / ours >= 0.9


def bench_texts() -> list[str]:
    from vizcore.embeddings.search import builtin_collection

    base = list(builtin_collection())
    pairs = [f"{base[i]} {base[(7 * i + 3) % len(base)]}" for i in range(TEXTS - len(base))]
    return base + pairs


def contenders(texts: list[str]) -> dict[str, object]:
    """name -> a function embedding ``texts``: (N, D) unit vectors."""
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel

    from vizcore.embeddings.vectors import sentence_vectors
    from vizcore.model.loading import DEFAULT_MODEL, load_model

    loaded = load_model(DEFAULT_MODEL, device="cpu")
    folder = str(loaded.model.name_or_path)
    st = SentenceTransformer(folder, device="cpu")
    sdpa = dataclasses.replace(loaded, model=AutoModel.from_pretrained(folder, attn_implementation="sdpa").eval())
    return {
        "ours": lambda: sentence_vectors(loaded, texts, batch_size=BATCH, normalize=True),
        "sentence-transformers": lambda: st.encode(texts, batch_size=BATCH, convert_to_numpy=True),
        "ours on SDPA": lambda: sentence_vectors(sdpa, texts, batch_size=BATCH, normalize=True),
    }


def timed_rounds(functions: dict[str, object]) -> tuple[dict[str, list[float]], dict[str, np.ndarray]]:
    """Seconds per call of each function over ``ROUNDS`` rounds (order rotating), after one warm-up call."""
    outputs = {name: fn() for name, fn in functions.items()}  # warm-up, and the vectors to compare
    times: dict[str, list[float]] = {name: [] for name in functions}
    names = list(functions)
    for round_ in range(ROUNDS):
        for name in names[round_ % len(names):] + names[: round_ % len(names)]:
            start = time.perf_counter()
            functions[name]()
            times[name].append(time.perf_counter() - start)
            print(f"round {round_ + 1}: {name} {times[name][-1]:.2f} s", flush=True)
    return times, outputs


def main() -> None:
    texts = bench_texts()
    times, outputs = timed_rounds(contenders(texts))
    ours, st, sdpa = (times[n] for n in ("ours", "sentence-transformers", "ours on SDPA"))
    difference = float(np.abs(outputs["ours"] - outputs["sentence-transformers"]).max())
    rows = [[i + 1, f"{a:.2f}", f"{b:.2f}", f"{c:.2f}", f"{b / a:.2f}"]
            for i, (a, b, c) in enumerate(zip(ours, st, sdpa))]
    for label, pick in (("fastest", min), ("median", statistics.median)):
        a, b, c = pick(ours), pick(st), pick(sdpa)
        rows.append([label, f"{a:.2f}", f"{b:.2f}", f"{c:.2f}", f"**{b / a:.2f}**" if pick is min else f"{b / a:.2f}"])
    ratio, load = min(st) / min(ours), os.getloadavg()[0]
    body = (
        "## Sentence embeddings: `embed` vs sentence-transformers (bench/bench_embed.py)\n\n"
        f"{len(texts):,} texts (the search collection's 519 sentences and 481 pairs of them), all-MiniLM-L6-v2, "
        f"batch {BATCH}, CPU, one process, {ROUNDS} rounds taking turns; {machine()}; 1-minute load average at "
        f"the end: {load:.1f}"
        + (" (above the core count: other work competed for the CPU)" if load > (os.cpu_count() or 1) else "")
        + ". Ours = `sentence_vectors(..., normalize=True)`, what `python -m vizcore embed` runs, on the app's "
        "model (eager attention, needed for attention weights); sentence-transformers = `encode` on the same "
        "folder (SDPA attention); ours on SDPA = the same call on a copy of the weights loaded with SDPA. "
        f"The largest difference between our vectors and sentence-transformers' was {difference:.1e}.\n\n"
        + markdown_table(["round", "ours (s)", "sentence-transformers (s)", "ours on SDPA (s)",
                          "ratio sentence-transformers / ours"], rows)
        + f"\n\nGoal (issue 19): ratio >= {GOAL}; measured {ratio:.2f} on the fastest rounds "
        f"({len(texts) / min(ours):.0f} texts/s ours, {len(texts) / min(st):.0f} texts/s sentence-transformers)."
    )
    print(body)
    write_section("embed", body)


if __name__ == "__main__":
    main()
