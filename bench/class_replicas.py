"""A class in real browsers, on one server or across two replicas: how soon each student follows the teacher (issue
34 C: within 2 s) and, across replicas (issue 31 C), that a student routed to another replica than the teacher
still follows and is counted in the teacher's chart.

    python -m bench.class_replicas [--replicas 2] [--port 8620] [--no-write]   # section "class-replicas"
    python -m bench.class_replicas --replicas 1                                  # section "class-one-server"

With ``--replicas 1`` the supervisor runs one app process behind nginx with the rooms in its memory, and five
students follow; the browser test of a class (tests/e2e/test_class_browser.py) checks that they follow at all,
beside the suite, and prints the times; the time is claimed here, on a quiet machine.

Starts ``python -m deploy.replicas --replicas 2`` (nginx, two app processes, the rooms' redis-server), then in
Debian Chromium: a teacher pinned to replica r1 opens ``/lessons?teach=1``; four students open
``/lessons?room=CODE``, three pinned to the other replica r2 and one to r1 (nginx's sticky cookie set before the
first request, as a returning browser has it); every page's replica is read back from the cookie nginx keeps. The
teacher moves three times; each student's drawn step is timed against the teacher's. Then the students on r2
answer and the teacher's chart (on r1) must count them. Writes the "class-replicas" section of docs/BENCHMARKS.md.
Exits 1 when a student does not follow within 2 s, is not on the replica it was sent to, or is not counted.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.report import markdown_table, write_section
from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, LAPTOP
from tests.e2e.test_presenter_browser import at
from tests.support.class_follow import answer, choices, move, wait_all, wait_counted
from tests.support.streamlit_ws import COOKIE

ROOT = Path(__file__).resolve().parents[1]
FOLLOW_S = 2.0
MOVES = [("attention", 2), ("attention", 3), ("attention", 4)]
STUDENTS = {2: ["r2", "r2", "r2", "r1"], 1: ["r1"] * 5}  # the replica each student's browser is sent to
SECTIONS = {2: "class-replicas", 1: "class-one-server"}


def start(port: int, run_dir: Path, replicas: int) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "VIZCORE_ROOMS"}  # the supervisor starts the shared store
    process = subprocess.Popen(
        [sys.executable, "-m", "deploy.replicas", "--replicas", str(replicas), "--port", str(port),
         "--run-dir", str(run_dir)],
        cwd=ROOT, env={**env, "OMP_NUM_THREADS": "1"}, stdout=open(run_dir / "supervisor.log", "wb"),
        stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 300
    while True:
        state = run_dir / "state.json"
        replicas = json.loads(state.read_text()).get("replicas", []) if state.is_file() else []
        if replicas and all(r["ready"] for r in replicas):
            return process
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the replicas did not start: {(run_dir / 'supervisor.log').read_text()[-2000:]}")
        time.sleep(0.5)


def pinned(browser, base: str, replica: str):
    context = browser.new_context(viewport=LAPTOP)
    context.add_cookies([{"name": COOKIE, "value": replica, "url": base}])
    return context


def replica_of(context, base: str) -> str:
    return next((c["value"] for c in context.cookies(base) if c["name"] == COOKIE), "?")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, choices=(1, 2), default=2)
    parser.add_argument("--port", type=int, default=8620)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    base = f"http://127.0.0.1:{args.port}"
    load_before = os.getloadavg()[0]
    problems, rows, timings = [], [], []
    with tempfile.TemporaryDirectory() as folder:
        students_at = STUDENTS[args.replicas]
        supervisor = start(args.port, Path(folder), args.replicas)
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                teacher_context = pinned(browser, base, "r1")
                teacher = teacher_context.new_page()
                teacher.goto(f"{base}/lessons?teach=1&lesson=attention&step=1")
                code = teacher.wait_for_selector("[data-room]", timeout=300_000).get_attribute("data-room")
                at(teacher, 300)
                contexts = [pinned(browser, base, replica) for replica in students_at]
                students = [context.new_page() for context in contexts]
                for page in students:
                    page.goto(f"{base}/lessons?room={code}")
                wait_all(students, ("attention", 1), time.perf_counter(), 300)
                where = [replica_of(c, base) for c in contexts]
                if where != students_at or replica_of(teacher_context, base) != "r1":
                    problems.append(f"replicas: teacher {replica_of(teacher_context, base)}, students {where}")
                time.sleep(1)
                for expected in MOVES:
                    teacher_s, took = move(teacher, students, expected, timeout_s=60)
                    timings.append(took)
                    rows.append([f"{expected[0]} step {expected[1]}", f"{teacher_s:.2f}", *(f"{t:.2f}" for t in took)])
                    if max(took) > FOLLOW_S:
                        problems.append(f"step {expected}: a student followed after {max(took):.2f} s")
                others = [page for page, replica in zip(students, students_at) if replica == students_at[0]][:3]
                shown = choices(others[0])
                given = [shown[i % len(shown)] for i in range(len(others))]
                answer(others, given, timeout_s=60)
                try:
                    wait_counted(teacher, shown, given)
                except AssertionError as error:
                    problems.append(str(error))
                browser.close()
        finally:
            supervisor.terminate()
            supervisor.wait(60)
    load_after = os.getloadavg()[0]
    worst = max(max(t) for t in timings) if timings else float("nan")
    table = markdown_table(["teacher's move", "click to the teacher's step drawn (s)",
                            *(f"student {i + 1} on {r} (s)" for i, r in enumerate(students_at))], rows)
    sent = "as sent" if not any("replicas" in p for p in problems) else "NOT as sent"
    counted = "counted them" if not any("chart" in p for p in problems) else "did NOT count them"
    if args.replicas == 2:
        title = "A class across two replicas (`python -m bench.class_replicas`)"
        setup = ("`make serve REPLICAS=2` as the supervisor runs it (nginx, two app processes, their shared "
                 "redis-server), and Debian Chromium: the teacher's browser on replica r1, three students' on r2 and "
                 f"one on r1 (nginx's sticky cookie, read back after the visit: {sent}).")
        answered = f"the three students on r2 answered the step's question and the teacher's chart on r1 {counted}"
    else:
        title = "A class on one server (`python -m bench.class_replicas --replicas 1`)"
        setup = ("One app process behind nginx (`deploy.replicas --replicas 1`: the rooms in its memory), and Debian "
                 "Chromium: the teacher's browser and five students' in their own contexts (the browser test of a "
                 "class, tests/e2e/test_class_browser.py, does the same beside the suite and only prints its times).")
        answered = f"three students answered the step's question and the teacher's chart {counted}"
    body = f"""## {title}

{setup} Each row: one move of the teacher (the page's Next), the seconds from the click until the teacher's step
was drawn, then from then until each student's page had drawn the same step (goal <= {FOLLOW_S:.0f} s, issue 34 C).
Worst: **{worst:.2f} s**. Then {answered}. Load average (1 min) before {load_before:.1f}, after {load_after:.1f},
2 cores, nothing else of ours running.

{table}
"""
    print(body)
    if not args.no_write:
        print(write_section(SECTIONS[args.replicas], body))
    if problems:
        sys.exit("\n".join(problems))


if __name__ == "__main__":
    main()
