"""nginx's sticky routing, failover and the supervisor's restarts and stop, with stand-in replicas; the rooms'
redis-server they share.

The replicas here are tests/support/fake_replica.py (they start in a fraction of a second and answer with their
name), so the routing itself is checked in a few seconds; tests/e2e/test_replicas_browser.py does the same
with the real app and Streamlit's protocol.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from deploy.replicas import ROOMS_ENV, Supervisor, Timing, find_nginx, find_redis, nginx_config, redis_answers
from tests.support.event_loop import run_async
from tests.support.fake_replica import static_body
from tests.support.processes import alive, descendants, environ, free_port_block
from tests.support.streamlit_ws import COOKIE, REPLICA_HEADER, Visitor

REPLICAS = 3
GZIP = {"Accept-Encoding": "gzip"}


def _fake(host: str, port: int) -> list[str]:
    return [sys.executable, "-m", "tests.support.fake_replica", str(port), f"answered-by-{port}"]


def _wait(condition, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


@pytest.fixture
def cluster(tmp_path):
    port = free_port_block(REPLICAS + 1)
    supervisor = Supervisor(REPLICAS, port, tmp_path, _fake, find_nginx(), say=lambda text: None,
                            timing=Timing(fail_timeout=1))
    supervisor.start()
    try:
        _wait(lambda: (supervisor.check(), supervisor.ready())[1])
        yield supervisor
    finally:
        supervisor.stop()


def _get(url: str, cookie: str | None = None) -> tuple[str, str, str | None]:
    request = urllib.request.Request(url, headers={"Cookie": f"{COOKIE}={cookie}"} if cookie else {})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.read().decode(), response.headers[REPLICA_HEADER], response.headers.get("Set-Cookie")


def test_the_configuration_passes_nginx_own_check(tmp_path):
    for sub in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (tmp_path / "tmp" / sub).mkdir(parents=True)
    conf = tmp_path / "nginx.conf"
    conf.write_text(nginx_config("127.0.0.1:18000", [18001, 18002, 18003, 18004], tmp_path))
    out = subprocess.run([find_nginx(), "-t", "-p", str(tmp_path), "-e", str(tmp_path / "error.log"), "-c", str(conf)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_text_assets_are_compressed_when_the_browser_asks_and_fonts_never(cluster):
    base = f"http://127.0.0.1:{cluster.port}"
    for path in ("/static/js/index.Dx7.js", "/static/css/index.B2.css", "/static/manifest.json",
                 "/static/media/logo.svg", "/static/index.html"):
        body = static_body(path)
        with urllib.request.urlopen(urllib.request.Request(base + path, headers=GZIP), timeout=10) as response:
            assert response.headers["Content-Encoding"] == "gzip", path
            assert "Accept-Encoding" in response.headers["Vary"]
            sent = response.read()
        assert gzip.decompress(sent) == body and len(sent) < len(body) / 4, path
        with urllib.request.urlopen(base + path, timeout=10) as response:  # a client that did not ask
            assert response.headers.get("Content-Encoding") is None and response.read() == body
    with urllib.request.urlopen(urllib.request.Request(base + "/static/media/font.woff2", headers=GZIP),
                                timeout=10) as response:
        assert response.headers.get("Content-Encoding") is None  # compressed already


def test_new_visitors_spread_and_each_stays_on_its_replica(cluster):
    base = f"http://127.0.0.1:{cluster.port}"
    ports = {f"r{i}": cluster.port + i for i in range(1, REPLICAS + 1)}
    visitors = [Visitor(base, "attention", {"text": f"sentence {i}"}) for i in range(2 * REPLICAS)]
    for visitor in visitors:
        visitor.load()
    first = [visitor.replicas[0] for visitor in visitors]
    assert sorted(first) == sorted(list(ports) * 2), "new visitors are not shared out evenly"

    async def visit(visitor: Visitor) -> str:
        visitor.load("static/app.js")
        await visitor.open()
        await visitor.socket.send("hello")
        answer = await visitor.socket.recv()
        await visitor.close()
        return answer

    answers = run_async(_gather(visit, visitors))
    for visitor, answer in zip(visitors, answers):
        name = visitor.replicas[0]
        assert visitor.replicas == [name] * 3, "a visitor's requests went to more than one replica"
        assert visitor.cookies[COOKIE] == name
        assert answer == f"answered-by-{ports[name]}", "the header names another replica than the one that answered"


async def _gather(visit, visitors):
    return await asyncio.gather(*(visit(visitor) for visitor in visitors))


def test_a_dead_replicas_visitors_move_to_another_and_stay_there_once_it_is_back(cluster):
    base = f"http://127.0.0.1:{cluster.port}"
    body, replica, cookie = _get(base, "r1")
    assert (body, replica, cookie) == (f"answered-by-{cluster.port + 1}", "r1", None), "a pinned visitor is re-pinned"
    dead = cluster.replicas[0].process
    os.killpg(dead.pid, signal.SIGKILL)
    dead.wait()

    body, replica, cookie = _get(base, "r1")
    assert replica != "r1" and body == f"answered-by-{cluster.port + int(replica[1:])}"
    assert cookie.startswith(f"{COOKIE}={replica};"), "the visitor is not pinned to the replica that answered"

    cluster.check()  # the supervisor sees the ended process and starts it again
    assert cluster.replicas[0].restarts == 1 and cluster.replicas[0].process.pid != dead.pid
    _wait(lambda: (cluster.check(), cluster.replicas[0].ready)[1])
    time.sleep(2.5)  # nginx's fail_timeout (1 s here, counted in whole seconds): then r1 takes its visitors again
    assert _get(base, "r1")[1] == "r1"
    assert _get(base, replica)[1] == replica, "a moved visitor went back to the replica that lost its session"


def test_a_replica_that_stops_answering_is_replaced(tmp_path):
    supervisor = Supervisor(1, free_port_block(2), tmp_path, _fake, find_nginx(), say=lambda text: None,
                            timing=Timing(timeout=0.3, fails=2, stop_wait=0.5))
    supervisor.start()
    try:
        replica = supervisor.replicas[0]
        _wait(lambda: (supervisor.check(), replica.ready)[1])
        hung = replica.process
        os.kill(hung.pid, signal.SIGSTOP)  # alive, but answers nothing: a replica stuck in a page run
        supervisor.check()
        assert replica.process is hung and replica.misses == 1, "one late answer is not yet a hung replica"
        supervisor.check()
        assert replica.process is not hung and replica.restarts == 1 and hung.poll() is not None
        _wait(lambda: (supervisor.check(), replica.ready)[1])
    finally:
        supervisor.stop()


def test_stop_leaves_no_process(tmp_path):
    port = free_port_block(3)
    supervisor = Supervisor(2, port, tmp_path, _fake, find_nginx(), say=lambda text: None)
    supervisor.start()
    _wait(lambda: (supervisor.check(), supervisor.ready())[1])
    # nginx's master forks its worker after it starts: ready replicas do not mean it has (a loaded clean clone
    # counted the master alone)
    _wait(lambda: bool(descendants(supervisor.nginx.pid)))
    # what the supervisor started and what they started (not this process's other children: in make test's one
    # session a browser test may have left its browser and server running in this process)
    started = [supervisor.nginx.pid] + [replica.process.pid for replica in supervisor.replicas]
    pids = started + [pid for root in started for pid in descendants(root)]
    assert len(pids) >= 4, "expected two replicas, nginx's master and its worker"
    supervisor.stop()
    assert [pid for pid in pids if alive(pid)] == []



def test_the_replicas_share_one_rooms_store_watched_and_stopped_with_them(tmp_path):
    port = free_port_block(4)
    supervisor = Supervisor(2, port, tmp_path, _fake, find_nginx(), say=lambda text: None,
                            timing=Timing(timeout=1.0, fails=2, stop_wait=1.0), redis=find_redis())
    supervisor.start()
    try:
        _wait(lambda: (supervisor.check(), supervisor.ready())[1])
        url = f"redis://127.0.0.1:{port + 3}/0"
        assert [environ(r.process.pid).get(ROOMS_ENV) for r in supervisor.replicas] == [url, url]
        assert redis_answers(port + 3)
        state = json.loads((tmp_path / "state.json").read_text())
        assert state["rooms"] == url and state["redis"]["pid"] == supervisor.store.process.pid
        assert (tmp_path / "redis.pid").read_text().strip() == str(supervisor.store.process.pid)

        lost = supervisor.store.process
        lost.kill()
        lost.wait()
        supervisor.check()  # an ended store is started again on its port
        assert supervisor.store.restarts == 1 and supervisor.store.process.pid != lost.pid
        assert redis_answers(port + 3)
        hung = supervisor.store.process
        os.kill(hung.pid, signal.SIGSTOP)  # alive, answering nothing
        supervisor.check()
        assert supervisor.store.process is hung, "one missed ping is not yet a hung store"
        supervisor.check()
        assert supervisor.store.restarts == 2 and hung.poll() is not None and redis_answers(port + 3)
        pids = [supervisor.nginx.pid, supervisor.store.process.pid] + [r.process.pid for r in supervisor.replicas]
    finally:
        supervisor.stop()
    assert [pid for pid in pids if alive(pid)] == [] and not redis_answers(port + 3)
