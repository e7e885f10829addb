"""The class channel (vizcore/lessons/channel.py, issue 46 A-C) over HTTP: a real uvicorn server in a thread serving
the channel's routes over an in-memory store, read with httpx as a browser's EventSource reads it.

What a stream says and to whom: a student's stream says the room's position (lesson, step, move count) at once and at
every move, a heartbeat when quiet, ``ended`` when the class ends, and nothing else (not the sentence, not the
answers, never the secret); an unknown, malformed or ended code gets 404 and an empty body; the answers need the
class's watch token (403 without it), which moves nothing; open streams per client address are bounded (429), the
address behind a local proxy being the one it forwards; every stream ends when the server is stopping."""

from __future__ import annotations

import json
import socket
import threading
import time
from contextlib import contextmanager

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette

from vizcore.lessons.board import NotesBoard
from vizcore.lessons.board import Position as NotesPosition
from vizcore.lessons.channel import ClassChannel, Limits, client_address
from vizcore.lessons.rooms import MemoryRooms, NotTheTeacher, secret_hash, watch_token

PER_ADDRESS = 3


class Server:
    """The channel's routes on a free localhost port, its store and board, and a switch that stops its streams."""

    def __init__(self, heartbeat_s: float = 15.0) -> None:
        self.rooms, self.board, self.stop_streams = MemoryRooms(), NotesBoard(), threading.Event()
        self.channel = ClassChannel(lambda: self.rooms, lambda: self.board, stopping=self.stop_streams.is_set,
                                    per_address=PER_ADDRESS, heartbeat_s=heartbeat_s)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        config = uvicorn.Config(Starlette(routes=self.channel.routes()), host="127.0.0.1", port=self.port,
                                log_level="warning", lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def __enter__(self) -> "Server":
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert time.monotonic() < deadline, "the channel's server did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc) -> None:
        self.stop_streams.set()
        self.server.should_exit = True
        self.thread.join(timeout=20)


@pytest.fixture
def server():
    with Server() as running:
        yield running


class Events:
    """An open stream's events, read one at a time: (event name, data)."""

    def __init__(self, response: httpx.Response) -> None:
        self.response, self.raw = response, []
        self._lines = response.iter_lines()

    def next(self) -> tuple[str, dict]:
        name, data = None, None
        for line in self._lines:
            self.raw.append(line)
            if line.startswith("event: "):
                name = line[len("event: "):]
            elif line.startswith("data: "):
                data = json.loads(line[len("data: "):])
            elif line == "" and name is not None:
                return name, data
        raise EOFError("the stream ended")


@contextmanager
def stream(url: str, headers: dict | None = None, timeout: float = 30):
    with httpx.Client(timeout=timeout) as client, client.stream("GET", url, headers=headers or {}) as response:
        yield response, Events(response)


def test_a_students_stream_says_the_position_at_once_and_at_every_move_and_nothing_else(server):
    code, secret = server.rooms.open("attention", 1, "A secret sentence of the teacher's.")
    with stream(server.url(f"/api/class/events?room={code.lower()}")) as (response, events):
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        assert response.headers["x-accel-buffering"] == "no"
        assert events.next() == ("position", {"lesson": "attention", "step": 1, "moves": 0})
        server.rooms.move(code, secret, "attention", 2, "A secret sentence of the teacher's.")
        assert events.next() == ("position", {"lesson": "attention", "step": 2, "moves": 1})
        server.rooms.answer(code, "s1", "attention", 2, "it")  # an answer says nothing to the students
        server.rooms.move(code, secret, "heads", 1, "Another.")
        assert events.next() == ("position", {"lesson": "heads", "step": 1, "moves": 2})
        server.rooms.close(code, secret)
        assert events.next() == ("ended", {})
        with pytest.raises(EOFError):
            events.next()
    said = "\n".join(events.raw)
    assert secret not in said and secret_hash(secret) not in said
    assert "sentence" not in said and '"it"' not in said  # neither the teacher's sentence nor an answer


def test_a_code_that_is_not_a_live_class_gets_404_and_nothing_else(server):
    code, secret = server.rooms.open("attention", 1, "")
    server.rooms.close(code, secret)
    other, _ = server.rooms.open("attention", 1, "")
    unknown = next(c for c in ("AAAAAA", "BBBBBB") if c not in (code, other))
    for room in (unknown, code, "0O1I00", "", "A" * 500):
        for path in (f"/api/class/events?room={room}", f"/api/class/answers?room={room}&lesson=attention&step=1"):
            answer = httpx.get(server.url(path), timeout=10)
            assert (answer.status_code, answer.content) == (404, b""), (room, path)
    assert httpx.get(server.url("/api/class/events"), timeout=10).status_code == 404


def test_the_answers_need_the_watch_token_which_moves_nothing(server):
    code, secret = server.rooms.open("attention", 3, "")
    token = watch_token(secret_hash(secret))
    path = f"/api/class/answers?room={code}&lesson=attention&step=3"
    for headers in ({}, {"X-Class-Watch": "nope"}, {"X-Class-Watch": secret}):
        assert httpx.get(server.url(path), headers=headers, timeout=10).status_code == 403
    with pytest.raises(NotTheTeacher):
        server.rooms.move(code, token, "attention", 4, "")  # the token is not the secret
    server.rooms.answer(code, "s1", "attention", 3, "animal")
    with stream(server.url(path), {"Cookie": f"vizcore_watch={token}"}) as (response, events):
        assert response.status_code == 200
        assert events.next() == ("tally", {"lesson": "attention", "step": 3, "counts": {"animal": 1}})
        for student, choice in (("s2", "it"), ("s3", "it"), ("s1", "it")):
            server.rooms.answer(code, student, "attention", 3, choice)
        deadline = time.monotonic() + 10
        counts = {}
        while counts != {"it": 3}:  # a burst may be read once: the last tally is all three
            assert time.monotonic() < deadline, counts
            counts = events.next()[1]["counts"]
    assert secret not in "\n".join(events.raw)


def test_open_streams_per_address_are_bounded_and_given_back(server):
    code, _ = server.rooms.open("attention", 1, "")
    url = server.url(f"/api/class/events?room={code}")
    with httpx.Client(timeout=30) as client:
        opened = [client.stream("GET", url) for _ in range(PER_ADDRESS)]
        responses = [s.__enter__() for s in opened]
        assert [r.status_code for r in responses] == [200] * PER_ADDRESS
        assert client.get(url).status_code == 429
        with client.stream("GET", url, headers={"X-Forwarded-For": "10.1.2.3"}) as elsewhere:
            assert elsewhere.status_code == 200  # another student behind the local proxy
        opened[0].__exit__(None, None, None)
        deadline = time.monotonic() + 10
        while server.channel.limits.open_streams() >= PER_ADDRESS:  # the server sees the stream close
            assert time.monotonic() < deadline
            time.sleep(0.05)
        with client.stream("GET", url) as again:
            assert again.status_code == 200
        for s in opened[1:]:
            s.__exit__(None, None, None)


def test_behind_a_proxy_on_this_machine_the_forwarded_address_is_counted():
    class Request:
        def __init__(self, peer: str, forwarded: str = "") -> None:
            self.client = type("Client", (), {"host": peer})()
            self.headers = {"x-forwarded-for": forwarded} if forwarded else {}

    assert client_address(Request("127.0.0.1", "203.0.113.9, 192.168.1.23")) == "192.168.1.23"
    assert client_address(Request("192.168.1.40", "10.9.9.9")) == "192.168.1.40"  # not a local proxy: not trusted
    assert client_address(Request("192.168.1.40")) == "192.168.1.40"
    limits = Limits(per_address=2, per_server=3)
    assert [limits.take("a"), limits.take("a"), limits.take("a")] == [None, None, 429]
    assert [limits.take("b"), limits.take("c")] == [None, 503]
    limits.give_back("a")
    assert limits.take("c") is None


def test_a_quiet_stream_beats_and_every_stream_ends_when_the_server_stops():
    with Server(heartbeat_s=1.0) as server:
        code, _ = server.rooms.open("attention", 1, "")
        with stream(server.url(f"/api/class/events?room={code}")) as (_, events):
            assert events.next()[0] == "position"
            assert events.next() == ("heartbeat", {"lesson": "attention", "step": 1, "moves": 0})
            server.stop_streams.set()
            with pytest.raises(EOFError):
                while True:
                    events.next()
        assert server.channel.limits.open_streams() == 0
        assert server.rooms.events.listening() == 0


def test_a_notes_window_hears_its_presenters_moves_only(server):
    with stream(server.url("/api/class/notes?presenter=p1")) as (_, events):
        assert events.next() == ("position", {"lesson": None, "step": None, "moves": 0})
        at = NotesPosition("attention", 2, "A sentence.", "m", "cpu", None)
        server.board.publish("p2", at)  # another presenter
        server.board.publish("p1", at)
        assert events.next() == ("position", {"lesson": "attention", "step": 2, "moves": 1})
        server.board.publish("p1", at)  # the same place again: no move
        server.board.publish("p1", NotesPosition("attention", 3, "A sentence.", "m", "cpu", None))
        assert events.next() == ("position", {"lesson": "attention", "step": 3, "moves": 2})
