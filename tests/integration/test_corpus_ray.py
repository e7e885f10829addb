"""The Ray engine on a real local Ray runtime with 2 CPUs (2 actors, one model each) gives the local engine's
numbers bit for bit on the same input: every per-head measure, the relation table, the examples, and each
feed-forward neuron's top 5 tokens (the same tokens in the same order, the same activations: the top-k of
equal numbers is the same list, ties broken by sentence and position in both).

Why bit for bit, and why the local run is pinned to one thread: both engines cut the same shards into the
same batches (the same padding, the same tensor shapes), and each Ray actor runs torch on one thread.
What differed (up to 1.6e-6 on weights near 0.5, in 11,873 of 18,288 example weights and 7,616 of 13,824
head measures) was the local run's thread count alone: torch's CPU matrix products split their work by the
number of threads, so float32 sums are added in another order and round differently in the last bits
(a few ulps of float32, eps = 1.2e-7, compounded over six layers and a softmax). With the local engine on
one thread as well, every value is equal, so the test asserts equality: any difference now is a real
one (another batch, another padding, a lost or doubled sentence), never rounding."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

from vizcore.corpus.engine import Settings, Worker, cached_parser, run_corpus
from vizcore.corpus.ray_engine import ACTOR_THREADS

ROOT = Path(__file__).resolve().parents[2]
COLLECTION = (ROOT / "vizcore" / "data" / "search-collection.txt").read_text(encoding="utf-8").splitlines()
KEYS = {"heads.parquet": ["sentence_id", "layer", "head"], "sentences": ["sentence_id"],
        "relations.parquet": ["relation", "direction", "layer", "head"],
        "examples.parquet": ["relation", "direction", "layer", "head", "sentence_id"],
        "neurons.parquet": ["layer", "neuron", "rank"]}


def read(out: Path, name: str):
    return pq.read_table(out / name).to_pandas().sort_values(KEYS[name], ignore_index=True)


@pytest.fixture(scope="module")
def both(tmp_path_factory, minilm):
    pytest.importorskip("ray")
    folder = tmp_path_factory.mktemp("ray")
    lines = COLLECTION[100:124]
    lines[3:3] = [""]
    (folder / "in.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    common = {"input": str(folder / "in.txt"), "syntax": True, "batch_size": 8, "shard_size": 12, "neurons": 5}
    threads = torch.get_num_threads()
    torch.set_num_threads(ACTOR_THREADS)
    try:
        local = run_corpus(Settings(out=str(folder / "local"), **common), worker=Worker(minilm, cached_parser()))
    finally:
        torch.set_num_threads(threads)
    result = subprocess.run([sys.executable, "-m", "vizcore", "corpus", "--input", common["input"], "--out",
                             str(folder / "ray"), "--engine", "ray", "--workers", "2", "--syntax", "--batch-size", "8",
                             "--shard-size", "12", "--neurons", "5"], capture_output=True, text=True, cwd=ROOT,
                            timeout=240, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert result.returncode == 0, result.stderr
    return folder, local, json.loads(result.stdout), result.stderr


def test_ray_summary_says_what_ran(both):
    _, local, ray_summary, err = both
    assert (ray_summary["engine"], ray_summary["workers"], ray_summary["ray_address"]) == ("ray", 2, "local")
    for key in ("sentences", "skipped", "truncated", "arcs", "unaligned_arcs", "shards"):
        assert ray_summary[key] == local[key], key
    assert ray_summary["sentences"] == 24 and ray_summary["skipped"] == 1 and ray_summary["complete"]
    assert "24/24 sentences (100 %" in err and "Traceback" not in err


@pytest.mark.parametrize("name", list(KEYS))
def test_ray_and_local_results_are_equal(both, name):
    folder = both[0]
    local, ray = read(folder / "local", name), read(folder / "ray", name)
    assert local.shape == ray.shape and list(local.columns) == list(ray.columns)
    numbers = [c for c in local.columns if local[c].dtype.kind == "f"]
    others = [c for c in local.columns if c not in numbers]
    assert local[others].equals(ray[others])
    if numbers:
        np.testing.assert_array_equal(local[numbers].to_numpy(), ray[numbers].to_numpy())
