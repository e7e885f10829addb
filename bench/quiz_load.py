"""A class submitting the same quiz at once (issue 50 E): from each student's submit to their page saying "saved",
and whether any answer is lost; 30 students on one server, 100 on two replicas sharing the results file.

    python -m bench.quiz_load                                   # 30 on one server, then 100 on 2 replicas
    python -m bench.quiz_load --students 30 --replicas 1 --no-write
    python -m bench.quiz_load --students 30 --replicas 1 --profile /tmp/quiz.raw   # py-spy over the submits

The server starts with a results file of its own (``VIZCORE_RESULTS``, SQLite in a temporary folder; both
replicas of ``python -m deploy.replicas --replicas 2`` share it, behind nginx, students pinned alternately to r1
and r2 by the sticky cookie). A teacher (a protocol client, bench/streamlit_client.py) opens a class on the lesson
attention and opens the quiz before it. Then every student (a protocol client too) opens ``/lessons?room=CODE``,
and once all their forms are drawn they all submit at once: a nickname and an answer to each of its 4 questions,
varied from student to student, sent with the submit button's click in one rerun as a browser sends a form. Times:
from sending the submit to the page's ``quiz-saved`` marker arriving (the app draws it only after the store has
the answers on disk). Then the file is read with the servers stopped: a student whose 4 answers are not all there
as given is lost; one whose page did not say "saved" but whose answers are there, saved late. Goals: p95 <= 1 s
for 30 students on one server, 0 lost for 100 on 2 replicas. The CPU the servers (every process of their tree) and
the bench used over the submits is measured, and how many cores the machine's other processes kept busy meanwhile
(``/proc/stat``): nothing else is paused; ``uptime`` is noted at the start and at the end. An app process runs
its sessions' Python on one core at a time (the GIL) and Streamlit runs the submits' scripts in parallel threads,
so each page says "saved" near the end of the whole class's work: p95 is about the students on a process times the
CPU of one submit, over the share of a core that process gets (the cores column: CPU-seconds over the wall time).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from streamlit.proto.Element_pb2 import Element

from bench.class_follow import server_pids, start_server
from bench.classroom import profile_summary, sample, start_profile, stop_profile, wait_until_idle
from bench.report import markdown_table, uptime, write_section
from bench.streamlit_client import PageRun, StreamlitTab
from tests.support.streamlit_ws import COOKIE, REPLICA_HEADER
from vizcore.lessons.lesson import load_lessons
from vizcore.results.store import SqliteResults

LESSON, PHASE = "attention", "pre"
QUESTION_KEY = f"lessons.quiz.{LESSON}.{PHASE}."  # + the item's id: each question's radio
NICKNAME_KEY = "lessons.nickname"
OPEN_QUIZ = f"lessons.open_class_quiz_{PHASE}"
SUBMIT = "Submit my answers"
SAVED = 'class="quiz-saved"'
ROOM = re.compile(r'data-room="([A-Z0-9]{6})"')
PLAN = [(30, 1), (100, 2)]  # (students, replicas) run by default
P95_GOAL_S = {(30, 1): 1.0}
TIMEOUT_S = 120.0
PROFILER_ATTACH_S = 2.0  # py-spy takes about a second to attach: the submits wait for it


@dataclass
class Student:
    """One student's tab, the answers it gave (item id -> choice) and what came back."""

    number: int
    tab: StreamlitTab
    options: dict[str, list[str]] = field(default_factory=dict)  # item id -> choices, as the form drew them
    given: dict[str, str] = field(default_factory=dict)
    seconds: float | None = None  # submit -> "saved" on the page; None: it never said so
    error: str = ""  # what went wrong, short ("submitting: timeout"): the table counts these
    detail: str = ""  # and what the page or the socket said (printed)

    @property
    def nickname(self) -> str:
        return f"student-{self.number:03d}"


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[18] if len(values) > 1 else values[0]


def questions(run: PageRun) -> dict[str, list[str]]:
    """The quiz's questions a run drew: item id -> the radio's choices (read from the elements, as the browser
    lists them)."""
    found = {}
    for raw in run.main:
        element = Element.FromString(raw)
        if element.WhichOneof("type") == "radio":
            key = element.radio.id.split("-", 2)[-1]
            if key.startswith(QUESTION_KEY):
                found[key.removeprefix(QUESTION_KEY)] = list(element.radio.options)
    return found


def failed(student: Student, run: PageRun, what: str) -> bool:
    """Note on ``student`` what went wrong with ``run`` (the first thing only); whether anything did."""
    if not run.ok and not student.error:
        student.error, student.detail = f"{what}: {run.error}", run.detail
    return not run.ok


async def open_class(base: str, cookies: dict[str, str]) -> tuple[StreamlitTab, str]:
    """The teacher's tab: a class opened on the lesson, its quiz opened; the class's code."""
    teacher = StreamlitTab(base, TIMEOUT_S, cookies=cookies)
    run = await teacher.open("lessons", f"lesson={LESSON}&teach=1")
    code = ROOM.search(run.text())
    if not run.ok or code is None:
        raise SystemExit(f"the teacher's page: {run.error} {run.detail} (class code: {code})")
    run = await teacher.click(OPEN_QUIZ)
    if not run.ok or not run.shows('data-teacher="1"'):
        raise SystemExit(f"opening the quiz: {run.error} {run.detail} (the open quiz shown: {run.ok})")
    return teacher, code.group(1)


def quiz_items() -> list[str]:
    """The ids of the questions the lesson's file asks: the form must draw each of them."""
    lesson = next(lesson for lesson in load_lessons() if lesson.id == LESSON)
    return [item.id for item in lesson.quiz.items]


async def join(student: Student, code: str, items: list[str]) -> None:
    """The student's page on the class, until it draws the quiz's form (every question, the submit button)."""
    run = await student.tab.open("lessons", f"room={code}")
    student.options = questions(run)
    if not failed(student, run, "joining") and (sorted(student.options) != sorted(items)
                                                 or SUBMIT not in student.tab.buttons):
        student.error, student.detail = "joining: no quiz form", f"questions drawn: {sorted(student.options)}"


def choose(student: Student) -> dict[str, str]:
    """Answers that differ from student to student: question j gets choice (number + j) of its list."""
    return {item: choices[(student.number + j) % len(choices)]
            for j, (item, choices) in enumerate(sorted(student.options.items()))}


async def submit(student: Student) -> None:
    """The form: the nickname and every answer with the submit's click, in one rerun; timed to "saved"."""
    student.given = choose(student)
    values = {NICKNAME_KEY: student.nickname, **{QUESTION_KEY + item: c for item, c in student.given.items()}}
    run = await student.tab.click(SUBMIT, values)
    student.seconds = run.seen_after(SAVED)
    if not failed(student, run, "submitting") and student.seconds is None:
        student.error, student.detail = "submitting: no 'saved'", run.text()[-300:]


async def one_class(base: str, count: int, replicas: int, pids: list[int], profile: Path | None) -> dict:
    """The class: the teacher opens the quiz, every student joins, then all submit at once."""
    pin = (lambda i: {COOKIE: f"r{1 + i % 2}"}) if replicas > 1 else (lambda i: {})
    teacher, code = await open_class(base, pin(0))
    students, items = [Student(i, StreamlitTab(base, TIMEOUT_S, cookies=pin(i))) for i in range(count)], quiz_items()
    for chunk in range(0, count, 10):  # ten at a time: a class arriving, not the arrival bench
        await asyncio.gather(*(join(s, code, items) for s in students[chunk:chunk + 10]))
    ready = [s for s in students if not s.error]
    await asyncio.sleep(2)  # the joins' runs and their page profiles have settled: the submits start together
    used = await submit_all(ready, pids, profile)
    for tab in [teacher, *(s.tab for s in students)]:
        await tab.close()
    replicas_seen = Counter(s.tab.upgrade_headers.get(REPLICA_HEADER.lower(), "?") for s in ready)
    return {"code": code, "students": students, "where": replicas_seen, **used}


def machine_busy_s() -> float:
    """CPU-seconds every process of the machine has used since boot (``/proc/stat``), for how busy the rest of the
    machine was while the students submitted."""
    user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, Path("/proc/stat").read_text().split()[1:9])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


async def submit_all(ready: list[Student], pids: list[int], profile: Path | None) -> dict[str, float]:
    """Every student whose form came submits at once. Around it: the CPU-seconds the servers and this bench used,
    and how many cores the rest of the machine kept busy on average (the submits share the cores with it). With
    ``profile``, py-spy samples the thread holding the GIL (a server's Python runs on one core at most: the threads
    waiting for it would only add noise)."""
    profiler = start_profile(pids[0], profile, gil=True) if profile else None
    if profiler:
        await asyncio.sleep(PROFILER_ATTACH_S)
    server, client, machine, start = sample(pids).cpu_s, time.process_time(), machine_busy_s(), time.perf_counter()
    await asyncio.gather(*(submit(s) for s in ready))
    wall = time.perf_counter() - start
    used = {"server_cpu": sample(pids).cpu_s - server, "client_cpu": time.process_time() - client, "wall": wall}
    used["others_cores"] = (machine_busy_s() - machine - used["server_cpu"] - used["client_cpu"]) / wall
    if profiler:
        stop_profile(profiler)
    return used


def outcomes(students: list[Student], stored: SqliteResults, code: str) -> Counter:
    """Each student's fate, from the file: "saved" (the page said so and the 4 answers are there as given), "late"
    (they are there, the page did not say so), "lost" (any of them missing or other than given), "not submitted"
    (the form never came)."""
    rows: dict[str, dict[str, str]] = {}
    for row in stored.answers(code, LESSON):
        if row.phase == PHASE:
            rows.setdefault(row.nickname, {})[row.question] = row.answer
    fates = Counter()
    for student in students:
        if not student.given:
            fates["not submitted"] += 1
        elif rows.get(student.nickname) != student.given:
            fates["lost"] += 1
        else:
            fates["saved" if student.seconds is not None else "late"] += 1
    return fates


def stop(server: subprocess.Popen) -> None:
    server.terminate()
    try:
        server.wait(60)
    except subprocess.TimeoutExpired:
        server.kill()


def measure(count: int, replicas: int, port: int, profile: Path | None) -> dict:
    """One configuration on fresh servers with a fresh results file, read back once the servers have stopped."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "results.sqlite3"
        os.environ["VIZCORE_RESULTS"] = f"sqlite://{path}"
        os.environ["VIZCORE_STREAMS_PER_ADDRESS"] = "1000"  # every student comes from 127.0.0.1
        server = start_server(port, replicas, Path(folder))
        try:
            pids = server_pids(port, replicas, server if replicas > 1 else None)
            wait_until_idle(pids)
            result = asyncio.run(one_class(f"http://127.0.0.1:{port}", count, replicas, pids, profile))
        finally:
            stop(server)
        stored = SqliteResults(path)
        result["fates"] = outcomes(result["students"], stored, result["code"])
        stored.close()
    return result


def row(count: int, replicas: int, result: dict, load: tuple[float, float]) -> list[object]:
    students = result["students"]
    times = [s.seconds for s in students if s.seconds is not None]
    spread = f"{statistics.median(times):.2f} / {p95(times):.2f} / {max(times):.2f}" if times else "-"
    fates = result["fates"]
    errors = Counter(s.error for s in students if s.error)
    where = "one server" if replicas == 1 else "2 replicas behind nginx (" + ", ".join(
        f"{n} on {name}" for name, n in sorted(result["where"].items())) + ")"
    return [count, where, spread,
            f"{fates['saved']} / {fates['late']} / {fates['lost']}" + (
                f" ({fates['not submitted']} not submitted)" if fates["not submitted"] else ""),
            ", ".join(f"{n} {kind}" for kind, n in errors.most_common()) or "0",
            f"{result['server_cpu']:.2f} ({1000 * result['server_cpu'] / max(len(times), 1):.0f} ms a submit, "
            f"{result['server_cpu'] / result['wall']:.2f} cores)", f"{result['client_cpu']:.2f}",
            f"{result['others_cores']:.1f}",
            f"{load[0]:.1f} / {load[1]:.1f}"]


def shortfalls(count: int, replicas: int, result: dict) -> list[str]:
    """What misses the goals: p95 over its goal, any answer lost; and any student who could not submit or whose page
    failed (the class did not happen as measured)."""
    where = f"{count} on {'one server' if replicas == 1 else f'{replicas} replicas'}"
    times = [s.seconds for s in result["students"] if s.seconds is not None]
    fates, errors = result["fates"], sum(bool(s.error) for s in result["students"])
    problems = [f"{where}: {fates[fate]} {fate}" for fate in ("lost", "not submitted") if fates[fate]]
    problems += [f"{where}: {errors} students' pages failed"] if errors else []
    goal = P95_GOAL_S.get((count, replicas))
    if goal is not None and (not times or p95(times) > goal):
        problems.append(f"{where}: p95 {p95(times) if times else float('nan'):.2f} s > {goal:g} s")
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=None, help="with --replicas: one configuration")
    parser.add_argument("--replicas", type=int, choices=(1, 2), default=None)
    parser.add_argument("--port", type=int, default=8650)
    parser.add_argument("--profile", type=Path, default=None, help="py-spy's raw stacks of the submits (GIL holder)")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    plan = PLAN if args.students is None and args.replicas is None else [(args.students or 30, args.replicas or 1)]
    rows, problems, started = [], [], uptime()
    for count, replicas in plan:
        load = os.getloadavg()[0]
        result = measure(count, replicas, args.port, args.profile)
        rows.append(row(count, replicas, result, (load, os.getloadavg()[0])))
        problems += shortfalls(count, replicas, result)
        print(rows[-1], flush=True)
        for student in result["students"]:
            if student.error:
                print(f"  {student.nickname}: {student.error}: {student.detail[:200]}")
    if args.profile:
        print(profile_summary(args.profile))
    table = markdown_table(["students", "server", "submit to 'saved' p50 / p95 / max (s)", "saved / late / lost",
                            "errors", "servers' CPU over the submits (CPU-s)", "the bench's own CPU (CPU-s)",
                            "other processes during the submits (cores busy)", "load (1 min) before / after"], rows)
    body = (f"## A class submitting a quiz at once (`python -m bench.quiz_load`)\n\n"
            f"{__doc__.split(chr(10), 2)[2].lstrip(chr(10))}"
            f"\n{table}\n\nAt the start: `{started}`; at the end: `{uptime()}`. "
            + ("Every goal met in this run." if not problems else "Short of: " + "; ".join(problems) + "."))
    print(body)
    if not args.no_write:
        write_section("quiz-load", body)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
