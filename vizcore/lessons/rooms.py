"""Rooms: a class that follows its teacher through the lessons (issue 34 C). No streamlit here.

A teacher opens a room and gets its **code** (shown to the class, in a link ``/lessons?room=CODE`` and a QR code)
and a **secret** (kept in the teacher's session only: whoever holds it moves the class). Students read the room's
**position** (lesson, step, sentence) and follow it; they answer the step's question, and the teacher reads the
**tally** (counts per choice, no names). Whoever ``subscribe``s to a room hears its moves, answers and end as they
happen, in any process that shares the store (vizcore/lessons/channel.py pushes them to the browsers): nobody polls.

Codes are 6 symbols from 32 (digits 2-9 and the letters without I and O, so nothing reads as 0/O or 1/I):
32**6 = 1.07e9 codes. A room expires after ``IDLE_SECONDS`` without a move or an answer (a student only
watching does not keep it open).

Two stores share this contract (tests/support/rooms_contract.py checks both): ``MemoryRooms`` for one server
process (no outside service) and, for replicas behind a load balancer, a shared store
(vizcore/lessons/rooms_redis.py); ``vizcore.lessons.stores.open_rooms(url)`` opens the one a server is given.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Protocol

from vizcore.errors import VizError
from vizcore.lessons.events import ANSWER, END, MOVE, Hub, Listener

ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZ"
CODE_LENGTH = 6
IDLE_SECONDS = 3 * 60 * 60
MAX_CHOICE_CHARS = 200  # an answer is one of the question's choices: a short label


class RoomError(VizError):
    """A room cannot be used; the message says why and what to do."""


class NoSuchRoom(RoomError):
    pass


class RoomExpired(RoomError):
    pass


class NotTheTeacher(RoomError):
    pass


@dataclass(frozen=True)
class Position:
    """Where the teacher is. ``moves`` counts the teacher's moves (0 when the room opens), so a student can tell a
    new move from the one it already followed. ``quiz``: "pre" or "post" while the teacher has the lesson's quiz
    before or after it open (the students see the quiz instead of the step), else ""."""

    lesson: str
    step: int  # 1-based, as in links
    text: str
    moves: int = 0
    quiz: str = ""


def normalise_code(typed: str) -> str:
    """A code as a person types it: any case, spaces or dashes; 0/O read as O is not in the alphabet, so
    they are left for the check to refuse."""
    return "".join(ch for ch in str(typed).upper() if ch not in " -\t")


def check_code(typed: str) -> str:
    """The normalised code, or a RoomError saying what a code looks like."""
    code = normalise_code(typed)
    if len(code) != CODE_LENGTH or any(ch not in ALPHABET for ch in code):
        raise NoSuchRoom(f"'{typed}' is not a class code: a code has {CODE_LENGTH} letters and digits, as the "
                         "teacher's screen shows it (no 0, O, 1 or I). Check it with your teacher.")
    return code


def new_code() -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))


def new_secret() -> str:
    return secrets.token_urlsafe(24)


def secret_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def same_secret(stored_hash: str, secret: str) -> bool:
    return hmac.compare_digest(stored_hash, secret_hash(str(secret)))


def watch_token(stored_hash: str) -> str:
    """What lets the teacher's page read the class's answers as they come (``channel``), and nothing else: derived
    one way from the secret's hash (the teacher's session computes it from its secret, ``secret_hash``), so it
    neither moves the class nor tells the secret, and the store, which keeps only the hash, can check it."""
    return hashlib.sha256(f"watch:{stored_hash}".encode()).hexdigest()


def same_watch(stored_hash: str, token: str) -> bool:
    return hmac.compare_digest(watch_token(stored_hash), str(token))


QUIZZES = ("", "pre", "post")
# A quiz's submissions are counted as the answers of these steps of its lesson (``answer``, ``tally``): each student's
# score ("3 of 4") is their answer, and the teacher's chart of the answers shows the class's scores as they come.
QUIZ_STEPS = {"pre": 0, "post": -1}


def check_move(lesson: str, step: int, text: str, quiz: str = "") -> tuple[str, int, str, str]:
    if not isinstance(step, int) or step < 1:
        raise RoomError(f"A step is a number from 1; got {step!r}.")
    if not str(lesson).strip():
        raise RoomError("A move needs a lesson.")
    if quiz not in QUIZZES:
        raise RoomError(f"A quiz is 'pre' or 'post' (or none); got {quiz!r}.")
    return str(lesson), int(step), str(text), quiz


def check_choice(choice: str) -> str:
    choice = str(choice)
    if not choice.strip() or len(choice) > MAX_CHOICE_CHARS:
        raise RoomError(f"An answer is one of the question's choices (at most {MAX_CHOICE_CHARS} characters).")
    return choice


def expired_message(code: str) -> str:
    hours = IDLE_SECONDS // 3600
    return (f"The class {code} has ended (a class closes after {hours} hours with no activity, or when the "
            "teacher ends it). Ask your teacher for the new code.")


def unknown_message(code: str) -> str:
    return f"There is no class with the code {code}. Check the code with your teacher (no 0, O, 1 or I)."


NOT_THE_TEACHER = "Only the teacher's own browser session can move this class."


class Rooms(Protocol):
    """The store's contract. Every method takes the code as the student or teacher typed it (checked with
    ``check_code``) and raises NoSuchRoom, RoomExpired or NotTheTeacher with a message for the person."""

    def open(self, lesson: str, step: int, text: str) -> tuple[str, str]:
        """A new room at that position: (code, secret)."""

    def position(self, code: str) -> Position:
        """The teacher's current position (reading does not keep the room open)."""

    def move(self, code: str, secret: str, lesson: str, step: int, text: str, quiz: str = "") -> Position:
        """The teacher moves the class (to a step, or to the lesson's quiz ``pre`` or ``post``); a move to the
        position it is at already changes nothing."""

    def answer(self, code: str, student: str, lesson: str, step: int, choice: str) -> None:
        """A student's answer to a step's question; the student's last answer to that step counts."""

    def tally(self, code: str, lesson: str, step: int) -> dict[str, int]:
        """How many students gave each choice for that step (counts only)."""

    def close(self, code: str, secret: str) -> None:
        """The teacher ends the class: its code answers 'ended' from then on."""

    def check_watch(self, code: str, token: str) -> None:
        """NotTheTeacher unless ``token`` is the class's ``watch_token`` (the teacher's page reading the answers)."""

    def subscribe(self, code: str, listener: Listener) -> Callable[[], None]:
        """Call ``listener(kind)`` on every move, answer and end of the room ``code`` (a checked code), in any
        process sharing this store, until the returned function is called. Nothing is replayed: read the position
        after subscribing."""


@dataclass
class _Room:
    secret_hash: str
    position: Position
    touched: float
    answers: dict[tuple[str, int], dict[str, str]] = field(default_factory=dict)
    closed: bool = False


class MemoryRooms:
    """Rooms in this process's memory, behind one lock (Streamlit runs every session in its own thread). Ended and
    idle rooms are forgotten after another ``IDLE_SECONDS`` (until then their code answers 'ended', not 'unknown')."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._rooms: dict[str, _Room] = {}
        self._lock = threading.Lock()
        self.events = Hub()

    def _live(self, typed: str) -> tuple[str, _Room]:
        code = check_code(typed)
        room = self._rooms.get(code)
        if room is None:
            raise NoSuchRoom(unknown_message(code))
        if room.closed or self._clock() - room.touched > IDLE_SECONDS:
            raise RoomExpired(expired_message(code))
        return code, room

    def _forget_old(self) -> None:
        now = self._clock()
        for code in [c for c, r in self._rooms.items() if now - r.touched > 2 * IDLE_SECONDS]:
            del self._rooms[code]

    def open(self, lesson: str, step: int, text: str) -> tuple[str, str]:
        lesson, step, text, _ = check_move(lesson, step, text)
        with self._lock:
            self._forget_old()
            code = new_code()
            while code in self._rooms:
                code = new_code()
            secret = new_secret()
            self._rooms[code] = _Room(secret_hash(secret), Position(lesson, step, text), self._clock())
            return code, secret

    def position(self, code: str) -> Position:
        with self._lock:
            return self._live(code)[1].position

    def move(self, code: str, secret: str, lesson: str, step: int, text: str, quiz: str = "") -> Position:
        lesson, step, text, quiz = check_move(lesson, step, text, quiz)
        with self._lock:
            _, room = self._live(code)
            if not same_secret(room.secret_hash, secret):
                raise NotTheTeacher(NOT_THE_TEACHER)
            room.touched = self._clock()
            old = room.position
            if (old.lesson, old.step, old.text, old.quiz) != (lesson, step, text, quiz):
                room.position = Position(lesson, step, text, old.moves + 1, quiz)
            code, position = check_code(code), room.position
        if position != old:
            self.events.publish(code, MOVE)
        return position

    def answer(self, code: str, student: str, lesson: str, step: int, choice: str) -> None:
        choice = check_choice(choice)
        with self._lock:
            _, room = self._live(code)
            room.touched = self._clock()
            room.answers.setdefault((str(lesson), int(step)), {})[str(student)] = choice
        self.events.publish(check_code(code), ANSWER)

    def tally(self, code: str, lesson: str, step: int) -> dict[str, int]:
        with self._lock:
            _, room = self._live(code)
            counts: dict[str, int] = {}
            for choice in room.answers.get((str(lesson), int(step)), {}).values():
                counts[choice] = counts.get(choice, 0) + 1
            return counts

    def close(self, code: str, secret: str) -> None:
        with self._lock:
            _, room = self._live(code)
            if not same_secret(room.secret_hash, secret):
                raise NotTheTeacher(NOT_THE_TEACHER)
            room.closed = True
        self.events.publish(check_code(code), END)

    def check_watch(self, code: str, token: str) -> None:
        with self._lock:
            _, room = self._live(code)
            if not same_watch(room.secret_hash, token):
                raise NotTheTeacher(NOT_THE_TEACHER)

    def subscribe(self, code: str, listener: Listener) -> Callable[[], None]:
        return self.events.subscribe(check_code(code), listener)
