"""Defect 2 of issue 15: every built-in loads in a fresh interpreter, with nothing imported first.

The masked-LM built-in used to register itself when ``vizcore.mlm.weights`` was imported, so a fresh
server's ``/attention?model=minilm-mlm-tuned`` failed until a session had opened Fill-mask. A fresh
subprocess is the only honest check: in this process another test may have imported that module.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from vizcore.attention.extract import extract_attention
from vizcore.model.catalog import DEFAULT_MODEL, MLM_MODEL
from vizcore.model.loading import load_model

ROOT = Path(__file__).resolve().parents[2]
TEXT = "The capital of France is Paris."
FRESH_LOAD = f"""
import json, sys
from vizcore.model.loading import load_model
before = sorted(m for m in sys.modules if m.startswith("vizcore.mlm"))
loaded = load_model({MLM_MODEL!r}, device="cpu")
from vizcore.attention.extract import extract_attention
run = extract_attention(loaded, {TEXT!r})
print(json.dumps({{"before": before, "name": loaded.name, "attention": run.attention[:, 0].tolist()}}))
"""


def fresh(*argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, *argv], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def head_one(name: str) -> np.ndarray:
    """Head 1 of every layer for the sentence, computed in this process: ``[layer, query, key]``."""
    return extract_attention(load_model(name, device="cpu"), TEXT).attention[:, 0]


def test_a_fresh_interpreter_loads_the_masked_lm_builtin_by_name():
    out = fresh("-c", FRESH_LOAD)
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["before"] == [] and report["name"] == MLM_MODEL
    attention = np.asarray(report["attention"], dtype=np.float32)
    np.testing.assert_allclose(attention, head_one(MLM_MODEL), atol=1e-6)
    assert not np.allclose(attention, head_one(DEFAULT_MODEL), atol=1e-3)  # the tuned tensors were applied


def test_the_models_command_lists_every_builtin_as_offline():
    out = fresh("-m", "vizcore", "models", "--format", "json")
    assert out.returncode == 0, out.stderr
    rows = {row["name"]: row for row in json.loads(out.stdout)["models"]}
    assert rows[MLM_MODEL]["offline"] is True and rows[MLM_MODEL]["heads"] == ["base", "mlm"]
    assert rows[DEFAULT_MODEL]["offline"] is True
