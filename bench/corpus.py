"""Speed of ``python -m vizcore corpus``: the local engine against a plain batched transformers loop, and the Ray
engine with 1 and 2 workers (its overhead on this machine).

Run: ``.venv/bin/python -m bench.corpus`` (``make bench``). Writes its section of docs/BENCHMARKS.md.
The embedded all-MiniLM-L6-v2 on the CPU, batch 32, torch on one thread per process (each Ray actor holds
one CPU and one thread too), on the first ``SENTENCES`` sentences of the Corpus page's demo
(``vizcore/data/corpus-demo.txt``), without ``--syntax``:

* ours: ``run_corpus`` with the local engine, the whole job: reading the file, tokenising, the forward
  passes with attention weights, Clark et al.'s eight measures per head and sentence, the Parquet shards
  and the summary;
* plain: ``AutoModel`` (eager attention) over the same sentences sorted by length in batches of 32, with
  ``output_attentions=True``, each sentence's weights copied out to numpy: what any script that reads
  attention over a corpus does, and nothing more.

The two take turns for ``ROUNDS`` rounds; each round gives a ratio (plain's time / ours) and the median
is the claim (goal: >= 0.9). Ray: one run with 1 worker and one with 2, each starting its own local
runtime, with shards of ``RAY_SHARD`` sentences (a Ray block is one shard); the summary's
``ray_start_seconds`` and ``ray_first_records_seconds`` split the startup from the throughput once the
actors are running.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.report import load_note, machine, markdown_table, write_section

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "vizcore" / "data" / "corpus-demo.txt"
SENTENCES = 600
BATCH = 32
ROUNDS = 5
RAY_SHARD = 64  # a Ray block is a shard: 10 blocks, so both actors have work
GOAL = 0.9


def plain_loop(model, tokenizer, texts: list[str]) -> int:
    """Forward passes with attention over length-sorted batches; returns how many weights were read."""
    import torch

    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    read = 0
    with torch.inference_mode():
        for start in range(0, len(order), BATCH):
            batch = [texts[i] for i in order[start:start + BATCH]]
            encoded = tokenizer(batch, padding=True, truncation=True, return_tensors="pt")
            attentions = torch.stack(model(**encoded, output_attentions=True).attentions, 1)  # (B, L, H, T, T)
            for b, n in enumerate(encoded["attention_mask"].sum(1).tolist()):
                read += np.ascontiguousarray(attentions[b, :, :, :n, :n].numpy()).size
    return read


def local_vs_plain(source: Path, texts: list[str]) -> tuple[str, float, float]:
    import torch
    from transformers import AutoModel, AutoTokenizer

    from vizcore.corpus.engine import Settings, Worker, run_corpus
    from vizcore.model.loading import DEFAULT_MODEL, load_model

    torch.set_num_threads(1)
    loaded = load_model(DEFAULT_MODEL, device="cpu")
    folder = str(loaded.model.name_or_path)
    model = AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    scratch = Path(tempfile.mkdtemp(prefix="bench-corpus-"))

    def ours() -> None:
        shutil.rmtree(scratch / "out", ignore_errors=True)
        run_corpus(Settings(input=str(source), out=str(scratch / "out"), batch_size=BATCH), worker=Worker(loaded))

    ours(), plain_loop(model, tokenizer, texts)  # warm-up
    rows, ratios, best = [], [], (float("inf"), float("inf"))
    contenders = [("ours", ours), ("plain", lambda: plain_loop(model, tokenizer, texts))]
    for round_ in range(ROUNDS):
        timed = {}
        for name, fn in contenders if round_ % 2 == 0 else contenders[::-1]:  # alternate who goes first
            start = time.perf_counter()
            fn()
            timed[name] = time.perf_counter() - start
            print(f"round {round_ + 1}: {name} {timed[name]:.2f} s", flush=True)
        ratios.append(timed["plain"] / timed["ours"])
        best = (min(best[0], timed["ours"]), min(best[1], timed["plain"]))
        rows.append([round_ + 1, f"{timed['ours']:.2f}", f"{timed['plain']:.2f}", f"{ratios[-1]:.2f}"])
    ratio = statistics.median(ratios)
    rows.append(["median of the rounds' ratios", "", "", f"**{ratio:.2f}**"])
    shutil.rmtree(scratch, ignore_errors=True)
    table = markdown_table(["round", "ours: local engine (s)", "plain transformers loop (s)", "plain / ours"], rows)
    return table, ratio, len(texts) / best[0]


def ray_run(source: Path, workers: int) -> dict:
    import json

    out = Path(tempfile.mkdtemp(prefix="bench-corpus-ray-")) / "out"
    result = subprocess.run([sys.executable, "-m", "vizcore", "corpus", "--input", str(source), "--out", str(out),
                             "--engine", "ray", "--workers", str(workers), "--batch-size", str(BATCH),
                             "--shard-size", str(RAY_SHARD)],
                            capture_output=True, text=True, cwd=ROOT, env={**os.environ, "OMP_NUM_THREADS": "1"})
    shutil.rmtree(out.parent, ignore_errors=True)
    if result.returncode != 0:
        raise SystemExit(result.stderr)
    return json.loads(result.stdout)


def ray_rows(source: Path, count: int) -> tuple[list[list[object]], dict[int, float]]:
    rows, steady = [], {}
    for workers in (1, 2):
        s = ray_run(source, workers)
        running = s["seconds"] - s["ray_start_seconds"] - s["ray_first_records_seconds"]
        steady[workers] = (count - RAY_SHARD) / running  # the first shard's time is in "first records"
        rows.append([workers, f"{s['seconds']:.1f}", f"{s['ray_start_seconds']:.1f}",
                     f"{s['ray_first_records_seconds']:.1f}", f"{count / s['seconds']:.1f}",
                     f"{steady[workers]:.1f}"])
        print(rows[-1], flush=True)
    return rows, steady


def main() -> None:
    texts = DEMO.read_text(encoding="utf-8").splitlines()[:SENTENCES]
    scratch = Path(tempfile.mkdtemp(prefix="bench-corpus-in-"))
    source = scratch / "in.txt"
    source.write_text("\n".join(texts) + "\n", encoding="utf-8")
    table, ratio, local_rate = local_vs_plain(source, texts)
    rows, steady = ray_rows(source, len(texts))
    shutil.rmtree(scratch, ignore_errors=True)
    body = (
        "## Corpus job: local engine vs a plain transformers loop, and Ray (bench/corpus.py)\n\n"
        f"all-MiniLM-L6-v2, the first {len(texts):,} sentences of the Corpus demo, batch {BATCH}, CPU, no "
        f"--syntax; {machine()}; {os.cpu_count()} cores; {load_note()}"
        + ". Ours = the whole local job (read, tokenise, forward with attention, eight measures per head and "
        "sentence, Parquet shards, summary); plain = `AutoModel` with eager attention over the same "
        "length-sorted batches, `output_attentions=True`, each sentence's weights copied to numpy.\n\n"
        f"{table}\n\n"
        f"Goal (issue 21): plain's time / ours >= {GOAL}; measured **{ratio:.2f}**. Fastest local round: "
        f"{local_rate:.0f} sentences/s on one thread.\n\n"
        f"**Ray**, local runtime started by the run (`ray.init(num_cpus=workers)`), shards of {RAY_SHARD} "
        "sentences (one Ray block each), one actor per worker, one model and one torch thread each. Start = "
        "starting Ray; first records = from then until the first shard came back (actors start, import torch, "
        "load the model, compute the first shard); steady = the other shards' sentences / the rest.\n\n"
        + markdown_table(["workers", "total (s)", "start (s)", "first records (s)", "sentences/s overall",
                          "sentences/s steady"], rows)
        + f"\n\nSteady throughput per worker: {steady[1]:.1f} sentences/s with 1 worker, {steady[2] / 2:.1f} with 2 "
        f"(2 workers / 1 worker: {steady[2] / steady[1]:.2f}x on {os.cpu_count()} shared cores)."
    )
    print(body)
    write_section("corpus", body)


if __name__ == "__main__":
    main()
