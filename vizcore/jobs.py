"""A stoppable daemon thread for the app's background training runs (fine-tuning, the tiny Transformer)."""

from __future__ import annotations

import threading

# torch.set_num_threads in any thread also sets the count every thread started later gets (measured:
# after a job thread set 1, Streamlit's new script-run threads ran on 1 thread too, and their numbers
# differed in the last digits from the same computation on the usual 2). So the count is lowered
# while jobs run, to leave the other sessions a core, and put back when the last job ends.
_threads_lock = threading.Lock()
_jobs_running = 0
_usual_threads = 0


class BackgroundJob:
    """Runs ``self._run`` in a daemon thread; ``stop()`` sets ``self._stop``, which the run checks each step.

    The run uses ``threads`` torch threads (1 by default, so a 2-core server keeps a core for its pages).
    """

    name = "vizcore-job"
    threads = 1

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run_with_threads, name=self.name, daemon=True)

    def start(self):
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

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
        finally:
            with _threads_lock:
                _jobs_running -= 1
                if _jobs_running == 0:
                    torch.set_num_threads(_usual_threads)

    def _run(self) -> None:
        raise NotImplementedError
