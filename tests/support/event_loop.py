"""An event loop in a thread of its own, for tests that speak a websocket protocol (asyncio).

``make test`` runs every tier in one pytest session, and where a browser test ran first in a test process,
Playwright's sync API keeps an event loop running in its main thread: ``asyncio.run`` and
``loop.run_until_complete`` refuse to run there (a clean-clone run failed on it each time a test used them, while the
test alone passed). A loop in its own thread runs whatever ran before.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """One loop for a whole visit (a websocket belongs to the loop that opened it): ``run`` each step on it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="test-event-loop", daemon=True)
        self._thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float = 600) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=30)
        self.loop.close()

    def __enter__(self) -> LoopThread:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def run_async(coroutine: Coroutine[Any, Any, T], timeout: float = 600) -> T:
    """``asyncio.run(coroutine)``, whatever loop the calling thread has running."""
    with LoopThread() as loop:
        return loop.run(coroutine, timeout)
