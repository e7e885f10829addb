"""A class at once: N simulated students, no browser, each a Streamlit session on its own websocket.

Run: ``python -m bench.classroom --students 30 [--url http://localhost:8501 | --start] [--label L] [--write]``.

Each student (``bench.streamlit_client.StreamlitTab``: Streamlit's own protocol) arrives with a sentence of
their own, all in the same second, and the class moves on together, one wave per step of a lesson:
Home with the sentence in the link, the Explorer, Pre-training's masked words (the sentence with one word
masked, in the link), Attention step by step, then a new sentence typed in the sidebar. Each wave starts
when every student has finished the one before (a class that follows its teacher). For each wave: the time
from a student's request to its last ``script_finished``, p50 / p95 / max, and errors by kind
(``bench.streamlit_client.ERROR_KINDS``); for the whole class: the server's memory before and after, its CPU
seconds per student, and the machine's load.

``--static``: on arrival each student first fetches the page's files over HTTP as a browser without a cache
does (``bench.streamlit_client.load_static``: 6.8 MB a browser from Streamlit 1.67, served uncompressed); without
it the students speak only the websocket, as a browser with the files cached.

Before the class, one visitor opens every page once (``--no-warm-up`` skips it): the teacher tried the
lesson, and a first run that loads a model is a start-up cost (``bench.startup``), not the class's.

The server: ``--url`` (a running one, or a load balancer in front of several) or ``--start`` (``python -m
ui.launch`` on a free port, as ``make run``; ``--server-args`` passed on). Its processes are found by the
port's listening socket (a local server) or given with ``--pid`` (one per replica); memory and CPU include
their children. ``--write`` keeps one row per label and class size in docs/BENCHMARKS.md (section
``classroom``); a new run replaces the row of the same label and size.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import math
import os
import re
import resource
import shlex
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode, urlsplit

from bench.report import DOC, markdown_table, write_section
from bench.streamlit_client import ERROR_KINDS, PageRun, StreamlitTab, load_static

ROOT = Path(__file__).resolve().parents[1]
SECTION = "classroom"
ARRIVING_LABEL = "arriving at a fresh server"
NAMES = ("anna", "maria", "john", "peter", "sarah", "james", "david", "laura", "paul", "emma", "lucas", "sophie",
         "oliver", "mia", "noah", "leo", "ella", "max", "alice", "tom", "kate", "ben", "lily", "sam", "grace",
         "jack", "rose", "adam", "eva", "hugo", "nina", "omar", "ali", "ravi", "chen", "mei", "carlos", "diego",
         "fatima", "elena")  # each one word piece of the default model's vocabulary: a token of its own
OBJECTS = ("book", "letter", "map", "box", "ticket", "photo", "key")
TEMPLATES = (
    "{name} read a {obj} in the quiet library before lunch.",
    "After school, {name} found an old {obj} under the bed.",
    "{name} gave a friend the {obj} because it was raining.",
    "The teacher asked {name} to bring a {obj} to the museum.",
    "When the train stopped, {name} dropped the {obj} on the platform.",
    "{name} wanted to keep the {obj}, but the dog had other plans.",
    "Yesterday {name} lost a {obj} near the mountains by the river.",
    "In the garden, {name} hid a {obj} behind the tall tree.",
)
NEW_SENTENCE_SHIFT = 3  # the typed sentence: the same name, another template and object


@dataclass(frozen=True)
class Student:
    number: int

    @property
    def name(self) -> str:
        return NAMES[self.number % len(NAMES)].capitalize()

    def _sentence(self, shift: int, masked: bool = False) -> str:
        # student i and i + len(NAMES) share a name but not a template: the class's sentences all differ (320 of them)
        template = TEMPLATES[(self.number + self.number // len(NAMES) + shift) % len(TEMPLATES)]
        obj = "[MASK]" if masked else OBJECTS[(self.number + shift) % len(OBJECTS)]
        return template.format(name=self.name, obj=obj)

    @property
    def sentence(self) -> str:
        return self._sentence(0)

    @property
    def masked(self) -> str:
        return self._sentence(0, masked=True)

    @property
    def new_sentence(self) -> str:
        return self._sentence(NEW_SENTENCE_SHIFT)


Step = Callable[[StreamlitTab, Student], Awaitable[PageRun]]


@dataclass(frozen=True)
class Wave:
    name: str
    step: Step


WAVES = (
    Wave("Home", lambda tab, s: tab.open("", urlencode({"text": s.sentence}))),
    Wave("Explorer", lambda tab, s: tab.switch("attention")),
    Wave("fill-mask", lambda tab, s: tab.switch("fill-mask", urlencode({"masked": s.masked}))),
    Wave("step-by-step", lambda tab, s: tab.switch("step-by-step")),
    Wave("new sentence", lambda tab, s: tab.type("shared.text", s.new_sentence)),
)


async def arrive_with_files(tab: StreamlitTab, student: Student) -> PageRun:
    """Home as a browser without a cache opens it: the page's files over HTTP first (``load_static``), then the
    websocket; the time covers both."""
    start = time.perf_counter()
    _, problem = await load_static(tab.url, tab.timeout)
    run = await WAVES[0].step(tab, student)
    run.seconds = time.perf_counter() - start
    if problem:
        run.fail("http", problem)
    return run


@dataclass
class ServerSample:
    rss_mb: float
    cpu_s: float
    load: tuple[float, float, float]


@dataclass
class ClassResult:
    students: int
    waves: dict[str, list[PageRun]] = field(default_factory=dict)
    before: ServerSample | None = None
    after: ServerSample | None = None
    bench_cpu_s: float = 0.0  # this process's own CPU: the students share the machine with the server
    wave_cpu_s: dict[str, float] = field(default_factory=dict)  # the server's CPU seconds during each wave

    def errors(self) -> Counter:
        return Counter(run.error for runs in self.waves.values() for run in runs if run.error)


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile: the smallest value with at least ``share`` of the values at or below it."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def spread(runs: list[PageRun]) -> tuple[float, float, float]:
    seconds = [run.seconds for run in runs]
    return percentile(seconds, 0.5), percentile(seconds, 0.95), max(seconds)


# --- the server's processes, from /proc ---

def listening_pid(port: int) -> int | None:
    """The process that listens on ``port`` here (its socket's inode in /proc/net/tcp*, then whose fd it is)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                inodes.add(f"socket:[{fields[9]}]")
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if any(os.readlink(fd) in inodes for fd in (proc / "fd").iterdir()):
                return int(proc.name)
        except OSError:  # another user's process, or one that just ended
            continue
    return None


def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def process_tree(roots: list[int]) -> list[int]:
    parents = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                parents[int(proc.name)] = int(_stat(int(proc.name))[1])
            except OSError:
                continue
    tree, frontier = set(roots), list(roots)
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent and pid not in tree]
        tree.update(children)
        frontier += children
    return sorted(tree)


def sample(pids: list[int]) -> ServerSample:
    """Resident memory (MB) and CPU seconds (user + system, finished children included) of ``pids`` and their
    children, and the load averages now."""
    rss_kb, ticks = 0, 0
    for pid in process_tree(pids):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            fields = _stat(pid)
        except OSError:
            continue
        match = re.search(r"^VmRSS:\s+(\d+) kB", status, re.M)
        rss_kb += int(match.group(1)) if match else 0
        ticks += sum(int(value) for value in fields[11:15])  # utime stime cutime cstime
    return ServerSample(rss_kb / 1024, ticks / os.sysconf("SC_CLK_TCK"), os.getloadavg())


IDLE_SHARE = 0.05  # of one core: a server at rest (its event loop's timers)
# seconds: longer than any pause of ui.launch's warm-up: it waits up to 8 s for a first page, then gives it 3 s (a
# replica that the warm-up visitor did not reach sits 11 s, then loads its model)
IDLE_WINDOW = 12.0
IDLE_TIMEOUT = 120.0


def wait_until_idle(pids: list[int], share: float = IDLE_SHARE, window: float = IDLE_WINDOW,
                    timeout: float = IDLE_TIMEOUT) -> float:
    """Wait until ``pids`` use less than ``share`` of a core over ``window`` seconds; the seconds waited (``timeout``
    at most). A server started with ``ui.launch`` keeps warming up in a thread after it answers (the model's opening
    sentences, plotly's and altair's imports, then the collector's freeze: about 30 s on 2 cores); a class measured
    on it then would be charged for that work, its CPU and its memory. A teacher's server has been up for minutes."""
    start = time.monotonic()
    last = sample(pids).cpu_s
    while time.monotonic() - start < timeout:
        time.sleep(window)
        now = sample(pids).cpu_s
        if now - last < share * window:
            break
        last = now
    return time.monotonic() - start


def start_profile(pid: int, path: Path, gil: bool) -> subprocess.Popen:
    """py-spy sampling ``pid`` (and its children) into ``path`` (collapsed stacks) until ``stop_profile``."""
    command = [str(Path(sys.executable).with_name("py-spy")), "record", "--pid", str(pid), "--format", "raw",
               "--output", str(path), "--rate", "50", "--nonblocking", "--subprocesses", *(["--gil"] if gil else [])]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def stop_profile(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGINT)  # py-spy writes its file on Ctrl-C
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()


def profile_summary(path: Path, top: int = 25) -> str:
    """The sampled stacks' heaviest functions: inclusive share (the function or anything it called was running),
    and self share (the innermost frame), over every sample py-spy took of a thread that was not idle."""
    inclusive: Counter = Counter()
    own: Counter = Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        frames = [re.sub(r":\d+\)$", ")", frame) for frame in stack.split(";")]  # per function, not per line
        total += int(count)
        for frame in set(frames):
            inclusive[frame] += int(count)
        own[frames[-1]] += int(count)
    if not total:
        return "no samples"
    lines = [f"{total:,} samples (50 a second of each busy thread)", "inclusive:"]
    lines += [f"  {100 * n / total:5.1f} %  {frame}" for frame, n in inclusive.most_common(top)]
    lines += ["self:"] + [f"  {100 * n / total:5.1f} %  {frame}" for frame, n in own.most_common(top)]
    return "\n".join(lines)


# --- the class ---

async def warm_up(url: str, timeout: float) -> list[PageRun]:
    """One visitor through every wave with a sentence no student has."""
    tab = StreamlitTab(url, timeout)
    runs = []
    try:
        for wave in WAVES:
            runs.append(await wave.step(tab, Student(len(NAMES) * len(TEMPLATES) - 1)))
    finally:
        await tab.close()
    return runs


async def run_class(url: str, students: int, pids: list[int], timeout: float = 120.0,
                    warm: bool = True, waves: tuple[Wave, ...] = WAVES, profile: Path | None = None,
                    gil: bool = False, first: int = 0, at_rest: bool = True,
                    warm_urls: tuple[str, ...] = ()) -> ClassResult:
    """``students`` tabs through ``waves``, all at once within a wave; the server's ``pids`` sampled around it
    (and the first one profiled into ``profile`` by py-spy, if given). The students are numbered from ``first``:
    a later class on the same server has sentences of its own. ``at_rest``: the class waits for the server to be
    at rest (``wait_until_idle``). ``warm_urls``: the warm-up visits these too (each replica at its own address:
    through the load balancer one visitor reaches one replica, and another's first page would pay for its
    first runs and its lazily loaded models)."""
    if warm:
        for address in (url, *warm_urls):
            for run in await warm_up(address, timeout):
                if not run.ok:
                    print(f"warm-up: {address} {run.page}: {run.error}: {run.detail}")
    if pids and at_rest:
        waited = wait_until_idle(pids)
        print(f"the server at rest after {waited:.0f} s" if waited < IDLE_TIMEOUT else
              f"the server was still busy after {waited:.0f} s: the class starts on a busy server")
    result = ClassResult(students)
    class_ = [Student(first + i) for i in range(students)]
    tabs = [StreamlitTab(url, timeout) for _ in class_]
    result.before = sample(pids) if pids else None
    own_start = resource.getrusage(resource.RUSAGE_SELF)
    spy = start_profile(pids[0], profile, gil) if profile and pids else None
    try:
        for wave in waves:
            start = sample(pids).cpu_s if pids else 0.0
            result.waves[wave.name] = list(await asyncio.gather(*(wave.step(tab, s) for tab, s in zip(tabs, class_))))
            if pids:  # a wave's own cost: which page to make cheaper (the waves are throughput-bound)
                result.wave_cpu_s[wave.name] = sample(pids).cpu_s - start
    finally:
        if spy is not None:
            stop_profile(spy)
        await asyncio.gather(*(tab.close() for tab in tabs), return_exceptions=True)
    own_end = resource.getrusage(resource.RUSAGE_SELF)
    result.bench_cpu_s = (own_end.ru_utime + own_end.ru_stime) - (own_start.ru_utime + own_start.ru_stime)
    result.after = sample(pids) if pids else None
    return result


# --- reporting ---

def _seconds(runs: list[PageRun]) -> str:
    return " / ".join(f"{value:.2f}" for value in spread(runs))


def _errors(result: ClassResult) -> str:
    counts = result.errors()
    if not counts:
        return "0"
    kinds = ", ".join(f"{kind} {counts[kind]}" for kind in ERROR_KINDS if counts[kind])
    return f"{sum(counts.values())} ({kinds})"


def commit() -> str:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False).stdout.strip()

    changed = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!docs/BENCHMARKS.md")
    return git("rev-parse", "--short", "HEAD") + ("+changes" if changed else "")


HEADER = (["label", "students"] + [f"{wave.name} p50 / p95 / max s" for wave in WAVES]
          + ["errors", "RSS before → after (MB)", "server CPU s / student", "load 1 min before → after", "commit",
             "date (UTC)"])


def row(result: ClassResult, label: str) -> list[str]:
    before, after = result.before, result.after
    if before and after:
        memory = f"{before.rss_mb:,.0f} → {after.rss_mb:,.0f} ({after.rss_mb - before.rss_mb:+,.0f})"
        cpu = f"{(after.cpu_s - before.cpu_s) / result.students:.2f}"
        load = f"{before.load[0]:.2f} → {after.load[0]:.2f}"
    else:
        memory = cpu = load = "n/a (no server pid)"
    return ([label, str(result.students)]
            + [_seconds(result.waves[wave.name]) if wave.name in result.waves else "—" for wave in WAVES]
            + [_errors(result), memory, cpu, load, commit(),
               datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")])


SECTION_TEXT = """## Classroom: N students at once (`python -m bench.classroom`)

Simulated students, no browser: each is one Streamlit session speaking the browser's websocket protocol
(`bench/streamlit_client.py`). All arrive in the same second with a sentence of their own and move on
together: Home (`?text=` their sentence), the Explorer, Pre-training (`?masked=` their sentence with one word
masked), Attention step by step, then a new sentence typed in the sidebar. A wave starts when the whole
class has finished the one before. Times: from a student's request (Home: from opening the connection) to
the page run's last `script_finished`, p50 / p95 (nearest rank) / max over the class. Errors: an exception
on the page, an error box, a page not found, no `script_finished` within the timeout, a dropped socket.
RSS and CPU: the server's processes and their children, from /proc, from just before the class (after one
warm-up visit of every page, on 2 replicas at each one's own address too, and once the server is at rest: under
5 % of a core over 12 s) to just after; CPU seconds per student over all five waves. `--classes 2`: a second
class of other students follows on the same server (its row is named "…, class 2"; the first class's sessions
are still kept then, for 2 minutes). The students run on the same machine as the server: their own CPU is in
each run's printed summary. Like a browser, a student sends no websocket pings: a server too busy to answer one
is not dropped for it. Rows "{arriving}": a fresh `python -m ui.launch` (as `make run`), and the class opens
Home as soon as it answers its health check: no warm-up visit, no wait for rest (`--arriving`).
Load: 1-minute load average (the machine has {cores} cores; other engineers' work counts in it).

{table}
"""


def existing_rows() -> list[list[str]]:
    text = DOC.read_text() if DOC.exists() else ""
    match = re.search(rf"<!-- begin:{SECTION} -->(.*?)<!-- end:{SECTION} -->", text, re.S)
    if not match:
        return []
    lines = [line for line in match.group(1).splitlines() if line.startswith("| ") and not line.startswith("| label")]
    return [[cell.strip() for cell in line.strip().strip("|").split(" | ")] for line in lines]


def write(result: ClassResult, label: str) -> Path:
    rows = [r for r in existing_rows() if (r[0], r[1]) != (label, str(result.students))]
    rows.append(row(result, label))
    rows.sort(key=lambda r: (r[0], int(r[1])))
    text = SECTION_TEXT.format(cores=os.cpu_count(), arriving=ARRIVING_LABEL, table=markdown_table(HEADER, rows))
    return write_section(SECTION, text)


def summary(result: ClassResult) -> str:
    lines = [f"{result.students} students"]
    for name, runs in result.waves.items():
        p50, p95, worst = spread(runs)
        errors = Counter(run.error for run in runs if run.error)
        cpu = (f"  server CPU {result.wave_cpu_s[name] / result.students:.3f} s a student"
               if name in result.wave_cpu_s else "")
        lines.append(f"  {name:13} p50 {p50:6.2f} s  p95 {p95:6.2f} s  max {worst:6.2f} s  errors {dict(errors) or 0}"
                     + cpu)
        for run in runs:
            if run.error:
                lines.append(f"    {run.page}: {run.error}: {run.detail}")
                break
    before, after = result.before, result.after
    if before and after:
        cpu = after.cpu_s - before.cpu_s
        lines.append(f"  server RSS {before.rss_mb:,.0f} → {after.rss_mb:,.0f} MB, CPU {cpu:.1f} s "
                     f"({cpu / result.students:.2f} s a student), load {before.load[0]:.2f} → {after.load[0]:.2f}")
    lines.append(f"  the students' own CPU (this process): {result.bench_cpu_s:.1f} s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.classroom", description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=30)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--url", help="a running server or a load balancer, e.g. http://localhost:8501")
    where.add_argument("--start", action="store_true", help="start `python -m ui.launch` on a free port")
    parser.add_argument("--server-args", default="", help="more options for --start's server, one string")
    parser.add_argument("--pid", type=int, action="append", default=[],
                        help="a server process to measure (repeat for replicas); default: the one on the URL's port")
    parser.add_argument("--label", default="default server", help="the row's name in docs/BENCHMARKS.md")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds a page run may take")
    parser.add_argument("--no-warm-up", dest="warm", action="store_false")
    parser.add_argument("--warm-url", action="append", default=[],
                        help="the warm-up also visits this address (repeat: each replica at its own port)")
    parser.add_argument("--profile", type=Path, help="py-spy the server during the class into this file (raw stacks)")
    parser.add_argument("--gil", action="store_true", help="--profile only samples the thread holding the GIL")
    parser.add_argument("--static", action="store_true",
                        help="on arrival each student also fetches the page's files over HTTP, as a browser "
                             "without a cache (index.html, its ~60 scripts and styles, the plotly chunk)")
    parser.add_argument("--classes", type=int, default=1,
                        help="classes one after another on the same server, each of new students with sentences of "
                             "their own (the memory a second class adds: what the first left is reused or not)")
    parser.add_argument("--first", type=int, default=0,
                        help="the first student's number (a class of other students, on a server that had one)")
    parser.add_argument("--arriving", action="store_true",
                        help="with --start: the class arrives at Home as soon as the fresh server answers its health "
                             "check (no warm-up visit, no wait for rest), the first minute of a class; row label "
                             f"{ARRIVING_LABEL!r} unless --label says otherwise")
    parser.add_argument("--write", action="store_true", help="add or replace this run's row in docs/BENCHMARKS.md")
    args = parser.parse_args(argv)
    if args.arriving and not args.start:
        parser.error("--arriving measures a fresh server: use it with --start")
    if args.arriving and args.label == "default server":
        args.label = ARRIVING_LABEL
    if args.students < 1:
        parser.error("--students must be at least 1")
    if args.classes < 1:
        parser.error("--classes must be at least 1")

    from tests.e2e.conftest import streamlit_server

    server = (streamlit_server(["ui.launch", *shlex.split(args.server_args)], "classroom-server.log")
              if args.start else nullcontext(args.url))
    with server as url:
        parts = urlsplit(url)
        pids = args.pid
        if not pids and parts.hostname in ("localhost", "127.0.0.1", "::1"):
            found = listening_pid(parts.port or 80)
            pids = [found] if found else []
        if not pids:
            print("no server process found on this machine: memory and CPU are not measured (give --pid)")
        start = time.perf_counter()
        waves = (Wave(WAVES[0].name, arrive_with_files), *WAVES[1:]) if args.static else WAVES
        if args.arriving:
            waves = waves[:1]
        results = []
        for number in range(args.classes):
            if args.classes > 1:
                print(f"class {number + 1} of {args.classes}")
            results.append(asyncio.run(run_class(url, args.students, pids, args.timeout,
                                                 args.warm and not number and not args.arriving,
                                                 waves, args.profile if not number else None, args.gil,
                                                 first=args.first + number * args.students,
                                                 at_rest=not args.arriving, warm_urls=tuple(args.warm_url))))
            print(summary(results[-1]))
        if args.profile and pids:
            print(profile_summary(args.profile))
        print(f"  wall time {time.perf_counter() - start:.1f} s")
    if args.write:
        for number, result in enumerate(results):
            print(f"wrote {write(result, args.label if not number else f'{args.label}, class {number + 1}')}")


if __name__ == "__main__":
    main()
