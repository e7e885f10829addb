"""What a class costs the rooms' shared store (docs/SCALE.md, "A class across replicas"): N students polling their
teacher's room once a second through ``RedisRooms``, for S seconds.

Run: ``.venv/bin/python -m bench.rooms [--students 30] [--seconds 30] [--replicas 2] [--url redis://...]
[--no-write]``. Without ``--url`` it starts its own redis-server on a free port (tests/support/redis_server.py, the
command deploy/replicas.py runs). The students are threads, as Streamlit's sessions are, shared out over
``--replicas`` clients (one ``RedisRooms`` each, as each app replica has one): each reads the room's position every
second, from a random start within the first second, and answers each new step's question once. The teacher moves
every 5 seconds and reads the tally every second (the chart). Measured: each call's time (p50 / p95 / max), how
long after a move each student saw it (its poll included), the redis-server's CPU (from /proc) and the clients'
CPU per call. Writes the "rooms" section of docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path

from bench.report import markdown_table, uptime, write_section
from tests.support.redis_server import redis_server
from vizcore.lessons.rooms import MemoryRooms
from vizcore.lessons.rooms_redis import RedisRooms

POLL = 1.0  # seconds between a student's reads, as the Lessons page polls
MOVE_EVERY = 5.0


def percentile(values: list[float], share: float) -> float:
    """Nearest rank, as bench/classroom.py reports."""
    return sorted(values)[max(0, math.ceil(share * len(values)) - 1)]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


class Class:
    """One class's run: the calls' times by kind, each student's delay in seeing each move."""

    def __init__(self, clients: list[RedisRooms], students: int, seconds: float) -> None:
        self.clients, self.students, self.seconds = clients, students, seconds
        self.code, self.secret = clients[0].open("attention", 1, "The cat sat on the mat.")
        self.times: dict[str, list[float]] = {"student reads the position": [], "student answers": [],
                                              "teacher reads the tally": [], "teacher moves": []}
        self.moved: dict[int, float] = {0: time.monotonic()}  # move count -> when the teacher made it
        self.follow: list[float] = []
        self.lock = threading.Lock()
        self.end = time.monotonic() + seconds

    def timed(self, kind: str, call, *args):
        start = time.perf_counter()
        result = call(*args)
        elapsed = time.perf_counter() - start
        with self.lock:
            self.times[kind].append(elapsed)
        return result

    def student(self, i: int) -> None:
        rooms = self.clients[i % len(self.clients)]
        tick = time.monotonic() + random.random() * POLL
        seen = 0
        while tick < self.end:
            time.sleep(max(0.0, tick - time.monotonic()))
            where = self.timed("student reads the position", rooms.position, self.code)
            if where.moves != seen:
                seen = where.moves
                with self.lock:
                    self.follow.append(time.monotonic() - self.moved[seen])
                self.timed("student answers", rooms.answer, self.code, f"s{i}", where.lesson, where.step,
                           random.choice(["yes", "no", "it depends"]))
            tick += POLL

    def teacher(self) -> None:
        rooms, step, tick = self.clients[0], 1, time.monotonic()
        next_move = tick + MOVE_EVERY
        while tick < self.end:
            time.sleep(max(0.0, tick - time.monotonic()))
            if tick >= next_move:
                step += 1
                with self.lock:
                    self.moved[step - 1] = time.monotonic()  # the room opened on step 1: move k goes to step k + 1
                self.timed("teacher moves", rooms.move, self.code, self.secret, "attention", step, "")
                next_move += MOVE_EVERY
            self.timed("teacher reads the tally", rooms.tally, self.code, "attention", step)
            tick += POLL

    def run(self) -> float:
        """Runs the class; the clients' CPU seconds (this process) over the run."""
        threads = [threading.Thread(target=self.student, args=(i,)) for i in range(self.students)]
        threads.append(threading.Thread(target=self.teacher))
        cpu = time.process_time()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return time.process_time() - cpu


def memory_read_ms(reads: int = 20_000) -> float:
    """The in-memory store's read, for scale: p50 in ms."""
    rooms = MemoryRooms()
    code, _ = rooms.open("attention", 1, "")
    times = []
    for _ in range(reads):
        start = time.perf_counter()
        rooms.position(code)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def server_share(pid: int | None, seconds: float, work=None) -> tuple[float | None, float]:
    """redis-server's CPU as a share of one core while ``work()`` runs (or while idle for ``seconds``; None for a
    store not started here), and the wall time."""
    cpu, started = cpu_seconds(pid) if pid else None, time.monotonic()
    work() if work else time.sleep(seconds)
    wall = time.monotonic() - started
    return ((cpu_seconds(pid) - cpu) / wall if pid else None), wall


def burst(clients: list[RedisRooms], reads: int, threads: int = 8) -> None:
    """``reads`` position reads as fast as ``threads`` threads make them: the store's cost per read."""
    code = clients[0].open("attention", 1, "")[0]

    def reader(i: int) -> None:
        for _ in range(reads // threads):
            clients[i % len(clients)].position(code)

    workers = [threading.Thread(target=reader, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def capacity(pid: int, clients: list[RedisRooms], reads: int = 20_000) -> str:
    share, wall = server_share(pid, 0, lambda: burst(clients, reads))
    per_read = share * wall / reads
    return (f"A burst of {reads:,} reads from 8 threads: {reads / wall:,.0f} reads a second (this one Python process "
            f"is the limit), redis-server's CPU {per_read * 1e6:.0f} µs per read, so one core of it serves about "
            f"{round(1 / per_read, -3):,.0f} reads a second.")


def measure(url: str, server_pid: int | None, args: argparse.Namespace) -> str:
    clients = [RedisRooms(url) for _ in range(args.replicas)]
    for rooms in clients:  # connections and scripts ready before the clock starts
        rooms.position(rooms.open("attention", 1, "")[0])
    before = uptime()
    idle = server_share(server_pid, 10.0)[0] if server_pid else None
    lesson = Class(clients, args.students, args.seconds)
    result: dict[str, float] = {}
    busy, wall = server_share(server_pid, 0, lambda: result.update(cpu=lesson.run()))
    client_cpu = result["cpu"]
    calls = sum(len(times) for times in lesson.times.values())
    rows = [[kind, len(times), f"{percentile(times, 0.5) * 1e3:.2f}", f"{percentile(times, 0.95) * 1e3:.2f}",
             f"{max(times) * 1e3:.2f}"] for kind, times in lesson.times.items()]
    follow = lesson.follow
    server = (f"redis-server's CPU: {busy * 100:.2f} % of one core during the class ({calls / wall:.0f} calls a "
              f"second), {idle * 100:.2f} % idle (its own timers, 10 s before the class)"
              if server_pid else "redis-server's CPU: not measured (an outside store)")
    return (
        "## Rooms: a class polling the shared store (`python -m bench.rooms`)\n\n"
        f"{args.students} students and their teacher for {wall:.0f} s through `RedisRooms` (redis-py, one client per "
        f"replica, {args.replicas} replicas simulated in one process) against Debian's redis-server on localhost: each "
        f"student reads the room every {POLL:.0f} s and answers each new step once; the teacher moves every "
        f"{MOVE_EVERY:.0f} s and reads the tally every second. Times are each call's, from the app's side (ms).\n\n"
        + markdown_table(["call", "calls", "p50 ms", "p95 ms", "max ms"], rows)
        + f"\n\n{server}; the clients' CPU: {client_cpu / calls * 1e6:.0f} µs per call (Python, redis-py, the "
        f"threads), {client_cpu / wall * 100:.1f} % of a core in all. A student saw a move after "
        f"{percentile(follow, 0.5):.2f} s (p50), {percentile(follow, 0.95):.2f} s (p95), {max(follow):.2f} s (max): "
        f"the wait for its next poll, as designed (goal: within 2 s). For scale, the in-memory store's read: "
        f"{memory_read_ms():.4f} ms (p50).\n\n"
        + (capacity(server_pid, clients) + "\n\n" if server_pid else "")
        +
        f"Load before: `{before}`; after: `{uptime()}`."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--replicas", type=int, default=2, help="clients the students are shared out over")
    parser.add_argument("--url", help="an outside store (redis://host:port/db); else a redis-server started here")
    parser.add_argument("--no-write", action="store_true", help="print the section, leave docs/ alone")
    args = parser.parse_args()
    if args.url:
        body = measure(args.url, None, args)
    else:
        with tempfile.TemporaryDirectory(prefix="bench-rooms-") as run_dir, redis_server(Path(run_dir)) as server:
            body = measure(server.url, server.process.pid, args)
    print(body)
    if not args.no_write:
        write_section("rooms", body)


if __name__ == "__main__":
    main()
