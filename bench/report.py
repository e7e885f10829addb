"""Write one benchmark's table into docs/BENCHMARKS.md, between its own markers, leaving the rest."""

from __future__ import annotations

import os
import platform
import re
import statistics
import time
from pathlib import Path

import torch

DOC = Path(__file__).resolve().parents[1] / "docs" / "BENCHMARKS.md"
HEADER = (
    "# Benchmarks\n\n"
    "Every number here is written by a script in `bench/` (run `make bench`, or the script named in "
    "each section). Claims are ratios against a baseline measured in the same run on the same "
    "machine, so they carry over to other machines better than absolute times.\n"
)


def timed(fn, repeats: int, pick=statistics.median) -> float:
    """Seconds per call of ``fn`` after one warm-up call: ``pick`` (median, or min: the run least
    disturbed on shared cores) of ``repeats`` timed calls."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return pick(times)


def timed_pair(first, second, repeats: int, pick=min) -> tuple[float, float]:
    """``timed`` for two functions run in turn (first, second, first, ...), so a load that comes and
    goes on shared cores falls on both alike; ``pick`` (min by default) of each one's times."""
    first(), second()
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeats):
        for fn, kept in ((first, times[0]), (second, times[1])):
            start = time.perf_counter()
            fn()
            kept.append(time.perf_counter() - start)
    return pick(times[0]), pick(times[1])


def machine() -> str:
    return (f"{platform.machine()}, {torch.get_num_threads()} torch threads, torch {torch.__version__}, "
            f"Python {platform.python_version()}")


def load_note() -> str:
    """The machine's 1-minute load average now, said as the benches' headers say it."""
    load = os.getloadavg()[0]
    busy = " (above the core count: other work competed for the CPU)" if load > (os.cpu_count() or 1) else ""
    return f"1-minute load average at the end: {load:.1f}{busy}"


def uptime() -> str:
    """``uptime``'s line (time, up, users, load averages 1/5/15 min): the load the other engineers put on the cores."""
    import subprocess

    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def markdown_table(header: list[str], rows: list[list[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def write_section(name: str, body: str) -> Path:
    begin, end = f"<!-- begin:{name} -->", f"<!-- end:{name} -->"
    text = DOC.read_text() if DOC.exists() else HEADER
    block = f"{begin}\n{body.strip()}\n{end}"
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.S)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block + "\n"
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(text)
    return DOC
