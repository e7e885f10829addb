"""Every page's background jobs go through here: submit, poll, stop, the Start and Stop buttons, and the
waiting-in-line notice.

One ``vizcore.jobs.JobQueue`` serves the whole server (fine-tuning, the tiny Transformer, and any later
kind of job). A job lives in its session's state under the page's key ("finetune.job"); the queue
knows its owner, the session, and asks Streamlit whether that session is still connected:
``Runtime.is_active_session`` (documented thread-safe) is false from the moment the browser's
websocket closes (tab closed, page left). A session that stays disconnected for the queue's grace
period (a reconnecting browser comes back within it) has its jobs stopped and released.
"""

from __future__ import annotations

import threading
import uuid
from typing import Callable

import streamlit as st
from streamlit import runtime
from streamlit.runtime.scriptrunner import get_script_run_ctx

from vizcore.errors import VizError
from vizcore.jobs import BackgroundJob, JobQueue, max_jobs_from_env

KEY_OWNER = "jobs.owner"
POLL_SECONDS = 1.0
GRACE_SECONDS = 5.0  # a dropped websocket that reconnects within this keeps its jobs
_queue_lock = threading.Lock()
_queue: JobQueue | None = None


def job_queue() -> JobQueue:
    """The server's one queue, created on first use (raises VizError if $VIZCORE_MAX_JOBS is invalid)."""
    global _queue
    with _queue_lock:
        if _queue is None:
            _queue = JobQueue(max_jobs_from_env(), is_alive=session_alive, grace_s=GRACE_SECONDS)
        return _queue


def owner() -> str:
    """This session's name in the queue: Streamlit's session id on a server; without a runtime (AppTest,
    where every session has the same id) an id kept in this session's state."""
    if runtime.exists():
        return get_script_run_ctx().session_id
    return st.session_state.setdefault(KEY_OWNER, uuid.uuid4().hex)


def session_alive(session_id: str) -> bool:
    """Whether a browser is connected to this session. Without a runtime nothing can disconnect: True."""
    if not runtime.exists():
        return True
    return runtime.get_instance().is_active_session(session_id)


def submit(key: str, job: BackgroundJob) -> BackgroundJob:
    """Queue ``job`` for this session and keep it in session state under ``key`` (replacing an ended one)."""
    job_queue().submit(owner(), job)
    st.session_state[key] = job
    return job


def current(key: str) -> BackgroundJob | None:
    return st.session_state.get(key)


def active(job: BackgroundJob | None) -> bool:
    """Waiting in line or running."""
    return job is not None and not job.finished


def stop(key: str) -> None:
    """Stop this session's job under ``key``: out of the line if waiting, at its next step if running."""
    job = current(key)
    if job is not None:
        job_queue().stop(job)


def start_stop(key: str, make: Callable[[], BackgroundJob], label: str, keys: tuple[str, str], where=(st, st),
               ready: bool = True, helps: tuple[str | None, str | None] = (None, None)) -> bool:
    """The start button (``label``) and Stop of this session's job under ``key``, drawn in ``where`` with the
    widget ``keys``. Start queues ``make()``: a VizError (a bad setting, a full line) is shown and the page
    goes on. Returns whether the job is waiting or running now."""
    busy = active(current(key))
    if where[0].button(label, type="primary", key=keys[0], disabled=busy or not ready, help=helps[0]):
        try:
            submit(key, make())
        except VizError as error:
            st.error(str(error))
        busy = active(current(key))
    where[1].button("Stop", key=keys[1], disabled=not busy, on_click=stop, args=(key,), help=helps[1])
    return busy


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def waiting_text(job: BackgroundJob) -> str:
    """Where a waiting job stands: its place in line, or the session's own run it waits for."""
    queue = job_queue()
    place = queue.position(job)
    if place is None:
        return "Starting…"
    running = len(queue.running())
    text = (f"Waiting for a free slot: **{ordinal(place)} in line**. {running} run(s) going on this server, "
            f"at most {queue.max_running} at a time. It starts by itself; Stop takes it out of the line.")
    own = queue.running_for(queue.owner_of(job) or "")
    if own is not None:
        text += f" This session's {own.kind} runs now, and a session runs one job at a time."
    return text


def show_status(job: BackgroundJob) -> bool:
    """Show the waiting-in-line notice for a waiting job; True if it was shown (nothing else to draw yet)."""
    if not job.waiting:
        return False
    st.info(waiting_text(job), icon=":material/hourglass_top:")
    return True


def stopped_text(job: BackgroundJob, kept: str) -> str:
    """What to say about a stopped job: ``kept`` when it ran and kept its partial result."""
    if job.released:
        return f"Ended when this tab disconnected, and what it had made was freed. {job.again} to start over."
    if not job.started:
        return f"Stopped before it started: nothing was {job.done_word}."
    return kept


def live(key: str, draw: Callable[[BackgroundJob], None]) -> None:
    """Draw this session's job under ``key`` with ``draw(job)``, again every second while it is waiting
    or running (the place in line and the progress move by themselves); one full rerun when it ends."""
    polling = active(current(key))
    st.fragment(run_every=POLL_SECONDS if polling else None)(_draw_live)(key, draw, polling)


def _draw_live(key: str, draw: Callable[[BackgroundJob], None], polling: bool) -> None:
    job = current(key)
    if job is None:
        return
    if polling and job.finished:
        st.rerun()  # ended since the last poll: redraw the whole page once (buttons, results)
    if not show_status(job):
        draw(job)
