"""Background jobs and their queue: torch's thread count lowered only while jobs run (it is shared by
every new thread); one line for every kind of job, fair between sessions, reaped when a session is gone."""

from __future__ import annotations

import gc
import threading
import weakref

import pytest
import torch

from vizcore.errors import VizError
from vizcore.jobs import MAX_JOBS_ENV, BackgroundJob, JobQueue, max_jobs_from_env


def threads_of_a_new_thread() -> int:
    seen: list[int] = []
    thread = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
    thread.start()
    thread.join()
    return seen[0]


class _Job(BackgroundJob):
    def __init__(self, threads: int) -> None:
        super().__init__()
        self.threads = threads
        self.seen: list[int] = []
        self.release = threading.Event()

    def _run(self) -> None:
        self.seen.append(torch.get_num_threads())
        self.release.wait(30)


def test_a_job_runs_on_its_threads_and_later_threads_get_the_usual_count_back():
    usual = threads_of_a_new_thread()
    first, second = _Job(usual + 1), _Job(usual + 1)
    first.start()
    second.start()
    while len(first.seen) + len(second.seen) < 2:
        threading.Event().wait(0.01)
    assert first.seen == second.seen == [usual + 1]
    first.release.set()
    first.join(30)
    assert threads_of_a_new_thread() == usual + 1  # the other job still runs
    second.release.set()
    second.join(30)
    assert threads_of_a_new_thread() == usual  # e.g. a Streamlit page run after fine-tuning


# The queue: every kind of job in one line, fair between sessions, reaped when a session is gone.

class _Held(BackgroundJob):
    """Makes a tensor (what a real run's model copy is), then holds its slot until finished or stopped."""

    def __init__(self, label: str, log: list[str] | None = None) -> None:
        super().__init__()
        self.label, self.log = label, log
        self.finish = threading.Event()
        self.made: torch.Tensor | None = None
        self.began = threading.Event()

    def _run(self) -> None:
        self.made = torch.zeros(1000)
        if self.log is not None:
            self.log.append(self.label)
        self.began.set()
        while not (self._stop.is_set() or self.finish.is_set()):
            self._stop.wait(0.01)

    def _release(self) -> None:
        self.made = None


def end(job: _Held) -> None:
    job.finish.set()
    job.join(30)
    assert job.finished and not job.running


def started(job: _Held) -> bool:
    return job.began.wait(10)


@pytest.fixture
def queue():
    made: list[JobQueue] = []

    def make(**options) -> JobQueue:
        made.append(JobQueue(**{"max_running": 1, "check_every_s": 60, **options}))
        return made[-1]

    yield make
    for q in made:  # nothing a failed test started keeps running
        for job in q.running() + q.line():
            q.stop(job)
            job.join(30)


def test_round_robin_a_session_s_second_job_waits_behind_other_sessions_first_jobs(queue):
    q, log = queue(), []
    a1, a2, b1, c1, b2 = (_Held(label, log) for label in ("a1", "a2", "b1", "c1", "b2"))
    q.submit("A", a1)
    assert started(a1)
    for owner, job in (("A", a2), ("B", b1), ("C", c1), ("B", b2)):
        q.submit(owner, job)
    assert q.line() == [b1, c1, a2, b2]
    assert [q.position(job) for job in (b1, c1, a2, b2)] == [1, 2, 3, 4] and q.position(a1) is None
    for running, following in ((a1, b1), (b1, c1), (c1, a2), (a2, b2)):
        end(running)
        assert started(following)
    end(b2)
    assert log == ["a1", "b1", "c1", "a2", "b2"]
    assert q.running() == [] and q.line() == []


def test_a_session_runs_one_job_at_a_time_even_with_free_slots(queue):
    q = queue(max_running=2)
    a1, a2, b1 = _Held("a1"), _Held("a2"), _Held("b1")
    q.submit("A", a1)
    q.submit("A", a2)
    assert started(a1) and a2.waiting and a2.status == "waiting" and q.position(a2) == 1
    assert q.running_for("A") is a1
    q.submit("B", b1)
    assert started(b1) and set(q.running()) == {a1, b1}  # B takes the free slot; A's second still waits
    end(a1)
    assert started(a2)
    end(a2), end(b1)


def test_the_server_wide_cap_holds_and_the_next_in_line_starts_when_a_slot_frees(queue):
    q = queue(max_running=2)
    jobs = {owner: _Held(owner) for owner in "ABC"}
    for owner, job in jobs.items():
        q.submit(owner, job)
    assert started(jobs["A"]) and started(jobs["B"])
    assert len(q.running()) == 2 and jobs["C"].waiting and q.position(jobs["C"]) == 1
    end(jobs["B"])
    assert started(jobs["C"]) and len(q.running()) == 2
    end(jobs["A"]), end(jobs["C"])


def test_stop_while_waiting_takes_the_job_out_of_the_line_and_it_never_runs(queue):
    q = queue()
    a, b, c = _Held("a"), _Held("b"), _Held("c")
    for owner, job in (("A", a), ("B", b), ("C", c)):
        q.submit(owner, job)
    assert q.position(c) == 2
    q.stop(b)
    assert b.finished and b.status == "stopped" and q.position(b) is None and q.position(c) == 1
    b.join(1)  # a stopped waiting job has nothing to wait for
    end(a)
    assert started(c)
    end(c)
    assert not b.began.is_set() and b.made is None


def test_stop_while_running_ends_the_run_and_frees_its_slot(queue):
    q = queue()
    a, b = _Held("a"), _Held("b")
    q.submit("A", a)
    q.submit("B", b)
    assert started(a)
    q.stop(a)
    a.join(30)
    assert a.status == "stopped" and not a.running and a.made is not None  # the session keeps its result
    assert started(b)
    end(b)
    assert b.status == "done"


def test_a_gone_session_s_jobs_are_stopped_and_their_objects_freed(queue):
    alive = {"A", "B"}
    q = queue(is_alive=lambda owner: owner in alive, grace_s=0)
    running, waiting, other = _Held("running"), _Held("waiting"), _Held("other")
    q.submit("A", running)
    q.submit("A", waiting)
    q.submit("B", other)
    assert started(running)
    made = weakref.ref(running.made)
    alive.discard("A")  # the tab is closed; the session object may live on (it holds the job)
    assert set(q.reap()) == {running, waiting}
    running.join(30)
    assert running.status == "stopped" and waiting.status == "stopped" and not waiting.began.is_set()
    assert started(other) and q.line() == []  # the line moved on
    gc.collect()
    assert made() is None, "something still holds the gone session's tensor"
    end(other)


def test_a_session_gone_for_less_than_the_grace_period_keeps_its_job(queue):
    now, alive = [0.0], {"A": True}
    q = queue(is_alive=lambda owner: alive[owner], grace_s=5, clock=lambda: now[0])
    job = _Held("a")
    q.submit("A", job)
    assert started(job)
    alive["A"] = False  # a dropped websocket that the browser reopens
    now[0] = 3.0
    assert q.reap() == []
    alive["A"] = True
    now[0] = 9.0
    assert q.reap() == [] and job.running
    alive["A"] = False
    assert q.reap() == []  # gone since 9.0
    now[0] = 14.0
    assert q.reap() == [job]
    job.join(30)
    assert job.status == "stopped"


def test_the_queue_reaps_by_itself_within_seconds(queue):
    alive = {"A"}
    q = queue(is_alive=lambda owner: owner in alive, grace_s=0.2, check_every_s=0.05)
    job = _Held("a")
    q.submit("A", job)
    assert started(job)
    alive.clear()
    job.join(5)
    assert job.finished and job.status == "stopped" and job.made is None


def test_an_owner_whose_liveness_cannot_be_told_counts_as_alive(queue):
    def broken(owner):
        raise RuntimeError("no runtime")

    q = queue(is_alive=broken, grace_s=0)
    job = _Held("a")
    q.submit("A", job)
    assert started(job) and q.reap() == [] and job.running
    end(job)


def test_a_job_is_queued_once_and_only_before_it_starts(queue):
    q = queue()
    job = _Held("a")
    q.submit("A", job)
    with pytest.raises(ValueError, match="already"):
        q.submit("B", job)
    end(job)
    with pytest.raises(ValueError, match="not started"):
        q.submit("A", job)


def test_an_exception_in_a_run_becomes_the_job_s_error():
    class Failing(BackgroundJob):
        failure = "Sweep failed"

        def _run(self) -> None:
            raise ZeroDivisionError("division by zero")

    job = Failing().start()
    job.join(30)
    assert job.status == "error" and job.error == "Sweep failed: ZeroDivisionError: division by zero"


@pytest.mark.parametrize(("value", "expected"), [("", 7), ("3", 3), ("1", 1)])
def test_the_cap_comes_from_the_environment(monkeypatch, value, expected):
    monkeypatch.setenv(MAX_JOBS_ENV, value)
    assert max_jobs_from_env(default=7) == expected


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5"])
def test_a_bad_cap_is_a_clear_error(monkeypatch, value):
    monkeypatch.setenv(MAX_JOBS_ENV, value)
    with pytest.raises(VizError, match=f"{MAX_JOBS_ENV} must be a whole number of at least 1.*'{value}'"):
        max_jobs_from_env()
