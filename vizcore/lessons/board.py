"""Where each presenter is, for their speaker notes window (issue 34 B). No streamlit here.

A notes window (``/lessons?notes=1&presenter=ID``) is a session of its own and cannot read the presenter's, so each
presenter run publishes its position here, under the random presenter id of its link; the window's page listens
to the presenter's moves through the class channel (vizcore/lessons/channel.py) and draws the notes again when one
comes. One board per server process (``notes_board()``): a notes window opened beside the presenter's reaches the
same replica (the sticky cookie), so it needs no shared store.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from vizcore.lessons.events import MOVE, Hub

BOARD_IDLE_S = 3 * 3600  # a presenter not heard from for three hours is forgotten


@dataclass(frozen=True)
class Position:
    """Where a presenter is: what the notes window needs to show that step's notes and answer."""

    lesson: str
    step: int
    text: str
    model: str
    device: str
    query: int | None


class NotesBoard:
    """Each presenter's position, by presenter id, behind one lock; ``events`` hears a presenter's moves."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._at: dict[str, tuple[Position, float, int]] = {}  # position, last seen, moves
        self.events = Hub()

    def publish(self, presenter: str, position: Position, now: float | None = None) -> None:
        """The presenter is at ``position``: the notes windows listening hear it when it is a move."""
        now = time.monotonic() if now is None else now
        with self._lock:
            before = self._at.get(presenter)
            moved = before is None or before[0] != position
            moves = (0 if before is None else before[2]) + moved
            self._at[presenter] = (position, now, moves)
            for name in [n for n, (_, seen, _) in self._at.items() if now - seen > BOARD_IDLE_S]:
                del self._at[name]
        if moved:
            self.events.publish(presenter, MOVE)

    def read(self, presenter: str) -> Position | None:
        with self._lock:
            found = self._at.get(presenter)
        return None if found is None else found[0]

    def read_moves(self, presenter: str) -> tuple[Position | None, int]:
        """The presenter's position and how many times it changed (None, 0: not heard from)."""
        with self._lock:
            found = self._at.get(presenter)
        return (None, 0) if found is None else (found[0], found[2])


_board = NotesBoard()


def notes_board() -> NotesBoard:
    """This server process's board (every session's and the channel's)."""
    return _board
