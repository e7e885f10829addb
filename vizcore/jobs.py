"""A stoppable daemon thread for the app's background training runs (fine-tuning, the tiny Transformer)."""

from __future__ import annotations

import threading


class BackgroundJob:
    """Runs ``self._run`` in a daemon thread; ``stop()`` sets ``self._stop``, which the run checks each step."""

    name = "vizcore-job"

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)

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

    def _run(self) -> None:
        raise NotImplementedError
