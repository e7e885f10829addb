"""Who hears that a class or a presenter moved: listeners by topic, in this process. No streamlit here.

A topic is a class's code (its teacher moved, a student answered, the class ended) or a presenter's id (the
presenter moved). The stores (vizcore/lessons/rooms.py, rooms_redis.py) and the notes board (board.py) publish;
the class channel (channel.py: the students' and teachers' event streams) listens. A listener is called on the
publisher's thread, after the store's lock is released, with the event's kind; it must return at once (the channel's
hands the kind to its stream's asyncio loop with ``call_soon_threadsafe``).
"""

from __future__ import annotations

import sys
import threading
from typing import Callable

Listener = Callable[[str], None]

MOVE = "move"  # the teacher moved the class (or the presenter moved)
ANSWER = "answer"  # a student answered a step's question
END = "end"  # the teacher ended the class
KINDS = (MOVE, ANSWER, END)


class Hub:
    """Listeners by topic, behind one lock: ``subscribe`` returns the function that removes its listener."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: dict[str, list[Listener]] = {}

    def subscribe(self, topic: str, listener: Listener) -> Callable[[], None]:
        with self._lock:
            self._listeners.setdefault(topic, []).append(listener)

        def unsubscribe() -> None:
            with self._lock:
                listeners = self._listeners.get(topic, [])
                if listener in listeners:
                    listeners.remove(listener)
                if not listeners:
                    self._listeners.pop(topic, None)

        return unsubscribe

    def publish(self, topic: str, kind: str) -> None:
        with self._lock:
            listeners = list(self._listeners.get(topic, ()))
        for listener in listeners:
            try:
                listener(kind)
            except Exception as error:  # noqa: BLE001 - one broken listener (a closed loop) must not stop a move
                print(f"vizcore: a listener of {topic!r} failed: {error!r}", file=sys.stderr, flush=True)

    def topics(self) -> list[str]:
        with self._lock:
            return list(self._listeners)

    def listening(self, topic: str | None = None) -> int:
        """How many listeners there are (on ``topic``, or on every topic)."""
        with self._lock:
            if topic is not None:
                return len(self._listeners.get(topic, ()))
            return sum(len(listeners) for listeners in self._listeners.values())
