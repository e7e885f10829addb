"""A throwaway redis-server for the rooms' tests and bench: an ordinary process on a free localhost port, the same
command deploy/replicas.py runs (nothing saved to disk), killed at the end."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from deploy.replicas import redis_answers, redis_command
from tests.support.processes import free_port_block

MISSING = "redis-server is not installed (`make redis` as root, or `sudo apt-get install redis-server`)"


@dataclass
class RedisServer:
    process: subprocess.Popen
    port: int
    run_dir: Path

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


def redis_binary() -> str | None:
    return shutil.which("redis-server") or next(
        (path for path in ("/usr/bin/redis-server", "/usr/sbin/redis-server") if Path(path).is_file()), None)


@contextlib.contextmanager
def redis_server(run_dir: Path, port: int | None = None, timeout: float = 10.0) -> Iterator[RedisServer]:
    """A running redis-server (its log in ``run_dir``) on ``port`` or a free one; killed on leaving, whatever
    happened."""
    binary = redis_binary()
    assert binary, MISSING
    port = port or free_port_block(1)
    run_dir.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen(redis_command(binary, port, run_dir), cwd=run_dir, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    server = RedisServer(process, port, run_dir)
    try:
        deadline = time.monotonic() + timeout
        while not redis_answers(port, timeout=1.0):
            assert process.poll() is None and time.monotonic() < deadline, (
                f"redis-server did not start; see {run_dir / 'redis.log'}")
            time.sleep(0.02)
        yield server
    finally:
        server.kill()
