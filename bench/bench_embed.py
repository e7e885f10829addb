"""Speed of ``python -m vizcore embed`` against sentence-transformers' ``encode`` on the same texts.

Run: ``.venv/bin/python -m bench.bench_embed`` (``make bench``). Writes its section of docs/BENCHMARKS.md.
In one process, on the CPU, batch size 32, the embedded all-MiniLM-L6-v2, two sets of texts:

* sentences: the 519 sentences of the built-in search collection and 481 pairs of them joined into one
  text (1,000 texts, 7 to 30 tokens, 16 on average): the issue's measurement;
* long texts: 128 texts of 5 to 32 collection sentences each (about 50 to 280 tokens; cut at 256).

Three contenders on each:

* ours: ``vizcore.embeddings.vectors.sentence_vectors(..., normalize=True)``, the call ``embed`` makes (its
  file reading and Parquet writing are left out, as ``encode`` has neither); it runs the app's shared
  model through its SDPA twin (``sdpa_twin``);
* sentence-transformers: ``SentenceTransformer(folder).encode(texts, batch_size=32)`` on the same folder;
* ours, eager: the same call with ``fast_attention=False``, on the shared model as the app loads it
  (eager attention, which returns the attention weights the other pages show).

The three take turns in each round, in a rotating order, so that other work on the shared cores falls
on all alike; each round gives a ratio, and the median of the rounds' ratios is reported.
"""

from __future__ import annotations

import statistics
import time
from typing import Callable

import numpy as np

from bench.report import load_note, machine, markdown_table, write_section

SENTENCES = 1_000
LONG_TEXTS = 128
BATCH = 32
ROUNDS = 5
GOAL = 0.9  # issue 19: sentence-transformers' time / ours >= 0.9
NAMES = ("ours", "sentence-transformers", "ours, eager")


def sentence_set() -> list[str]:
    from vizcore.embeddings.search import builtin_collection

    base = list(builtin_collection())
    return base + [f"{base[i]} {base[(7 * i + 3) % len(base)]}" for i in range(SENTENCES - len(base))]


def long_set() -> list[str]:
    from vizcore.embeddings.search import builtin_collection

    base = list(builtin_collection())
    return [" ".join(base[(13 * i + k) % len(base)] for k in range(5 + i % 28)) for i in range(LONG_TEXTS)]


def contenders(texts: list[str], loaded, st) -> dict[str, Callable[[], np.ndarray]]:
    """name -> a function embedding ``texts``: (N, D) unit vectors."""
    from vizcore.embeddings.vectors import sentence_vectors

    return {
        "ours": lambda: sentence_vectors(loaded, texts, batch_size=BATCH, normalize=True),
        "sentence-transformers": lambda: st.encode(texts, batch_size=BATCH, convert_to_numpy=True),
        "ours, eager": lambda: sentence_vectors(loaded, texts, batch_size=BATCH, normalize=True,
                                                fast_attention=False),
    }


def timed_rounds(functions: dict[str, Callable[[], np.ndarray]]
                 ) -> tuple[dict[str, list[float]], dict[str, np.ndarray]]:
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


def table(texts: list[str], loaded, st) -> tuple[str, float]:
    """A markdown table of one set's rounds, and the median ratio sentence-transformers / ours."""
    times, outputs = timed_rounds(contenders(texts, loaded, st))
    ours, st_times, eager = (times[n] for n in NAMES)
    rows = [[i + 1, f"{a:.2f}", f"{b:.2f}", f"{c:.2f}", f"{b / a:.2f}", f"{c / a:.2f}"]
            for i, (a, b, c) in enumerate(zip(ours, st_times, eager))]
    ratio = statistics.median(b / a for a, b in zip(ours, st_times))
    rows.append(["median of the rounds' ratios", "", "", "", f"**{ratio:.2f}**",
                 f"{statistics.median(c / a for a, c in zip(ours, eager)):.2f}"])
    lengths = [len(ids) for ids in loaded.tokenizer(texts, truncation=True, max_length=256)["input_ids"]]
    difference = float(np.abs(outputs["ours"] - outputs["sentence-transformers"]).max())
    header = (f"{len(texts):,} texts of {min(lengths)} to {max(lengths)} tokens (mean {np.mean(lengths):.0f}); "
              f"fastest rounds: {len(texts) / min(ours):.0f} texts/s ours, {len(texts) / min(st_times):.0f} "
              f"sentence-transformers, {len(texts) / min(eager):.0f} ours with eager attention; largest "
              f"difference between our vectors and sentence-transformers': {difference:.1e}.\n\n")
    return header + markdown_table(["round", "ours (s)", "sentence-transformers (s)", "ours, eager (s)",
                                    "sentence-transformers / ours", "eager / ours"], rows), ratio


def main() -> None:
    from sentence_transformers import SentenceTransformer

    from vizcore.model.loading import DEFAULT_MODEL, load_model

    loaded = load_model(DEFAULT_MODEL, device="cpu")
    st = SentenceTransformer(str(loaded.model.name_or_path), device="cpu")
    short, ratio = table(sentence_set(), loaded, st)
    long, long_ratio = table(long_set(), loaded, st)
    body = (
        "## Sentence embeddings: `embed` vs sentence-transformers (bench/bench_embed.py)\n\n"
        f"all-MiniLM-L6-v2, batch {BATCH}, CPU, one process, {ROUNDS} rounds, the three taking turns in "
        f"each; {machine()}; {load_note()}"
        + ". Ours = `sentence_vectors(..., normalize=True)`, what `python -m vizcore embed` runs (on the "
        "shared model's SDPA twin: same weights, SDPA attention); sentence-transformers = `encode` on the same "
        "folder; ours, eager = the same call with `fast_attention=False`, on the model as the app loads it "
        "(eager attention, which returns attention weights). A round's runs are close in time, so each "
        "round gives a ratio and the median ratio is the claim (the load on the shared cores changes "
        "between rounds).\n\n"
        f"**Sentences** (the search collection's 519 and 481 pairs of them). {short}\n\n"
        f"**Long texts** (5 to 32 collection sentences each, cut at the model's 256 tokens). {long}\n\n"
        f"Goal (issue 19, on the sentences): sentence-transformers' time / ours >= {GOAL}; measured {ratio:.2f} "
        f"(long texts: {long_ratio:.2f})."
    )
    print(body)
    write_section("embed", body)


if __name__ == "__main__":
    main()
