"""Rooms in a shared Redis (or Valkey) store: a class across replicas (issue 31 C, issue 34 C). No streamlit here.

With several app processes behind a load balancer (deploy/replicas.py, deploy/k8s/), a student's websocket may
reach another process than the teacher's, so a room cannot live in one process's memory. ``RedisRooms`` keeps the
contract of ``MemoryRooms`` exactly (tests/support/rooms_contract.py checks both), with the same messages:

- ``{prefix}{CODE}`` is a hash: the secret's hash (never the secret), the position (lesson, step, text), the
  teacher's move count, the last ``touched`` time and ``closed``. Whether a room is idle is decided by the
  injected clock against ``touched`` (so every replica agrees, and tests can move time); a key TTL of
  ``FORGET_SECONDS`` only collects the garbage, as ``MemoryRooms`` forgets old rooms.
- ``{prefix}{CODE}:answers:{step}:{lesson}`` is a hash per step, student -> choice (the last answer counts), and
  ``{prefix}{CODE}:steps`` lists those keys so that a touch keeps every one of them as long as the room.
- Every change is one Lua script, run atomically by the server: codes are taken only if free (as SET NX does),
  moves are counted with nothing lost between two teachers' tabs, and concurrent answers all land.
- Every call is one round trip (a script, one HMGET, or one MULTI for a tally).
- Moves, answers and ends are published on ``{prefix}events`` ("CODE kind") by the script that makes them, in the
  same atomic step: every process that ``subscribe``s holds one subscription (a thread of its own) and hands each
  message to its listeners (``vizcore.lessons.events.Hub``), so a student whose stream is on another replica than
  the teacher hears the move (docs/SCALE.md, "A class across replicas"). Redis's publish/subscribe keeps nothing
  for a subscriber that was away: after a lost subscription, every room listened to is told "move" (its streams
  read the position again), and the streams' heartbeat reads it anyway.

The code sits in braces (a Redis Cluster hash tag), so all of a room's keys live on one node of a cluster.
"""

from __future__ import annotations

import re
import sys
import threading
import time
from typing import Callable

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from vizcore.lessons.events import KINDS, MOVE, Hub, Listener
from vizcore.lessons.rooms import (
    IDLE_SECONDS,
    NOT_THE_TEACHER,
    NoSuchRoom,
    NotTheTeacher,
    Position,
    RoomError,
    RoomExpired,
    check_choice,
    check_code,
    check_move,
    expired_message,
    new_code,
    new_secret,
    same_watch,
    secret_hash,
    unknown_message,
)

PREFIX = "vizcore:room:"
FORGET_SECONDS = 2 * IDLE_SECONDS  # as MemoryRooms: an ended or idle room answers "ended" this long, then "unknown"
CONNECT_TIMEOUT = 1.0  # a page's read must fail fast when the store is gone, not hang the page
READ_TIMEOUT = 2.0
SUBSCRIBED_WAIT_S = 5.0  # the first subscriber waits this long for the subscription (a move after it is heard)
RESUBSCRIBE_S = 1.0  # after a lost subscription (the store restarted), the next try

# The room's liveness, as MemoryRooms._live decides it. ARGV[1] is the caller's clock; it returns a status word.
_LIVE = """
local room = redis.call('HMGET', KEYS[1], 'secret', 'touched', 'closed', 'lesson', 'step', 'text', 'moves', 'quiz')
if not room[1] then return {'unknown'} end
if room[3] == '1' or tonumber(ARGV[1]) - tonumber(room[2]) > %d then return {'ended'} end
""" % IDLE_SECONDS

_TOUCH = """
local function touch(now)
  redis.call('HSET', KEYS[1], 'touched', now)
  redis.call('EXPIRE', KEYS[1], %d)
  redis.call('EXPIRE', KEYS[2], %d)
  for _, key in ipairs(redis.call('SMEMBERS', KEYS[2])) do redis.call('EXPIRE', key, %d) end
end
""" % (FORGET_SECONDS, FORGET_SECONDS, FORGET_SECONDS)

# KEYS: room. ARGV: secret hash, lesson, step, text, now. Takes the code only if no room (live or ended) has it.
_OPEN = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'secret', ARGV[1], 'lesson', ARGV[2], 'step', ARGV[3], 'text', ARGV[4],
           'moves', 0, 'touched', ARGV[5], 'closed', 0, 'quiz', '')
redis.call('EXPIRE', KEYS[1], %d)
return 1
""" % FORGET_SECONDS

# KEYS: room, steps. ARGV: now, secret hash, lesson, step, text, events channel, code, quiz. A move to where the class
# is changes nothing (but still keeps the room open, as MemoryRooms does) and is not published. A room opened before
# rooms had a quiz has none (false, read as '').
_MOVE = _LIVE + _TOUCH + """
if room[1] ~= ARGV[2] then return {'teacher'} end
touch(ARGV[1])
local quiz = room[8] or ''
if room[4] ~= ARGV[3] or room[5] ~= ARGV[4] or room[6] ~= ARGV[5] or quiz ~= ARGV[8] then
  local moves = redis.call('HINCRBY', KEYS[1], 'moves', 1)
  redis.call('HSET', KEYS[1], 'lesson', ARGV[3], 'step', ARGV[4], 'text', ARGV[5], 'quiz', ARGV[8])
  redis.call('PUBLISH', ARGV[6], ARGV[7] .. ' move')
  return {'ok', ARGV[3], ARGV[4], ARGV[5], tostring(moves), ARGV[8]}
end
return {'ok', room[4], room[5], room[6], room[7], quiz}
"""

# KEYS: room, steps, this step's answers. ARGV: now, student, choice, events channel, code.
_ANSWER = _LIVE + _TOUCH + """
redis.call('HSET', KEYS[3], ARGV[2], ARGV[3])
redis.call('SADD', KEYS[2], KEYS[3])
touch(ARGV[1])
redis.call('PUBLISH', ARGV[4], ARGV[5] .. ' answer')
return {'ok'}
"""

# KEYS: room. ARGV: now, secret hash, events channel, code.
_CLOSE = _LIVE + """
if room[1] ~= ARGV[2] then return {'teacher'} end
redis.call('HSET', KEYS[1], 'closed', 1)
redis.call('PUBLISH', ARGV[3], ARGV[4] .. ' end')
return {'ok'}
"""

_FIELDS = ("touched", "closed", "lesson", "step", "text", "moves", "quiz")  # what a read needs: not the secret's hash


class RedisRooms:
    """Rooms in the Redis at ``url`` (``redis://host:port/db``), shared by every process that opens the same
    address. ``clock`` is wall-clock time: the replicas compare each other's ``touched`` times."""

    def __init__(self, url: str, clock: Callable[[], float] = time.time, prefix: str = PREFIX) -> None:
        self._clock, self.prefix = clock, prefix
        try:
            self._redis = redis.Redis.from_url(
                url, decode_responses=True, socket_connect_timeout=CONNECT_TIMEOUT, socket_timeout=READ_TIMEOUT,
                retry=Retry(NoBackoff(), 1))  # one retry at once: a pooled connection a restarted server dropped
        except ValueError as error:
            shown = re.sub(r"//[^/@]*@", "//", url)  # never a password in a message
            raise RoomError(f"The class store address '{shown}' is not a redis://host:port/db address "
                            f"({error}).") from None
        kwargs = self._redis.get_connection_kwargs()
        self.where = kwargs.get("path") or f"{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}"
        self._open, self._move, self._answer, self._close = (
            self._redis.register_script(script) for script in (_OPEN, _MOVE, _ANSWER, _CLOSE))
        self._url = url
        self.channel = f"{prefix}events"
        self.events = Hub()
        self._listener: threading.Thread | None = None
        self._listener_lock = threading.Lock()
        self._subscribed = threading.Event()

    def _keys(self, code: str) -> tuple[str, str]:
        room = f"{self.prefix}{{{code}}}"
        return room, f"{room}:steps"

    def _answers_key(self, code: str, lesson: str, step: int) -> str:
        return f"{self._keys(code)[0]}:answers:{int(step)}:{lesson}"  # the step first: a lesson may hold ':'

    def _call(self, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as error:  # down, slow, or refused us
            raise RoomError(
                f"The class store at {self.where} does not answer ({error}). Classes cannot be followed until it "
                "does: start it again (`make serve REPLICAS=N` starts one with the replicas) or check the "
                "VIZCORE_ROOMS address the server was given.") from None
        except redis.exceptions.RedisError as error:
            raise RoomError(f"The class store at {self.where} refused the request ({error}).") from None

    def _now(self) -> str:
        return repr(float(self._clock()))

    @staticmethod
    def _raise_for(status: str, code: str) -> None:
        if status == "unknown":
            raise NoSuchRoom(unknown_message(code))
        if status == "ended":
            raise RoomExpired(expired_message(code))
        if status == "teacher":
            raise NotTheTeacher(NOT_THE_TEACHER)

    def open(self, lesson: str, step: int, text: str) -> tuple[str, str]:
        lesson, step, text, _ = check_move(lesson, step, text)
        secret = new_secret()
        while True:
            code = new_code()
            taken = self._call(self._open, keys=[self._keys(code)[0]],
                               args=[secret_hash(secret), lesson, step, text, self._now()])
            if taken:
                return code, secret

    def position(self, code: str) -> Position:
        code = check_code(code)
        room = dict(zip(_FIELDS, self._call(self._redis.hmget, self._keys(code)[0], _FIELDS)))
        self._check_live(code, room)
        return Position(room["lesson"], int(room["step"]), room["text"], int(room["moves"]), room["quiz"] or "")

    def _check_live(self, code: str, room: dict) -> None:
        """As the scripts' _LIVE, for reads: the same clock, the same comparison in doubles."""
        if room["touched"] is None:
            raise NoSuchRoom(unknown_message(code))
        if room["closed"] == "1" or self._clock() - float(room["touched"]) > IDLE_SECONDS:
            raise RoomExpired(expired_message(code))

    def move(self, code: str, secret: str, lesson: str, step: int, text: str, quiz: str = "") -> Position:
        code = check_code(code)
        lesson, step, text, quiz = check_move(lesson, step, text, quiz)
        reply = self._call(self._move, keys=list(self._keys(code)),
                           args=[self._now(), secret_hash(str(secret)), lesson, step, text, self.channel, code, quiz])
        self._raise_for(reply[0], code)
        return Position(reply[1], int(reply[2]), reply[3], int(reply[4]), reply[5] or "")

    def answer(self, code: str, student: str, lesson: str, step: int, choice: str) -> None:
        choice = check_choice(choice)
        code = check_code(code)
        keys = [*self._keys(code), self._answers_key(code, str(lesson), step)]
        reply = self._call(self._answer, keys=keys, args=[self._now(), str(student), choice, self.channel, code])
        self._raise_for(reply[0], code)

    def tally(self, code: str, lesson: str, step: int) -> dict[str, int]:
        code = check_code(code)
        pipe = self._redis.pipeline(transaction=True)  # one round trip, one consistent snapshot
        pipe.hmget(self._keys(code)[0], _FIELDS)
        pipe.hvals(self._answers_key(code, str(lesson), step))
        fields, choices = self._call(pipe.execute)
        self._check_live(code, dict(zip(_FIELDS, fields)))
        counts: dict[str, int] = {}
        for choice in choices:
            counts[choice] = counts.get(choice, 0) + 1
        return counts

    def close(self, code: str, secret: str) -> None:
        code = check_code(code)
        reply = self._call(self._close, keys=[self._keys(code)[0]],
                           args=[self._now(), secret_hash(str(secret)), self.channel, code])
        self._raise_for(reply[0], code)

    def check_watch(self, code: str, token: str) -> None:
        code = check_code(code)
        stored, *fields = self._call(self._redis.hmget, self._keys(code)[0], ("secret", *_FIELDS))
        self._check_live(code, dict(zip(_FIELDS, fields)))
        if not same_watch(stored, token):
            raise NotTheTeacher(NOT_THE_TEACHER)

    def subscribe(self, code: str, listener: Listener) -> Callable[[], None]:
        code = check_code(code)
        self._listen_in_background()
        return self.events.subscribe(code, listener)

    def _listen_in_background(self) -> None:
        """Start this process's one subscription (a daemon thread) unless it runs; the first caller waits until it
        is subscribed, so that a move made after ``subscribe`` returns is heard."""
        with self._listener_lock:
            if self._listener is None or not self._listener.is_alive():
                self._listener = threading.Thread(target=self._listen, name="vizcore-rooms-events", daemon=True)
                self._listener.start()
        self._subscribed.wait(SUBSCRIBED_WAIT_S)

    def _listen(self) -> None:
        # A connection of its own without the read timeout (a subscription is quiet between moves), with Redis's own
        # health check to find a dead connection.
        client = redis.Redis.from_url(self._url, decode_responses=True, socket_connect_timeout=CONNECT_TIMEOUT,
                                      health_check_interval=30)
        lost = False
        while True:
            try:
                pubsub = client.pubsub(ignore_subscribe_messages=True)
                pubsub.subscribe(self.channel)
                pubsub.get_message(timeout=CONNECT_TIMEOUT)  # the subscription's confirmation
                self._subscribed.set()
                if lost:  # what was published while away is gone: every room listened to reads its position again
                    for topic in self.events.topics():
                        self.events.publish(topic, MOVE)
                for message in pubsub.listen():
                    code, _, kind = str(message.get("data", "")).partition(" ")
                    if kind in KINDS:
                        self.events.publish(code, kind)
            except redis.exceptions.RedisError as error:
                if not lost:
                    print(f"vizcore: the class store's events at {self.where} stopped ({error}); trying again every "
                          f"{RESUBSCRIBE_S:g} s", file=sys.stderr, flush=True)
                lost = True
                time.sleep(RESUBSCRIBE_S)
