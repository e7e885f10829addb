"""The server's class settings: a wrong one stops `python -m ui.launch` (`make serve`) at once, in one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("name", "value"), [("VIZCORE_TORCH_THREADS", "two"), ("VIZCORE_QUEUE_BATCH", "0"),
                                           ("VIZCORE_STREAMS_PER_ADDRESS", "-3")])
def test_a_wrong_setting_stops_the_server_before_it_starts_and_says_which(name, value):
    env = {**os.environ, name: value}
    done = subprocess.run([sys.executable, "-m", "ui.launch", "--server.port", "1"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [f"vizcore: {name}={value!r} is not a valid setting: give a whole "
                                                "number above 0."]


FREEZE = """
import gc
import transformers  # what the warm-up has loaded by then: torch, transformers, the model
from vizcore.model.loading import load_model
from vizcore.model.catalog import DEFAULT_MODEL
model = load_model(DEFAULT_MODEL, device="cpu")
from vizcore.serve.memory import freeze_what_is_loaded
before = len(gc.get_objects())
freeze_what_is_loaded()
print(before, len(gc.get_objects()), gc.get_freeze_count())
"""


def test_the_warm_up_leaves_what_it_loaded_out_of_the_full_collection_after_every_run():
    """Streamlit's collection after each page run walks what ``gc.get_objects`` lists: after the warm-up's freeze, a
    few objects, not the hundreds of thousands of the loaded stack (ui/launch.py, bench/classroom.py's profile)."""
    done = subprocess.run([sys.executable, "-c", FREEZE], cwd=ROOT, capture_output=True, text=True, timeout=240,
                          env={**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr
    before, after, frozen = map(int, done.stdout.split())
    assert before > 100_000 and frozen >= before - 1_000 and after < before / 100, (before, after, frozen)
    assert "objects loaded at start left out of garbage collection" in done.stderr
