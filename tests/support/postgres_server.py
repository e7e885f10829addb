"""A throwaway PostgreSQL for the results store's tests: Debian's ``initdb`` and ``postgres`` run as ordinary processes
(no service, no cluster of the package's), a new cluster on a free localhost port with its socket in its own folder,
deleted at the end.

Host connections need the password (scram-sha-256, as a real server would ask), made up per cluster. PostgreSQL
refuses to run as root: as root, the server runs as the ``postgres`` user the Debian package made, in a folder under
/tmp (pytest's own folders are root's, closed to other users).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.processes import free_port_block

MISSING = ("PostgreSQL is not installed: `make test` installs it (as root, `make postgresql`; or `sudo apt-get install "
           "postgresql`), then run the tests again")
USER = "postgres"  # the cluster's superuser, and as root the system user that runs it


def postgres_bindir() -> Path | None:
    """The newest installed PostgreSQL's programs (Debian: /usr/lib/postgresql/N/bin, not on PATH)."""
    def version(path: Path) -> tuple[int, ...]:
        return tuple(int(part) for part in re.findall(r"\d+", path.parent.name))

    found = [path for path in Path("/usr/lib/postgresql").glob("*/bin") if (path / "postgres").is_file()]
    if found:
        return max(found, key=version)
    on_path = shutil.which("postgres")
    return Path(on_path).resolve().parent if on_path else None


def _as_postgres() -> dict:
    """Popen's arguments that run a program as the ``postgres`` user when this process is root (else nothing)."""
    if os.geteuid() != 0:
        return {}
    import pwd

    try:
        entry = pwd.getpwnam(USER)
    except KeyError:
        raise AssertionError(f"PostgreSQL does not run as root, and there is no {USER!r} user to run it: the Debian "
                             "package makes one (`make postgresql`, or `sudo apt-get install postgresql`)") from None
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


@dataclass
class PostgresServer:
    bindir: Path
    base: Path  # the cluster (data/), the socket, the log
    port: int
    password: str
    process: subprocess.Popen | None = None
    databases: list[str] = field(default_factory=list)

    @property
    def log(self) -> Path:
        return self.base / "postgres.log"

    def url(self, database: str = "postgres", password: str | None = None) -> str:
        secret = self.password if password is None else password
        return f"postgresql://{USER}:{secret}@127.0.0.1:{self.port}/{database}"

    def start(self, timeout: float = 30.0) -> None:
        """Start the server on the cluster (again, after ``kill``: it replays its WAL first) and wait for it."""
        command = [str(self.bindir / "postgres"), "-D", str(self.base / "data"), "-p", str(self.port),
                   "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={self.base}",
                   "-c", "shared_buffers=16MB", "-c", "logging_collector=off"]
        with open(self.log, "ab") as log:
            # its own process group: ``kill`` ends the server and its backends at once, as a crash does
            self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True, **_as_postgres())
        deadline = time.monotonic() + timeout
        while not self.answers():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise AssertionError(f"postgres did not start: {self.log_tail()}")
            time.sleep(0.05)

    def answers(self) -> bool:
        import psycopg

        try:
            with psycopg.connect(self.url(), connect_timeout=2):
                return True
        except psycopg.OperationalError:
            return False

    def create_database(self, name: str) -> str:
        """A new empty database; its address."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        self.databases.append(name)
        return self.url(name)

    def kill(self) -> None:
        """SIGKILL to the server and all its processes at once: nothing is flushed or shut down."""
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self.process = None

    def log_tail(self, lines: int = 15) -> str:
        try:
            return " | ".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError as error:
            return f"(no log: {error})"


@contextlib.contextmanager
def postgres_server(port: int | None = None) -> Iterator[PostgresServer]:
    """A new cluster, running, on ``port`` or a free one; stopped and deleted on leaving, whatever happened."""
    bindir = postgres_bindir()
    assert bindir, MISSING
    base = Path(tempfile.mkdtemp(prefix="vizcore-postgres-"))
    try:
        server = PostgresServer(bindir, base, port or free_port_block(1), secrets.token_urlsafe(12))
        (base / "password").write_text(server.password)
        if os.geteuid() == 0:
            shutil.chown(base, USER, USER)
            shutil.chown(base / "password", USER, USER)
        done = subprocess.run(
            [str(bindir / "initdb"), "-D", str(base / "data"), "-U", USER, f"--pwfile={base / 'password'}",
             "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, cwd=base, **_as_postgres())
        assert done.returncode == 0, f"initdb failed: {done.stderr.strip() or done.stdout.strip()}"
        server.start()
        try:
            yield server
        finally:
            server.kill()  # the cluster is deleted next: a clean shutdown's checkpoint would only cost seconds
    finally:
        shutil.rmtree(base, ignore_errors=True)
