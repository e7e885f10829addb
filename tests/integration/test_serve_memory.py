"""The server's C heap (vizcore/serve/memory.py): glibc told to keep 2 arenas and a fixed mmap threshold, checked in a
process of its own by what glibc itself reports, against the same probe on glibc's defaults."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from vizcore.serve.memory import ARENAS, tune_malloc

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc settings")

PROBE = r"""
import ctypes, json, os, sys, tempfile, threading
from vizcore.serve.memory import tune_malloc
made = tune_malloc() if sys.argv[1] == "tuned" else {}
libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
class Info(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]
libc.mallinfo2.restype = Info
# glibc's defaults raise the mmap threshold to a freed mmapped block's size: a 4 MB block freed, then 512 KB
libc.free(libc.malloc(4 << 20))
before = libc.mallinfo2().hblks
block = libc.malloc(512 << 10)
mmapped = libc.mallinfo2().hblks - before
libc.free(block)
# eight threads that allocate at the same moment, as a class's script threads do
together = threading.Barrier(8)
def allocate():
    kept = libc.malloc(1000)
    together.wait()
    libc.free(kept)
threads = [threading.Thread(target=allocate) for _ in range(8)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
libc.fopen.restype, libc.fopen.argtypes = ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_char_p]
libc.malloc_info.argtypes, libc.fclose.argtypes = [ctypes.c_int, ctypes.c_void_p], [ctypes.c_void_p]
with tempfile.TemporaryDirectory() as folder:
    path = os.path.join(folder, "malloc.xml")
    report = libc.fopen(path.encode(), b"w")
    libc.malloc_info(0, report)
    libc.fclose(report)
    heaps = open(path).read().count("<heap nr=")
print(json.dumps({"made": made, "mmapped": mmapped, "arenas": heaps}))
"""


def probe(kind: str, **environ: str) -> dict:
    env = {key: value for key, value in os.environ.items() if not key.startswith("MALLOC_")}
    done = subprocess.run([sys.executable, "-c", PROBE, kind], cwd=ROOT, env={**env, **environ}, capture_output=True,
                          text=True, timeout=60, check=True)
    return json.loads(done.stdout)


def test_tuned_threads_share_two_arenas_and_large_blocks_stay_mmapped():
    defaults, tuned = probe("defaults"), probe("tuned")
    assert defaults["arenas"] > ARENAS and defaults["mmapped"] == 0  # the probe sees what the settings change
    assert tuned["made"] == {"MALLOC_ARENA_MAX": 2, "MALLOC_MMAP_THRESHOLD_": 128 * 1024}
    assert tuned["arenas"] <= ARENAS and tuned["mmapped"] == 1


def test_a_setting_in_the_environment_is_left_to_glibc():
    given = probe("tuned", MALLOC_ARENA_MAX="4")
    assert given["made"] == {"MALLOC_MMAP_THRESHOLD_": 128 * 1024} and ARENAS < given["arenas"] <= 4
    assert tune_malloc({"MALLOC_ARENA_MAX": "4", "MALLOC_MMAP_THRESHOLD_": "65536"}) == {}
