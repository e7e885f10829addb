"""The Ray engine on a real local Ray runtime with 2 CPUs (2 actors, one model each) gives the local engine's
numbers (<= 1e-6) on the same input: every per-head measure, the relation table and the examples."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from vizcore.corpus.engine import Settings, Worker, cached_parser, run_corpus

ROOT = Path(__file__).resolve().parents[2]
COLLECTION = (ROOT / "vizcore" / "data" / "search-collection.txt").read_text(encoding="utf-8").splitlines()
KEYS = {"heads.parquet": ["sentence_id", "layer", "head"], "sentences": ["sentence_id"],
        "relations.parquet": ["relation", "direction", "layer", "head"],
        "examples.parquet": ["relation", "direction", "layer", "head", "sentence_id"]}


def read(out: Path, name: str):
    return pq.read_table(out / name).to_pandas().sort_values(KEYS[name], ignore_index=True)


@pytest.fixture(scope="module")
def both(tmp_path_factory, minilm):
    pytest.importorskip("ray")
    folder = tmp_path_factory.mktemp("ray")
    lines = COLLECTION[100:124]
    lines[3:3] = [""]
    (folder / "in.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    common = {"input": str(folder / "in.txt"), "syntax": True, "batch_size": 8, "shard_size": 12}
    local = run_corpus(Settings(out=str(folder / "local"), **common), worker=Worker(minilm, cached_parser()))
    result = subprocess.run([sys.executable, "-m", "vizcore", "corpus", "--input", common["input"], "--out",
                             str(folder / "ray"), "--engine", "ray", "--workers", "2", "--syntax", "--batch-size", "8",
                             "--shard-size", "12"], capture_output=True, text=True, cwd=ROOT, timeout=240,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})
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
        np.testing.assert_allclose(local[numbers].to_numpy(), ray[numbers].to_numpy(), atol=1e-6, rtol=0)
