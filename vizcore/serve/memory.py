"""The server's memory: the C heap (fewer malloc arenas, a fixed mmap threshold: memory a class used goes back to
the system, ``tune_malloc``) and the collector (what is loaded for the server's life kept out of its sight,
``freeze_what_is_loaded``).

Streamlit runs every session's script in a thread of its own, and glibc gives each new thread that allocates an
arena of its own, up to 8 a core (16 here): each arena grows to its threads' largest moment and keeps what it freed
in holes between live blocks. glibc also raises its mmap threshold each time a large block (NumPy arrays, torch
tensors, JSON strings of a few hundred KB) is freed, so the next ones come from the arenas rather than from mmap,
and are not returned when freed. Measured with ``bench/classroom.py --classes 2`` on the default server, 30 students
a class, at rest before each (docs/BENCHMARKS.md, "classroom"): a second class added 141 MB on glibc's defaults,
25 MB with 2 arenas and a fixed 128 KB threshold; the class's times did not change.

glibc reads the same settings from ``MALLOC_ARENA_MAX`` and ``MALLOC_MMAP_THRESHOLD_`` at start: a setting given
there is left as it is. Other C libraries: nothing is changed.
"""

from __future__ import annotations

import ctypes
import gc
import os
import platform
import sys
from typing import Mapping

ARENAS = 2  # the main thread's arena and one for every other thread: the 2 cores' worth of concurrent allocation
MMAP_THRESHOLD = 128 * 1024  # glibc's own starting value, kept fixed (setting it turns its raising off)
_M_MMAP_THRESHOLD, _M_ARENA_MAX = -3, -8  # glibc's malloc.h
SETTINGS = {"MALLOC_ARENA_MAX": (_M_ARENA_MAX, ARENAS), "MALLOC_MMAP_THRESHOLD_": (_M_MMAP_THRESHOLD, MMAP_THRESHOLD)}


def tune_malloc(environ: Mapping[str, str] | None = None) -> dict[str, int]:
    """Set glibc's arena limit and mmap threshold (``SETTINGS``) unless the environment sets them; the settings
    made, by their environment variable's name ({} off glibc). Call it first thing in the process, before any
    other thread allocates: glibc fixes its arena limit the first time a thread needs a new arena."""
    environ = os.environ if environ is None else environ
    if platform.libc_ver()[0] != "glibc":
        return {}
    libc = ctypes.CDLL(None)
    made = {}
    for name, (option, value) in SETTINGS.items():
        if not environ.get(name, "").strip() and libc.mallopt(option, value) == 1:
            made[name] = value
    return made


def freeze_what_is_loaded(what: str = "at start") -> None:
    """Streamlit collects all garbage after every page run (``runner.postScriptGC``), and a full collection walks
    every object the process tracks: with torch, transformers and the model loaded, about 600,000, 0.38 s a run,
    with the interpreter's lock held (bench/classroom.py's profile of 30 students: 36 % of the server's samples, a
    class's runs one after another). What is loaded by now stays for the server's life: ``gc.freeze`` moves it out
    of the collector's sight (a full collection then walks only what the sessions made). Called again after each
    model a page loads later (ui/state.py's ``_load_model``), whose objects would otherwise be walked at every run."""
    gc.collect()
    gc.freeze()
    print(f"vizcore: {gc.get_freeze_count():,} objects loaded {what} left out of garbage collection", file=sys.stderr)
