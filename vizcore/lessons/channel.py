"""The class channel: a class's and a presenter's moves pushed to the browsers as they happen (issue 46). No streamlit
here: these are Starlette routes, served by the app's ``st.App`` (app.py) on the same server as the pages.

    GET /api/class/events?room=CODE                    a student's page: the room's position
    GET /api/class/answers?room=CODE&lesson=L&step=N   the teacher's page: that step's answers (the watch token)
    GET /api/class/notes?presenter=ID                  a speaker notes window: its presenter's moves

Why server-sent events and not a websocket: the traffic is one way (the server tells; a page that must act asks
Streamlit for a rerun over its own websocket), and an event stream is plain HTTP: nginx passes it with buffering off,
the browser's ``EventSource`` reconnects by itself after a lost connection or a restarted replica (and is then sent
the current position at once), and a test reads it with any HTTP client.

What a stream says, and to whom:
- ``events``: only the room's position (lesson, step, the teacher's move count), once on connecting, again at each
  move, and as the heartbeat every ``HEARTBEAT_S`` (which also mends a move lost on the way: Redis's
  publish/subscribe keeps nothing for a replica that was away); ``ended`` when the class ends, then the stream
  closes. Never the sentence, the answers or anything of the teacher's secret.
- ``answers``: the counts per choice of one step, on connecting and at each answer; only with the class's watch
  token (``vizcore.lessons.rooms.watch_token``, a one-way function of the secret's hash) in the ``X-Class-Watch``
  header or the ``vizcore_watch`` cookie: it reads the answers and nothing else.
- ``notes``: the presenter's position (lesson, step, move count), nothing else.
A code that is not a live class's gets 404 with an empty body (the same for a malformed, unknown or ended one); a
wrong watch token 403. At most ``VIZCORE_STREAMS_PER_ADDRESS`` (default 8) open streams per client address (429
beyond), and ``STREAMS_PER_SERVER`` in all (503). Behind the replicas' nginx, the client's address is the last of
``X-Forwarded-For``, trusted only from a proxy on this machine (a loopback peer).

Every stream wakes at least once a second to see whether the server is stopping (``stopping``), and then ends:
uvicorn waits for open responses before it stops, and a class's streams never end by themselves.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import threading
from dataclasses import dataclass
from typing import AsyncIterator, Callable

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from vizcore.lessons.board import NotesBoard
from vizcore.lessons.rooms import NoSuchRoom, NotTheTeacher, RoomError, RoomExpired, Rooms, check_code
from vizcore.serve.settings import streams_per_address

PREFIX = "/api/class"
HEARTBEAT_S = 15.0
WAKE_S = 1.0  # a stream looks at ``stopping`` this often
RETRY_MS = 1000  # the browser's wait before it reconnects a lost stream
STREAMS_PER_SERVER = 2000
WATCH_HEADER = "x-class-watch"
WATCH_COOKIE = "vizcore_watch"
HEADERS = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}  # nginx: pass every event at once


class Limits:
    """Open streams per client address and in all (a lock: streams open and close on the event loop, tests on
    threads)."""

    def __init__(self, per_address: int, per_server: int = STREAMS_PER_SERVER) -> None:
        self.per_address, self.per_server = per_address, per_server
        self._open: dict[str, int] = {}
        self._lock = threading.Lock()

    def take(self, address: str) -> int | None:
        """None when a stream may open for ``address`` (and it is counted), else the HTTP status to answer."""
        with self._lock:
            if sum(self._open.values()) >= self.per_server:
                return 503
            if self._open.get(address, 0) >= self.per_address:
                return 429
            self._open[address] = self._open.get(address, 0) + 1
            return None

    def give_back(self, address: str) -> None:
        with self._lock:
            left = self._open.get(address, 0) - 1
            if left > 0:
                self._open[address] = left
            else:
                self._open.pop(address, None)

    def open_streams(self) -> int:
        with self._lock:
            return sum(self._open.values())


def client_address(request: Request) -> str:
    """The client's address: the peer's, or behind a proxy on this machine the last hop it names."""
    peer = request.client.host if request.client else ""
    forwarded = request.headers.get("x-forwarded-for", "")
    try:
        local = ipaddress.ip_address(peer).is_loopback
    except ValueError:
        local = False
    if local and forwarded.strip():
        return forwarded.split(",")[-1].strip()
    return peer


def sse(event: str, data: dict) -> str:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


@dataclass
class _Stream:
    """One open stream's source: ``subscribe(wake)`` returns the unsubscribe; ``read()`` the next message or None
    when nothing changed since the last one; ``ended`` after an ``ended`` message."""

    subscribe: Callable[[Callable[[str], None]], Callable[[], None]]
    read: Callable[[bool], str | None]  # its argument: a heartbeat (say it even when nothing changed)


class ClassChannel:
    """The routes, over a rooms store and a notes board (``rooms`` and ``board`` are called once per request: the
    server's own, ``vizcore.lessons.stores.server_rooms`` and ``board.notes_board``)."""

    def __init__(self, rooms: Callable[[], Rooms], board: Callable[[], NotesBoard],
                 stopping: Callable[[], bool] = lambda: False, per_address: int | None = None,
                 heartbeat_s: float = HEARTBEAT_S) -> None:
        self.rooms, self.board, self.stopping = rooms, board, stopping
        self.limits = Limits(streams_per_address() if per_address is None else per_address)
        self.heartbeat_s = heartbeat_s

    def routes(self) -> list[Route]:
        return [Route(f"{PREFIX}/events", self.events), Route(f"{PREFIX}/answers", self.answers),
                Route(f"{PREFIX}/notes", self.notes)]

    # ---- the three streams ----

    async def events(self, request: Request) -> Response:
        rooms = self.rooms()
        try:
            code = check_code(request.query_params.get("room", ""))
            await run_in_threadpool(rooms.position, code)
        except RoomError:
            return Response(status_code=404)
        last: list[tuple] = []

        def read(heartbeat: bool) -> str | None:
            try:
                position = rooms.position(code)
            except (NoSuchRoom, RoomExpired):
                return sse("ended", {})
            except RoomError:  # the store does not answer now: the next event or heartbeat reads again
                return None
            now = (position.lesson, position.step, position.moves)
            if last and last[0] == now and not heartbeat:
                return None
            last[:] = [now]
            data = {"lesson": position.lesson, "step": position.step, "moves": position.moves}
            return sse("heartbeat" if heartbeat else "position", data)

        return await self._stream(request, _Stream(lambda wake: rooms.subscribe(code, wake), read))

    async def answers(self, request: Request) -> Response:
        rooms, params = self.rooms(), request.query_params
        token = request.headers.get(WATCH_HEADER) or request.cookies.get(WATCH_COOKIE) or ""
        try:
            code = check_code(params.get("room", ""))
            lesson, step = params.get("lesson", ""), int(params.get("step", ""))
            await run_in_threadpool(rooms.check_watch, code, token)
        except NotTheTeacher:
            return Response(status_code=403)
        except (RoomError, ValueError):
            return Response(status_code=404)
        last: list[dict] = []

        def read(heartbeat: bool) -> str | None:
            try:
                counts = rooms.tally(code, lesson, step)
            except (NoSuchRoom, RoomExpired):
                return sse("ended", {})
            except RoomError:
                return None
            if last and last[0] == counts and not heartbeat:
                return None
            last[:] = [counts]
            return sse("tally", {"lesson": lesson, "step": step, "counts": counts})

        return await self._stream(request, _Stream(lambda wake: rooms.subscribe(code, wake), read))

    async def notes(self, request: Request) -> Response:
        board = self.board()
        presenter = request.query_params.get("presenter", "")
        if not presenter.strip() or len(presenter) > 64:
            return Response(status_code=404)
        last: list[int] = []

        def read(heartbeat: bool) -> str | None:
            position, moves = board.read_moves(presenter)
            if last and last[0] == moves and not heartbeat:
                return None
            last[:] = [moves]
            data = {"lesson": None, "step": None, "moves": moves} if position is None else \
                {"lesson": position.lesson, "step": position.step, "moves": moves}
            return sse("heartbeat" if heartbeat else "position", data)

        return await self._stream(request, _Stream(lambda wake: board.events.subscribe(presenter, wake), read))

    # ---- one stream's life ----

    async def _stream(self, request: Request, source: _Stream) -> Response:
        address = client_address(request)
        refused = self.limits.take(address)
        if refused is not None:
            return Response(status_code=refused)
        loop = asyncio.get_running_loop()
        woken = asyncio.Queue()
        try:
            unsubscribe = source.subscribe(lambda kind: loop.call_soon_threadsafe(woken.put_nowait, kind))
        except RoomError:
            self.limits.give_back(address)
            return Response(status_code=404)
        return StreamingResponse(self._messages(source, woken, unsubscribe, address),
                                 media_type="text/event-stream", headers=HEADERS)

    async def _messages(self, source: _Stream, woken: asyncio.Queue, unsubscribe: Callable[[], None],
                        address: str) -> AsyncIterator[str]:
        try:
            first = await run_in_threadpool(source.read, False)
            yield f"retry: {RETRY_MS}\n\n" + (first or "")
            if first and first.startswith("event: ended"):
                return
            quiet = 0.0
            while not self.stopping():
                try:
                    await asyncio.wait_for(woken.get(), timeout=WAKE_S)
                    heartbeat = False
                except asyncio.TimeoutError:
                    quiet += WAKE_S
                    if quiet < self.heartbeat_s:
                        continue
                    heartbeat = True
                while not woken.empty():  # a burst (thirty answers at once) is read once
                    woken.get_nowait()
                quiet = 0.0
                message = await run_in_threadpool(source.read, heartbeat)
                if message:
                    yield message
                    if message.startswith("event: ended"):
                        return
        finally:
            unsubscribe()
            self.limits.give_back(address)
