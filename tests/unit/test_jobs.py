"""Background jobs lower torch's thread count only while they run (it is shared by every new thread)."""

from __future__ import annotations

import threading

import torch

from vizcore.jobs import BackgroundJob


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
