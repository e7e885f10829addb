"""Two real app replicas behind nginx (``python -m deploy.replicas``), visited in Chromium and through Streamlit's own
protocol.

A class across them, in the browser (issue 46): a teacher pinned to r1 and a student pinned to r2 (nginx's sticky
cookie); the student's page hears each of the teacher's moves on its class stream (served by r2, which hears r1's
move through the shared store's publish/subscribe) and draws the step; the student's answer reaches the teacher's
chart on r1 by the teacher's own stream.

Four students (tests/support/streamlit_ws.py: the browser's HTTP page load, then its websocket and rerun)
open the Explorer with a sentence of their own. They are shared out over both replicas and each one's page,
files and websocket stay on one replica. Then one replica is killed: its students' sockets drop, they
reconnect as the browser does and get their page back from the URL on the other replica, while the other
replica's students go on with no error. Both replicas were given the one rooms store the supervisor started
(a class follows its teacher across them: tests/integration/test_rooms_redis.py), and SIGTERM to the supervisor
then leaves no process behind, that store included.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from websockets.exceptions import ConnectionClosed

from deploy.replicas import ROOMS_ENV, find_nginx, find_redis, redis_answers
from tests.e2e.conftest import LAPTOP, count_finished_runs, wait_until_idle
from tests.support.class_follow import answer, choices, move, wait_all, wait_counted, wait_listening
from tests.support.event_loop import LoopThread
from tests.support.processes import alive, descendants, environ, free_port_block
from tests.support.streamlit_ws import COOKIE, Visitor

ROOT = Path(__file__).resolve().parents[2]
STUDENTS = int(os.environ.get("VIZCORE_REPLICA_STUDENTS", "4"))  # the heavier run: VIZCORE_REPLICA_STUDENTS=30
START_TIMEOUT = 240.0  # two replicas import torch and load the model at once, on 2 shared cores


def _state(run_dir: Path) -> dict:
    path = run_dir / "state.json"
    return json.loads(path.read_text()) if path.is_file() else {}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("replicas")
    port = free_port_block(4)  # nginx, two replicas, the rooms' redis-server
    find_nginx(), find_redis()  # say how to install them when missing
    env = {name: value for name, value in os.environ.items() if name != ROOMS_ENV}  # the supervisor starts the store
    supervisor = subprocess.Popen(
        [sys.executable, "-m", "deploy.replicas", "--replicas", "2", "--port", str(port), "--run-dir", str(run_dir)],
        cwd=ROOT, env={**env, "OMP_NUM_THREADS": "1"}, stdout=open(run_dir / "supervisor.log", "wb"),
        stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not all(r["ready"] for r in _state(run_dir).get("replicas", [{"ready": False}])):
            assert supervisor.poll() is None, (run_dir / "supervisor.log").read_text()
            assert time.monotonic() < deadline, f"the replicas did not start; logs in {run_dir}"
            time.sleep(0.5)
        yield supervisor, f"http://127.0.0.1:{port}", run_dir
    finally:
        if supervisor.poll() is None:
            supervisor.kill()  # the replicas and nginx end with it (PR_SET_PDEATHSIG)
            supervisor.wait()


def test_a_student_on_the_second_replica_follows_a_teacher_on_the_first_by_push(served, browser):
    _, base, _ = served

    def pinned(replica: str):
        context = browser.new_context(viewport=LAPTOP)
        context.add_cookies([{"name": COOKIE, "value": replica, "url": base}])
        return context

    teacher_context, student_context = pinned("r1"), pinned("r2")
    try:
        teacher = teacher_context.new_page()
        teacher.goto(f"{base}/lessons?teach=1&lesson=attention&step=1", timeout=180_000)
        code = teacher.wait_for_selector("[data-room]", timeout=180_000).get_attribute("data-room")
        student = count_finished_runs(student_context.new_page())
        student.goto(f"{base}/lessons?room={code}", timeout=180_000)
        wait_all([student], ("attention", 1), time.perf_counter(), 180)
        wait_listening(student)  # one stream, held open
        for expected in (("attention", 2), ("attention", 3)):
            wait_until_idle(student, quiet_ms=300)
            runs = student.finished_runs
            move(teacher, [student], expected, timeout_s=60)
            wait_until_idle(student, quiet_ms=300)
            assert student.finished_runs - runs == 1, "one run of the student's page per move, by push"
        shown = choices(student)
        answer([student], [shown[0]], timeout_s=60)
        wait_counted(teacher, shown, [shown[0]], timeout_s=30)  # counted on r1, drawn by the teacher's stream
        cookies = {name: {c["name"]: c["value"] for c in context.cookies(base)}.get(COOKIE)
                   for name, context in (("teacher", teacher_context), ("student", student_context))}
        assert cookies == {"teacher": "r1", "student": "r2"}, cookies
    finally:
        teacher_context.close()
        student_context.close()


def _replica_of(visitor: Visitor) -> str:
    assert len(set(visitor.replicas)) == 1, f"one visitor's requests reached {visitor.replicas}"
    return visitor.replicas[0]


def test_students_stay_on_their_replica_and_survive_the_loss_of_the_other(served):
    _, base, run_dir = served
    state = _state(run_dir)
    rooms = [environ(r["pid"]).get(ROOMS_ENV) for r in state["replicas"]]
    assert rooms == [state["rooms"]] * 2 and state["rooms"] == f"redis://127.0.0.1:{state['redis']['port']}/0"
    assert redis_answers(state["redis"]["port"]), "the replicas' rooms store does not answer"
    students = [Visitor(base, "attention", {"text": f"Student {i} reads a short sentence about rivers."})
                for i in range(STUDENTS)]
    for student in students:
        assert student.load() == 200  # the page itself: nginx picks a replica and sets the cookie
        assert student.load("_stcore/host-config") == 200  # a file the page loads next, with the cookie

    async def first_visit(student: Visitor):
        await student.open()
        return await student.run()

    loop = LoopThread()  # one loop for the whole visit, in a thread of its own (tests/support/event_loop.py)
    runs = loop.run(_each(first_visit, students))
    by_replica: dict[str, list[Visitor]] = {}
    for student, run in zip(students, runs):
        assert (run.status, run.exceptions) == ("FINISHED_SUCCESSFULLY", [])
        assert student.query["text"].encode() in run.shown, "the page did not show the sentence from its link"
        by_replica.setdefault(_replica_of(student), []).append(student)
    counts = {name: len(group) for name, group in by_replica.items()}
    assert sorted(counts) == ["r1", "r2"] and abs(counts["r1"] - counts["r2"]) <= 1, f"not shared out: {counts}"

    victims, others = by_replica["r1"], by_replica["r2"]
    pid = next(r["pid"] for r in _state(run_dir)["replicas"] if r["name"] == "r1")
    os.killpg(pid, signal.SIGKILL)

    async def after_the_loss(student: Visitor):
        if student in victims:
            with pytest.raises(ConnectionClosed):
                await student.wait_closed()  # the browser sees its socket drop
            return await student.reconnect()
        return await student.run()  # a student of the living replica reruns its page on the same socket

    runs = loop.run(_each(after_the_loss, students))
    for student, run in zip(students, runs):
        assert (run.status, run.exceptions) == ("FINISHED_SUCCESSFULLY", []), run.exceptions
        assert student.query["text"].encode() in run.shown, "the page did not come back from its link"
        assert student.replicas[-1] == "r2" and student.cookies[COOKIE] == "r2"
    assert all(_replica_of(student) == "r2" for student in others)
    loop.run(_each(Visitor.close, students))
    loop.close()


def test_sigterm_stops_nginx_and_every_replica(served):
    supervisor, _, run_dir = served
    processes = descendants(supervisor.pid)
    assert len(processes) >= 5, "expected two replicas, nginx's master and its worker, the rooms' redis-server"
    assert _state(run_dir)["redis"]["pid"] in processes
    supervisor.send_signal(signal.SIGTERM)
    assert supervisor.wait(60) == 0
    assert [pid for pid in processes if alive(pid)] == [], f"left running after SIGTERM; logs in {run_dir}"



async def _each(visit, students):
    return await asyncio.gather(*(visit(student) for student in students))
