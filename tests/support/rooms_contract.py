"""The rooms contract (vizcore/lessons/rooms.py), checked the same way on every store.

``check_contract(make)`` takes ``make(clock) -> Rooms``: a new, empty store reading time from ``clock`` (seconds).
A store for replicas is checked with the same calls, so a class behaves the same on one server and on several.
"""

from __future__ import annotations

import threading
from typing import Callable

import pytest

from vizcore.lessons.rooms import (
    ALPHABET,
    CODE_LENGTH,
    IDLE_SECONDS,
    NoSuchRoom,
    NotTheTeacher,
    Position,
    RoomError,
    RoomExpired,
    Rooms,
)


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def check_contract(make: Callable[[Clock], Rooms]) -> None:
    check_codes_and_moves(make)
    check_answers(make)
    check_teacher_only(make)
    check_expiry(make)
    check_concurrent_answers(make)


def check_codes_and_moves(make: Callable[[Clock], Rooms]) -> None:
    rooms = make(Clock())
    codes = {rooms.open("attention", 1, "A sentence.")[0] for _ in range(50)}
    assert len(codes) == 50
    assert all(len(c) == CODE_LENGTH and set(c) <= set(ALPHABET) for c in codes)
    code, secret = rooms.open("attention", 2, "The cat sat.")
    assert rooms.position(code) == Position("attention", 2, "The cat sat.", 0)
    typed = code[:3].lower() + " - " + code[3:]  # as a student types it
    assert rooms.position(typed) == rooms.position(code)
    assert rooms.move(code, secret, "heads", 4, "Another one.") == Position("heads", 4, "Another one.", 1)
    assert rooms.move(code, secret, "heads", 4, "Another one.").moves == 1  # the same place: not a move
    assert rooms.position(code) == Position("heads", 4, "Another one.", 1)
    assert rooms.move(code, secret, "heads", 4, "Another one.", "pre") == Position("heads", 4, "Another one.", 2, "pre")
    assert rooms.position(code).quiz == "pre"  # the quiz before the lesson is open: a move the students follow
    assert rooms.move(code, secret, "heads", 4, "Another one.") == Position("heads", 4, "Another one.", 3)
    with pytest.raises(RoomError, match="A quiz is 'pre' or 'post'"):
        rooms.move(code, secret, "heads", 4, "", "during")
    other, _ = rooms.open("masks", 1, "")
    assert rooms.position(other).lesson == "masks"  # rooms are apart
    for bad in ("", "ABC", "0O1I00", "ABCDEFG"):
        with pytest.raises(NoSuchRoom, match="code"):
            rooms.position(bad)
    unknown = next(c for c in ("A" * CODE_LENGTH, "B" * CODE_LENGTH) if c not in codes | {code, other})
    with pytest.raises(NoSuchRoom, match=unknown):
        rooms.position(unknown)
    with pytest.raises(RoomError):
        rooms.move(code, secret, "heads", 0, "")


def check_answers(make: Callable[[Clock], Rooms]) -> None:
    rooms = make(Clock())
    code, _ = rooms.open("attention", 1, "")
    assert rooms.tally(code, "attention", 1) == {}
    for student, choice in [("s1", "animal"), ("s2", "street"), ("s3", "animal"), ("s2", "animal")]:
        rooms.answer(code, student, "attention", 1, choice)
    rooms.answer(code, "s1", "attention", 2, "it")
    assert rooms.tally(code, "attention", 1) == {"animal": 3}  # s2 changed their mind: the last answer counts
    assert rooms.tally(code, "attention", 2) == {"it": 1}
    assert rooms.tally(code, "heads", 1) == {}
    with pytest.raises(RoomError):
        rooms.answer(code, "s4", "attention", 1, "")


def check_teacher_only(make: Callable[[Clock], Rooms]) -> None:
    rooms = make(Clock())
    code, secret = rooms.open("attention", 1, "")
    _, other_secret = rooms.open("attention", 1, "")
    for wrong in ("", "guess", other_secret, secret[:-1]):
        with pytest.raises(NotTheTeacher):
            rooms.move(code, wrong, "heads", 2, "")
        with pytest.raises(NotTheTeacher):
            rooms.close(code, wrong)
    assert rooms.position(code).step == 1
    rooms.close(code, secret)
    with pytest.raises(RoomExpired, match=code):
        rooms.position(code)
    with pytest.raises(RoomExpired):
        rooms.answer(code, "s1", "attention", 1, "x")


def check_expiry(make: Callable[[Clock], Rooms]) -> None:
    clock = Clock()
    rooms = make(clock)
    code, secret = rooms.open("attention", 1, "")
    watched, _ = rooms.open("attention", 1, "")
    clock.now += IDLE_SECONDS - 60
    rooms.move(code, secret, "attention", 2, "")  # a move keeps the room open
    rooms.position(watched)  # watching does not
    clock.now += 120
    assert rooms.position(code).step == 2
    with pytest.raises(RoomExpired, match="ended"):
        rooms.position(watched)
    clock.now += IDLE_SECONDS - 180
    rooms.answer(code, "s1", "attention", 2, "x")  # an answer keeps it open too
    clock.now += 120
    assert rooms.tally(code, "attention", 2) == {"x": 1}
    clock.now += IDLE_SECONDS + 1
    with pytest.raises(RoomExpired):
        rooms.move(code, secret, "attention", 3, "")


def check_concurrent_answers(make: Callable[[Clock], Rooms]) -> None:
    """Thirty students answer at once (Streamlit runs each session in its own thread): none is lost."""
    rooms = make(Clock())
    code, _ = rooms.open("attention", 1, "")
    start = threading.Barrier(30)

    def student(i: int) -> None:
        start.wait()
        rooms.answer(code, f"s{i}", "attention", 1, "even" if i % 2 == 0 else "odd")

    threads = [threading.Thread(target=student, args=(i,)) for i in range(30)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert rooms.tally(code, "attention", 1) == {"even": 15, "odd": 15}
