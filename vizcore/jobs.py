"""Background jobs (fine-tuning, the tiny Transformer, and any later kind) and the one queue that runs them.

``BackgroundJob`` is a stoppable daemon thread: subclasses write ``_run``, which checks ``self._stop``
each step; ``TrainingJob`` is one that runs a training function and fills a history the page polls.
``JobQueue`` is the server's single line of jobs:

* at most ``max_running`` jobs run at once, server-wide (1 on a 2-core server: a core stays free for pages);
* at most one running job per owner (a browser session);
* round-robin between owners: the next job to start belongs to the owner whose last job started
  longest ago (owners with none started go first, by arrival), so a session's second job waits
  behind every other session's first;
* ``stop`` takes a waiting job out of the line, or ends a running one at its next step;
* an owner that ``is_alive`` reports gone for ``grace_s`` seconds (a closed tab) has its jobs stopped
  and released: the queue drops them and each job drops what its run made (model copies, tensors),
  so the memory can be collected even while something else still holds the job object.

Pure Python, no streamlit: the UI passes ``is_alive`` (see ``ui/jobs.py``).
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from vizcore.errors import VizError

_LOG = logging.getLogger(__name__)
MAX_JOBS_ENV = "VIZCORE_MAX_JOBS"
MAX_REMEMBERED_OWNERS = 1000  # owners whose last start the round-robin remembers

# torch.set_num_threads in any thread also sets the count every thread started later gets (measured:
# after a job thread set 1, Streamlit's new script-run threads ran on 1 thread too, and their numbers
# differed in the last digits from the same computation on the usual 2). So the count is lowered
# while jobs run, to leave the other sessions a core, and put back when the last job ends.
_threads_lock = threading.Lock()
_jobs_running = 0
_usual_threads = 0


class JobReleased(Exception):
    """Raised inside a released job's run (see ``BackgroundJob.check_released``): nobody will read the rest."""


class BackgroundJob:
    """Runs ``self._run`` in a daemon thread; ``stop()`` sets ``self._stop``, which the run checks each step.

    The run uses ``threads`` torch threads (1 by default, so a 2-core server keeps a core for its pages).
    ``status``: ``waiting`` (not started), ``running``, then ``done``, ``stopped`` or ``error`` (``error``
    holds a message for the page). A job stopped before it started never runs and ends ``stopped``.
    Subclasses keep what their run made in attributes and drop it in ``_release``.
    """

    name = "vizcore-job"
    kind = "run"  # what the queue's messages call it ("fine-tuning run")
    failure = "The run failed"  # prefix of the message of an unexpected exception
    again = "Train again"  # what the page's button does, for "... to start over"
    done_word = "trained"  # "Stopped before it started: nothing was trained."
    threads = 1

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._ended = threading.Event()  # the run returned, or the job was stopped before it started
        self._state_lock = threading.Lock()
        self._thread = threading.Thread(target=self._run_with_threads, name=self.name, daemon=True)
        self._when_ended: list[Callable[[BackgroundJob], None]] = []
        self.error: str | None = None
        self.released = False

    def start(self):
        with self._state_lock:
            if not self._stop.is_set():
                self._thread.start()
        return self

    def stop(self) -> None:
        with self._state_lock:
            self._stop.set()
            if self._thread.ident is None:
                self._ended.set()  # it will never run: nothing to wait for

    def release(self) -> None:
        """Stop the job and drop what it made, now or when its run returns (nobody will read it)."""
        with self._state_lock:
            self._stop.set()
            self.released = True
            if self._thread.ident is None:
                self._ended.set()
            if self._ended.is_set():
                self._release()

    def check_released(self) -> None:
        """Called by a run's progress hooks: ends a released run at once, skipping what a stopped run still
        does for its reader (a final evaluation), since it has none."""
        if self.released:
            raise JobReleased

    def join(self, timeout: float | None = None) -> None:
        """Wait up to ``timeout`` seconds for the job to end (waiting jobs too: until run or stopped)."""
        if self._ended.wait(timeout) and self._thread.ident is not None:
            self._thread.join()  # it has only to return now

    def when_ended(self, callback: Callable[[BackgroundJob], None]) -> None:
        """Call ``callback(job)`` in the job's thread once its run has returned (the queue's hook)."""
        self._when_ended.append(callback)

    @property
    def running(self) -> bool:
        return self._thread.is_alive() and not self._ended.is_set()

    @property
    def finished(self) -> bool:
        """Ended: ran to its end, was stopped, failed, or was stopped before it started."""
        return self._ended.is_set()

    @property
    def started(self) -> bool:
        """Its run began (it may have ended since)."""
        return self._thread.ident is not None

    @property
    def waiting(self) -> bool:
        return self._thread.ident is None and not self._ended.is_set()

    @property
    def status(self) -> str:
        if not self._ended.is_set():
            return "waiting" if self._thread.ident is None else "running"
        if self.error is not None:
            return "error"
        return "stopped" if self._was_stopped() else "done"

    def _was_stopped(self) -> bool:
        return self._stop.is_set()

    def _run_with_threads(self) -> None:
        import torch

        global _jobs_running, _usual_threads
        with _threads_lock:
            if _jobs_running == 0:
                _usual_threads = torch.get_num_threads()
            _jobs_running += 1
        torch.set_num_threads(self.threads)
        try:
            self._run()
        except JobReleased:
            pass
        except VizError as error:
            self.error = str(error)
        except Exception as error:  # a bug or out of memory: the page shows it instead of a silent dead thread
            _LOG.exception("%s failed", self.name)
            self.error = f"{self.failure}: {type(error).__name__}: {error}"
        finally:
            with _threads_lock:
                _jobs_running -= 1
                if _jobs_running == 0:
                    torch.set_num_threads(_usual_threads)
            with self._state_lock:
                self._ended.set()
                if self.released:
                    self._release()
            for callback in self._when_ended:
                try:
                    callback(self)
                except Exception:  # a hook's bug must not hide the job's own outcome
                    _LOG.exception("a when_ended callback of %s failed", self.name)

    def _run(self) -> None:
        raise NotImplementedError

    def _release(self) -> None:
        """Drop references to what the run made (called with the state lock held, after the run)."""


@dataclass
class TrainingHistory:
    """What a training run has logged so far: one dict per logged step, and ``(step, array)`` snapshots
    (e.g. attention weights). The run appends; a page reads a ``copy()``."""

    steps: list[dict] = field(default_factory=list)
    snapshots: list[tuple[int, Any]] = field(default_factory=list)

    def copy(self) -> TrainingHistory:
        return type(self)(list(self.steps), list(self.snapshots))


class TrainingJob(BackgroundJob):
    """A run of ``train(config, history, stop, on_step)`` that fills a history the page polls with ``snapshot()``.

    Subclasses set ``train`` (the training function, as a staticmethod) and ``history_type`` (a class with
    ``copy()``, such as a ``TrainingHistory``). The function's result, with its ``stopped`` flag, is
    ``self.result`` once it returns.
    """

    failure = "Training failed"
    history_type: type
    train: Callable  # (config, history, stop: threading.Event, on_step: (step) -> None) -> result

    def __init__(self, config) -> None:
        self.config = config.validate()
        super().__init__()
        self._history = self.history_type()
        self.step = 0
        self.result = None

    def snapshot(self):
        """A copy of the history so far, safe to read while the run goes on."""
        return self._history.copy()

    def _on_step(self, step: int) -> None:
        self.check_released()
        self.step = step

    def _run(self) -> None:
        self.result = self.train(self.config, self._history, self._stop, self._on_step)

    def _was_stopped(self) -> bool:
        return self.result.stopped if self.result is not None else super()._was_stopped()

    def _release(self) -> None:
        self.result, self._history = None, self.history_type()


def max_jobs_from_env(default: int | None = None) -> int:
    """Server-wide cap on running jobs: ``$VIZCORE_MAX_JOBS``, else cores - 1 (at least 1)."""
    value = os.environ.get(MAX_JOBS_ENV, "").strip()
    if not value:
        return default if default is not None else max(1, (os.cpu_count() or 2) - 1)
    if not value.isdigit() or int(value) < 1:
        raise VizError(f"{MAX_JOBS_ENV} must be a whole number of at least 1 (how many background jobs "
                       f"may run at once); it is '{value}'. Fix or unset it and restart the server.")
    return int(value)


class JobQueue:
    """One line of background jobs for the whole server; see the module docstring for the rules.

    ``is_alive(owner)`` is asked every ``check_every_s`` seconds (by a daemon thread that exists
    while the queue has jobs) about each owner with a job; an owner reported gone for ``grace_s``
    seconds in a row is reaped. ``is_alive`` must be quick (it is asked under the queue's lock); if it
    raises, the owner counts as alive.
    """

    def __init__(self, max_running: int = 1, is_alive: Callable[[str], bool] | None = None,
                 grace_s: float = 5.0, check_every_s: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if max_running < 1:
            raise VizError(f"At least one job must be allowed to run; got max_running={max_running}.")
        self.max_running = max_running
        self.grace_s, self.check_every_s = grace_s, check_every_s
        self._is_alive = is_alive or (lambda owner: True)
        self._clock = clock
        self._lock = threading.RLock()
        self._waiting: list[tuple[int, str, BackgroundJob]] = []  # (arrival, owner, job), by arrival
        self._running: dict[BackgroundJob, str] = {}  # job -> owner
        self._last_started: dict[str, int] = {}  # owner -> sequence number of its last start
        self._gone_since: dict[str, float] = {}  # owner -> when is_alive first said no
        self._sequence = itertools.count(1)
        self._reaper: threading.Thread | None = None

    def submit(self, owner: str, job: BackgroundJob) -> BackgroundJob:
        """Put ``job`` in line for ``owner``; it starts now if a slot is free and the owner runs nothing."""
        with self._lock:
            if job in self._running or any(queued is job for _, _, queued in self._waiting):
                raise ValueError("This job is already in the queue.")
            if job.finished or not job.waiting:
                raise ValueError("Only a job that has not started can be queued.")
            self._waiting.append((next(self._sequence), owner, job))
            self._schedule()
            self._watch()
        return job

    def stop(self, job: BackgroundJob) -> None:
        """A waiting job leaves the line (it never runs); a running one ends at its next step."""
        with self._lock:
            self._waiting = [entry for entry in self._waiting if entry[2] is not job]
        job.stop()

    def position(self, job: BackgroundJob) -> int | None:
        """1-based place of a waiting job in ``line()`` (1 = next to start); None if it is not waiting."""
        for place, queued in enumerate(self.line(), start=1):
            if queued is job:
                return place
        return None

    def line(self) -> list[BackgroundJob]:
        """Waiting jobs in the order they will start: round by round, one job per owner in each round,
        owners ordered by their last start (never started first, then by arrival)."""
        with self._lock:
            by_owner: dict[str, list[tuple[int, BackgroundJob]]] = {}
            for arrival, owner, job in self._waiting:
                if not job.finished:
                    by_owner.setdefault(owner, []).append((arrival, job))
            owners = sorted(by_owner, key=lambda o: (self._last_started.get(o, 0), by_owner[o][0][0]))
            rounds = max((len(jobs) for jobs in by_owner.values()), default=0)
            return [by_owner[o][r][1] for r in range(rounds) for o in owners if r < len(by_owner[o])]

    def running(self) -> list[BackgroundJob]:
        with self._lock:
            return list(self._running)

    def running_for(self, owner: str) -> BackgroundJob | None:
        """The job this owner has running, if any (one at most)."""
        with self._lock:
            return next((job for job, holder in self._running.items() if holder == owner), None)

    def owner_of(self, job: BackgroundJob) -> str | None:
        with self._lock:
            if job in self._running:
                return self._running[job]
            return next((owner for _, owner, queued in self._waiting if queued is job), None)

    def reap(self) -> list[BackgroundJob]:
        """Stop and release the jobs of owners gone for ``grace_s`` seconds; returns those jobs."""
        with self._lock:
            owners = set(self._running.values()) | {owner for _, owner, _ in self._waiting}
            gone = [owner for owner in owners if self._gone_for_grace(owner)]
            reaped = [job for job, owner in self._running.items() if owner in gone]
            reaped += [job for _, owner, job in self._waiting if owner in gone]
            self._waiting = [entry for entry in self._waiting if entry[1] not in gone]
            for owner in gone:
                self._gone_since.pop(owner, None)
                self._last_started.pop(owner, None)
            for owner in set(self._gone_since) - owners:  # its jobs ended meanwhile
                del self._gone_since[owner]
        for job in reaped:
            _LOG.info("stopping %s: its session is gone", job.name)
            job.release()
        with self._lock:
            self._schedule()  # waiting jobs reaped: others may start (running ones free their slot when they end)
        return reaped

    def _gone_for_grace(self, owner: str) -> bool:
        try:
            alive = bool(self._is_alive(owner))
        except Exception:
            _LOG.exception("is_alive(%r) failed; counting the owner as alive", owner)
            alive = True
        if alive:
            self._gone_since.pop(owner, None)
            return False
        since = self._gone_since.setdefault(owner, self._clock())
        return self._clock() - since >= self.grace_s

    def _schedule(self) -> None:
        """Start waiting jobs while there is a free slot and a job whose owner runs nothing (lock held)."""
        self._waiting = [entry for entry in self._waiting if not entry[2].finished]  # stopped behind our back
        while len(self._running) < self.max_running:
            busy = set(self._running.values())
            job = next((queued for queued in self.line() if self.owner_of(queued) not in busy), None)
            if job is None:
                return
            owner = self.owner_of(job)
            self._waiting = [entry for entry in self._waiting if entry[2] is not job]
            self._running[job] = owner
            self._last_started[owner] = next(self._sequence)
            if len(self._last_started) > MAX_REMEMBERED_OWNERS:  # forget the longest-served owner
                del self._last_started[min(self._last_started, key=self._last_started.get)]
            job.when_ended(self._on_job_end)
            job.start()
            if job.finished:  # stopped by another thread just before it could start
                self._running.pop(job, None)

    def _on_job_end(self, job: BackgroundJob) -> None:
        with self._lock:
            self._running.pop(job, None)
            self._schedule()

    def _watch(self) -> None:
        """Make sure a reaper thread runs while there are jobs (lock held)."""
        if self._reaper is None or not self._reaper.is_alive():
            self._reaper = threading.Thread(target=self._reap_while_busy, name="vizcore-job-reaper", daemon=True)
            self._reaper.start()

    def _reap_while_busy(self) -> None:
        while True:
            time.sleep(self.check_every_s)
            with self._lock:
                if not self._running and not self._waiting:
                    self._reaper = None
                    return
            self.reap()
