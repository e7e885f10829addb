"""The rooms in a shared Redis (vizcore/lessons/rooms_redis.py) against a real redis-server, started here on a free
port: the same contract as the in-memory store, a move seen by another process, and a store that is down."""

from __future__ import annotations

import hashlib
import itertools
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.support.processes import free_port_block
from tests.support.redis_server import MISSING, redis_binary, redis_server
from tests.support.rooms_contract import check_contract
from vizcore.lessons.rooms import IDLE_SECONDS, RoomError
from vizcore.lessons.stores import open_rooms

pytestmark = pytest.mark.skipif(redis_binary() is None, reason=MISSING)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with redis_server(tmp_path_factory.mktemp("redis")) as running:
        yield running


@pytest.fixture
def client(server):
    import redis

    with redis.Redis.from_url(server.url, decode_responses=True) as raw:
        yield raw


_stores = itertools.count()


def _fresh(server, clock=time.time):
    """An empty store: rooms under a prefix no other test uses, on the one server."""
    from vizcore.lessons.rooms_redis import RedisRooms

    return RedisRooms(server.url, clock=clock, prefix=f"test{next(_stores)}:room:")


def test_redis_rooms_keep_the_contract(server):
    check_contract(lambda clock: _fresh(server, clock))


def test_the_store_is_chosen_by_address(server):
    from vizcore.lessons.rooms_redis import RedisRooms

    rooms = open_rooms(server.url)
    assert isinstance(rooms, RedisRooms)
    code, _ = rooms.open("attention", 1, "")
    assert rooms.position(code).lesson == "attention"
    with pytest.raises(RoomError, match="redis://host:port/db") as error:
        RedisRooms("redis://:hunter2@127.0.0.1:notaport/0")
    assert "hunter2" not in str(error.value)


def test_only_the_secrets_hash_is_stored_and_every_key_is_collected_in_time(server, client):
    rooms = _fresh(server)
    code, secret = rooms.open("attention", 1, "The cat sat.")
    rooms.answer(code, "s1", "attention", 1, "cat")
    keys = client.keys(f"{rooms.prefix}*")
    assert len(keys) == 3, keys  # the room, its answered steps, one step's answers
    stored = [value for key in keys for value in _values(client, key)]
    assert secret not in " ".join(stored), "the teacher's secret itself is in the store"
    room = next(key for key in keys if key.endswith("}"))
    assert client.hget(room, "secret") == hashlib.sha256(secret.encode()).hexdigest()
    for key in keys:
        assert IDLE_SECONDS < client.ttl(key) <= 2 * IDLE_SECONDS, key


def _values(client, key: str) -> list[str]:
    kind = client.type(key)
    return list(client.hgetall(key).values()) + list(client.hkeys(key)) if kind == "hash" else list(
        client.smembers(key))


def test_concurrent_moves_from_several_clients_are_all_counted(server):
    first = _fresh(server)
    code, secret = first.open("attention", 1, "")
    from vizcore.lessons.rooms_redis import RedisRooms

    others = [RedisRooms(server.url, prefix=first.prefix) for _ in range(4)]  # as four replicas
    start = threading.Barrier(20)

    def teacher_tab(i: int) -> None:
        start.wait()
        others[i % 4].move(code, secret, "heads", i + 2, f"tab {i}")

    threads = [threading.Thread(target=teacher_tab, args=(i,)) for i in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    where = first.position(code)
    assert where.moves == 20 and 2 <= where.step <= 21 and where.text == f"tab {where.step - 2}"


STUDENT = """
import queue, sys
from vizcore.lessons.rooms_redis import RedisRooms
rooms, code = RedisRooms(sys.argv[1], prefix=sys.argv[2]), sys.argv[3]
heard = queue.Queue()
rooms.subscribe(code, heard.put)  # as the class channel's stream on another replica does: nothing polls
seen = rooms.position(code)
print("ready", flush=True)
print(heard.get(timeout=30), flush=True)
where = rooms.position(code)
print(where.lesson, where.step, where.moves, flush=True)
rooms.answer(code, "student in another process", where.lesson, where.step, "the cat")
print("answered", flush=True)
print(heard.get(timeout=30), flush=True)
print(heard.get(timeout=30), flush=True)
"""


def test_a_student_in_another_process_hears_the_teachers_move_follows_and_is_counted(server):
    teacher = _fresh(server)
    code, secret = teacher.open("attention", 1, "")
    student = subprocess.Popen([sys.executable, "-c", STUDENT, server.url, teacher.prefix, code], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert _line(student, 30.0) == "ready", student.stderr.read()
        teacher.move(code, secret, "attention", 1, "")  # where the class is: not a move, not published
        teacher.move(code, secret, "heads", 3, "")
        assert _line(student, 10.0) == "move"
        assert _line(student, 10.0) == "heads 3 1"
        assert _line(student, 10.0) == "answered"
        assert teacher.tally(code, "heads", 3) == {"the cat": 1}  # in the teacher's chart
        assert _line(student, 10.0) == "answer"  # its own answer, heard as the teacher's page hears it
        teacher.close(code, secret)
        assert _line(student, 10.0) == "end"
    finally:
        student.kill()
        student.wait()


def _line(process: subprocess.Popen, timeout: float) -> str:
    """The other process's next line. Read by a thread into a queue: ``select`` on the pipe says nothing of lines the
    reader has already buffered (two lines written at once left the second unseen)."""
    if not hasattr(process, "lines"):
        process.lines = queue.Queue()
        threading.Thread(target=lambda: [process.lines.put(line) for line in process.stdout], daemon=True).start()
    try:
        return process.lines.get(timeout=timeout).strip()
    except queue.Empty:
        raise AssertionError(f"nothing from the other process within {timeout} s") from None


def test_a_store_that_does_not_answer_says_so(tmp_path):
    from vizcore.lessons.rooms_redis import RedisRooms

    port = free_port_block(1)  # nothing listens there
    rooms = RedisRooms(f"redis://127.0.0.1:{port}/0")
    calls = [lambda: rooms.open("attention", 1, ""), lambda: rooms.position("ABCDEF"),
             lambda: rooms.move("ABCDEF", "s", "attention", 2, ""), lambda: rooms.tally("ABCDEF", "attention", 1),
             lambda: rooms.answer("ABCDEF", "s1", "attention", 1, "x"), lambda: rooms.close("ABCDEF", "s")]
    for call in calls:
        with pytest.raises(RoomError, match=f"class store at 127.0.0.1:{port} does not answer") as error:
            call()
        assert error.value.__cause__ is None and error.value.__suppress_context__, "no chained traceback"

    with redis_server(tmp_path / "lost") as lost:  # a store lost during a class
        rooms = RedisRooms(lost.url)
        code, _ = rooms.open("attention", 1, "")
        lost.kill()
        started = time.monotonic()
        with pytest.raises(RoomError, match=f"class store at 127.0.0.1:{lost.port} does not answer"):
            rooms.position(code)
        assert time.monotonic() - started < 5.0, "a student's page waited too long for a store that is gone"


def test_a_restarted_store_serves_the_same_clients_again(tmp_path):
    from vizcore.lessons.rooms_redis import RedisRooms

    with redis_server(tmp_path / "first") as first:
        rooms = RedisRooms(first.url)
        code, _ = rooms.open("attention", 1, "")
    with redis_server(tmp_path / "again", port=first.port):  # as the supervisor restarts it: empty, same port
        with pytest.raises(RoomError, match="no class with the code"):
            rooms.position(code)  # the rooms were in memory: the class has to be started again
        code, secret = rooms.open("attention", 1, "")  # its pooled connections and its scripts are renewed
        assert rooms.move(code, secret, "heads", 2, "").moves == 1


def test_a_subscription_lost_with_the_store_comes_back_and_tells_its_rooms_to_read_again(tmp_path):
    """Redis keeps nothing published while a subscriber was away: when the subscription is back, every room listened
    to hears "move" (its streams read the position again), then the moves made after it."""
    import queue

    from vizcore.lessons.rooms_redis import RedisRooms

    heard: queue.Queue = queue.Queue()
    with redis_server(tmp_path / "first") as first:
        rooms = RedisRooms(first.url)
        code, _ = rooms.open("attention", 1, "")
        rooms.subscribe(code, heard.put)
    with redis_server(tmp_path / "again", port=first.port):
        assert heard.get(timeout=30) == "move"  # the subscription is back
        other, secret = rooms.open("attention", 1, "")
        rooms.subscribe(other, heard.put)
        rooms.move(other, secret, "heads", 2, "")
        assert heard.get(timeout=10) == "move"
