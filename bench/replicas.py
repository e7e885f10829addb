"""``python -m bench.replicas --students 30 --replicas 2``: one class on N replicas behind nginx vs one process.

Starts the server (``--replicas 1``: one ``python -m ui.launch``, as ``make run``; more: ``python -m
deploy.replicas``), waits until every replica answers, then N students (tests/support/streamlit_ws.py,
Streamlit's own protocol, no browser) go through three waves together: Home with a sentence of their own
(the HTTP page load, the websocket, the first run), the Explorer with it, then a new sentence typed into the
sidebar. For each wave: the time from the request to ``script_finished``, p50 / p95 / max, and errors (an
exception on the page, a run that does not finish, a dropped socket). Also the servers' CPU seconds per
student and page run, their memory before and after, and the machine's load average before and after.
A stand-in for bench/classroom.py's replica runs until that lands.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from tests.support.processes import descendants, free_port_block
from tests.support.streamlit_ws import PageRun, Visitor

ROOT = Path(__file__).resolve().parents[1]
WAVES = ("Home", "Explorer", "new sentence")
SENTENCE_WIDGET = "text_area:Sentence"
TICKS = os.sysconf("SC_CLK_TCK")
READY = ("opening heatmaps", "warm-up skipped")  # ui/launch.py's lines once the warm-up is over


def _cpu_and_rss(root: int) -> tuple[float, float]:
    """CPU seconds (user + system) and resident MB of every process below ``root``, ``root`` included."""
    cpu, rss = 0.0, 0.0
    for pid in [root, *descendants(root)]:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()
            cpu += (int(fields[11]) + int(fields[12])) / TICKS
            rss += int(fields[21]) * os.sysconf("SC_PAGE_SIZE") / 2**20
        except (OSError, IndexError):
            continue
    return cpu, rss


def _start(replicas: int, port: int, run_dir: Path) -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": str(max(1, (os.cpu_count() or 1) // replicas))}
    if replicas == 1:
        command = [sys.executable, "-m", "ui.launch", "--server.port", str(port), "--server.address", "127.0.0.1",
                   "--server.headless", "true"]
    else:
        command = [sys.executable, "-m", "deploy.replicas", "--replicas", str(replicas), "--port", str(port),
                   "--run-dir", str(run_dir)]
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=open(run_dir / "server.log", "wb"),
                            stderr=subprocess.STDOUT, start_new_session=True)


def _wait_ready(logs: list[Path], server: subprocess.Popen, timeout: float = 300) -> None:
    """Until every replica's warm-up has said it is ready (model loaded, opening heatmaps checked)."""
    deadline = time.monotonic() + timeout
    while not all(log.is_file() and any(mark in log.read_text(errors="replace") for mark in READY) for log in logs):
        if server.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the server did not get ready; logs: {', '.join(map(str, logs))}")
        time.sleep(0.5)


async def _student(visitor: Visitor, waves: dict[str, list], errors: list[str], start: asyncio.Barrier) -> None:
    """One student's three waves; each wave starts for everyone at once (a student who failed waits along)."""
    async def home() -> PageRun:
        await asyncio.to_thread(visitor.load)
        await visitor.open()
        return await visitor.run()

    async def explorer() -> PageRun:
        visitor.page = "attention"
        return await visitor.run()

    async def new_sentence() -> PageRun:
        if SENTENCE_WIDGET not in last.widgets:
            raise LookupError("no sentence box on the Explorer")
        sentence = visitor.query["text"].replace("first", "second")
        run = await visitor.run(typed={last.widgets[SENTENCE_WIDGET]: sentence})
        if sentence.encode() not in run.shown:
            run.exceptions.append("the new sentence is not on the page")
        return run

    failed, last = False, None
    for wave, step in zip(WAVES, (home, explorer, new_sentence)):
        await start.wait()
        if failed:
            continue
        try:
            last = await step()
        except Exception as error:  # a dropped socket or a run that never finished: counted, not raised
            errors.append(f"{wave}: {type(error).__name__} {error}")
            failed = True
            continue
        waves[wave].append(last.seconds)
        if last.exceptions or last.status != "FINISHED_SUCCESSFULLY":
            errors.append(f"{wave}: {last.status} {last.exceptions}")
    await visitor.close()


async def _class(base: str, students: int) -> tuple[dict[str, list], list[str], list[Visitor]]:
    waves: dict[str, list] = {wave: [] for wave in WAVES}
    errors: list[str] = []
    visitors = [Visitor(base, "", {"text": f"Student {i} writes a first sentence about the sea."})
                for i in range(students)]
    start = asyncio.Barrier(students)  # each wave starts for everyone at once, as when the teacher says "go"
    await asyncio.gather(*(_student(visitor, waves, errors, start) for visitor in visitors))
    return waves, errors, visitors


def measure(students: int, replicas: int) -> dict:
    run_dir = Path(tempfile.mkdtemp(prefix="bench-replicas-"))
    port = free_port_block(replicas + 1)
    server = _start(replicas, port, run_dir)
    try:
        logs = [run_dir / "server.log"] if replicas == 1 else [run_dir / f"r{i}.log" for i in range(1, replicas + 1)]
        _wait_ready(logs, server)
        time.sleep(3)  # the warm-up's last step, plotly's first figure
        load_before = os.getloadavg()
        cpu_before, rss_before = _cpu_and_rss(server.pid)
        started = time.perf_counter()
        waves, errors, visitors = asyncio.run(_class(f"http://127.0.0.1:{port}", students))
        seconds = time.perf_counter() - started
        cpu_after, rss_after = _cpu_and_rss(server.pid)
        spread = {}
        for visitor in visitors:
            for name in set(visitor.replicas) - {""}:
                spread[name] = spread.get(name, 0) + 1
        return {"students": students, "replicas": replicas, "waves": waves, "errors": errors, "seconds": seconds,
                "cpu_per_student_run": (cpu_after - cpu_before) / max(1, students * len(WAVES)),
                "rss_before": rss_before, "rss_after": rss_after, "load_before": load_before,
                "load_after": os.getloadavg(), "spread": spread}
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)


def measure_url(url: str, students: int) -> dict:
    """The same class against a server that runs elsewhere (a cluster's Ingress): times and errors only."""
    load = os.getloadavg()
    started = time.perf_counter()
    waves, errors, visitors = asyncio.run(_class(url.rstrip("/"), students))
    spread: dict[str, int] = {}
    for visitor in visitors:
        for name in set(visitor.replicas) - {""}:
            spread[name] = spread.get(name, 0) + 1
    return {"students": students, "replicas": "?", "waves": waves, "errors": errors,
            "seconds": time.perf_counter() - started, "cpu_per_student_run": float("nan"), "rss_before": float("nan"),
            "rss_after": float("nan"), "load_before": load, "load_after": os.getloadavg(), "spread": spread}


def report(result: dict) -> str:
    cells = []
    for wave in WAVES:
        times = np.array(result["waves"][wave])
        cells.append(f"{np.percentile(times, 50):.2f} / {np.percentile(times, 95):.2f} / {times.max():.2f} s"
                     if len(times) else "-")
    load = f"{result['load_before'][0]:.1f} -> {result['load_after'][0]:.1f}"
    spread = ", ".join(f"{k} {v}" for k, v in sorted(result["spread"].items())) or "-"
    return (f"| {result['students']} | {result['replicas']} | {' | '.join(cells)} | {len(result['errors'])} | "
            f"{result['cpu_per_student_run']:.2f} | {result['rss_before']:.0f} -> {result['rss_after']:.0f} MB | "
            f"{load} | {spread} |")


HEADER = ("| students | replicas | Home p50 / p95 / max | Explorer p50 / p95 / max | new sentence p50 / p95 / max "
          "| errors | CPU-s per student per page run | RSS (all replicas) | load (1 min) | students per replica |\n"
          "|---|---|---|---|---|---|---|---|---|---|")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.replicas", description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 2], help="one run per value (1: no nginx)")
    parser.add_argument("--url", help="visit this running server instead of starting one (e.g. a cluster's Ingress)")
    args = parser.parse_args(argv)
    print(HEADER, flush=True)
    for replicas in [None] if args.url else args.replicas:
        result = measure_url(args.url, args.students) if args.url else measure(args.students, replicas)
        print(report(result), flush=True)
        for error in result["errors"][:5]:
            print(f"  error: {error}", file=sys.stderr)


if __name__ == "__main__":
    main()
