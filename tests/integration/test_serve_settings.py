"""The server's class settings: a wrong one stops `python -m ui.launch` (`make serve`) at once, in one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("name", "value"), [("VIZCORE_TORCH_THREADS", "two"), ("VIZCORE_QUEUE_BATCH", "0")])
def test_a_wrong_setting_stops_the_server_before_it_starts_and_says_which(name, value):
    env = {**os.environ, name: value}
    done = subprocess.run([sys.executable, "-m", "ui.launch", "--server.port", "1"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [f"vizcore: {name}={value!r} is not a valid setting: give a whole "
                                                "number above 0."]
