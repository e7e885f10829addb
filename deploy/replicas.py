"""``python -m deploy.replicas --replicas N [--port P]``: N app processes behind nginx, one address for a class.

Streamlit runs every session of a process on that one process's cores and keeps the session in its memory,
so more students need more processes, and each student must stay on the process that holds their session.
This starts N ``python -m ui.launch`` processes on 127.0.0.1 ports P+1 ... P+N and nginx on port P in front of
them (``deploy/nginx.conf.template``: sticky by a cookie naming the replica, failover to another replica),
then watches them: a replica whose process ends, or whose ``/_stcore/health`` stops answering, is restarted.
Ctrl-C or SIGTERM stops nginx first (no new connection reaches a dying replica), then each replica's whole
process group, so nothing is left behind. nginx runs as an ordinary child process with its configuration,
pid, logs and temporary files in the run directory (``--run-dir``, a temporary one by default).

A class that follows its teacher (vizcore/lessons/rooms.py) may have its teacher on one replica and students on
another, so with two or more replicas the rooms live in one shared store: this starts Debian's ``redis-server``
on port P+N+1 beside nginx (localhost only, nothing saved to disk, its pid and log in the run directory, health
checked and restarted like a replica, stopped last) and gives every replica ``VIZCORE_ROOMS=redis://...`` unless
``VIZCORE_ROOMS`` is set already (an outside store). One replica keeps its rooms in its own memory.

The replicas share one read-only model cache on disk: the embedded model inside its installed wheel and the
built-in models in ``~/.cache/vizcore/models`` (``make models``), which no replica writes. The one file cache
they write, the opening heatmaps (``vizcore.model.startup_cache``), is written by atomic rename, so N warm-ups
writing the same entry at once leave one whole entry.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = Path(__file__).with_name("nginx.conf.template")
PUBLIC_ADDRESS_ENV = "VIZCORE_PUBLIC_ADDRESS"  # the address students reach the class on (nginx's), not a replica's
REPLICA_ENV = "VIZCORE_REPLICA"  # r1 ... rN in each replica's environment (its logs can say which it is)
ROOMS_ENV = "VIZCORE_ROOMS"  # the rooms store every replica opens (vizcore.lessons.stores.open_rooms)
NGINX_HELP = ("nginx is missing: install Debian's package (`sudo apt-get install nginx`, or `make nginx` as "
              "root), or pass --nginx /path/to/nginx")

REDIS_HELP = ("redis-server is missing (the replicas share their classes' rooms through it): install Debian's "
              "package (`sudo apt-get install redis-server`, or `make redis` as root), pass --redis "
              "/path/to/redis-server, or set VIZCORE_ROOMS=redis://host:port/0 to a store of your own")

Command = Callable[[str, int], list[str]]


@dataclass(frozen=True)
class Timing:
    """How the supervisor watches (seconds). A restart ends every session on that replica, so it is slow to
    call a replica hung: under a class's load the server thread answers late, not never."""

    start_grace: float = 120.0  # a (re)started replica imports torch before it answers /_stcore/health
    every: float = 2.0  # between two rounds of health polls
    timeout: float = 5.0  # one poll's wait for an answer
    fails: int = 5  # polls in a row without an answer before a started replica counts as hung
    stop_wait: float = 10.0  # after SIGTERM, before SIGKILL
    fail_timeout: int = 5  # nginx skips a replica that refused a connection for this long, then tries it again


def app_command(host: str, port: int, streamlit_args: Sequence[str] = ()) -> list[str]:
    """One replica: the app as ``make run`` starts it, on its own localhost port."""
    return [sys.executable, "-m", "ui.launch", "--server.port", str(port), "--server.address", host,
            "--server.headless", "true", *streamlit_args]


def nginx_config(listen: str, replica_ports: Sequence[int], run_dir: Path, host: str = "127.0.0.1",
                 fail_timeout: int = Timing.fail_timeout) -> str:
    """The nginx configuration for replicas r1 ... rN on ``host``:``replica_ports``, listening on ``listen``."""
    names = [f"r{i}" for i in range(1, len(replica_ports) + 1)]
    servers = {name: f"{host}:{port}" for name, port in zip(names, replica_ports)}
    passive = f"max_fails=1 fail_timeout={fail_timeout}s"
    pinned = []
    for name, address in servers.items():
        backups = "".join(f"        server {other} backup;\n" for other in servers.values() if other != address)
        pinned.append(f"    upstream vizcore_{name} {{\n        server {address} {passive};\n{backups}    }}")
    fields = {
        "@USER@": "user root;  # nginx started as root would switch its workers to nobody, who cannot write "
                  "the run directory" if os.geteuid() == 0 else "",
        "@RUN@": str(run_dir),
        "@MIME_TYPES@": "/etc/nginx/mime.types" if Path("/etc/nginx/mime.types").is_file() else "mime.types",
        "@LISTEN@": listen,
        "@ROUTES@": "\n".join(f"        {name} vizcore_{name};" for name in names),
        "@ANSWERED@": "\n".join(f'        "~(^| ){re.escape(address)}$" {name};' for name, address in servers.items()),
        "@KEPT@": "\n".join(f'        "{name}:{name}" "";' for name in names),
        "@ANY@": "\n".join(f"        server {address} {passive};" for address in servers.values()),
        "@PINNED@": "\n".join(pinned),
    }
    text = TEMPLATE.read_text()
    for key, value in fields.items():
        text = text.replace(key, value)
    return text


def find_nginx(given: str | None = None) -> str:
    """The nginx binary, or SystemExit with how to install it."""
    for candidate in (given, shutil.which("nginx"), "/usr/sbin/nginx"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise SystemExit(NGINX_HELP)


def find_redis(given: str | None = None) -> str:
    """The redis-server binary, or SystemExit with how to install it."""
    for candidate in (given, shutil.which("redis-server"), "/usr/bin/redis-server"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise SystemExit(REDIS_HELP)


def redis_command(binary: str, port: int, run_dir: Path) -> list[str]:
    """An ordinary redis-server process for the rooms: localhost only, in the foreground (the supervisor watches
    it), nothing written to disk (a room lives 3 idle hours; a restart ends the classes, as a replica's does)."""
    return [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            "--daemonize", "no", "--dir", str(run_dir), "--pidfile", str(run_dir / "redis.pid"),
            "--logfile", str(run_dir / "redis.log")]


def redis_answers(port: int, host: str = "127.0.0.1", timeout: float = 2.0) -> bool:
    """Whether a Redis answers PING on ``host``:``port`` (its own protocol: no client library needed)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def _without_password(url: str) -> str:
    return re.sub(r"//[^/@]*@", "//", url)


def _die_with_parent() -> None:
    """In a child before exec: its own process group, and SIGTERM when the supervisor dies, even by SIGKILL."""
    os.setsid()
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _stop_group(process: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)


def _healthy(url: str, timeout: float) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=timeout) as response:
            return response.status == 200
    except OSError:
        return False


@dataclass(kw_only=True)
class Watched:
    """A child process the supervisor health-checks and restarts: a replica or the rooms' store."""

    port: int
    process: subprocess.Popen | None = None
    misses: int = 0  # health polls in a row without an answer
    restarts: int = 0

    @property
    def ended(self) -> bool:
        """Not started, or its process has exited."""
        return self.process is None or self.process.poll() is not None


@dataclass(kw_only=True)
class Replica(Watched):
    name: str
    started: float = 0.0
    ready: bool = False
    log: Path | None = field(default=None, repr=False)


@dataclass(kw_only=True)
class Store(Watched):
    """The rooms' redis-server: one for all replicas."""

    binary: str

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"


class Supervisor:
    """Starts, watches and stops the replicas and nginx. ``command(host, port)`` is one replica's command.
    ``redis`` (a redis-server binary): a rooms store on port ``port + replicas + 1`` for them all."""

    def __init__(self, replicas: int, port: int, run_dir: Path, command: Command, nginx: str,
                 listen_host: str = "127.0.0.1", host: str = "127.0.0.1", env: dict | None = None,
                 say: Callable[[str], None] = print, timing: Timing = Timing(), redis: str | None = None,
                 app: Path = ROOT):
        if replicas < 1:
            raise SystemExit("--replicas must be 1 or more")
        self.replicas = [Replica(name=f"r{i}", port=port + i) for i in range(1, replicas + 1)]
        self.port, self.run_dir, self.command, self.nginx_bin, self.app = port, run_dir, command, nginx, app
        self.listen, self.host, self.say = f"{listen_host}:{port}", host, say
        self.env = dict(os.environ if env is None else env)
        # The replicas listen on this computer only, nginx on ``listen_host``: what the students reach (the Lessons
        # page's teacher panel asks it, ui/lessons/room.py).
        self.env[PUBLIC_ADDRESS_ENV] = listen_host
        self.timing = timing
        self.store = Store(binary=redis, port=port + replicas + 1) if redis else None
        if self.store:
            self.env[ROOMS_ENV] = self.store.url
        self.nginx: subprocess.Popen | None = None
        self.stopping = False
        self.announced = False  # "all replicas answer" said once

    def start(self) -> None:
        for sub in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
            (self.run_dir / "tmp" / sub).mkdir(parents=True, exist_ok=True)
        if self.store:
            self._start_store()
        for replica in self.replicas:
            self._start_replica(replica)
        conf = self.run_dir / "nginx.conf"
        conf.write_text(nginx_config(self.listen, [r.port for r in self.replicas], self.run_dir, self.host,
                                     self.timing.fail_timeout))
        # -p, -e: nginx's prefix and its start-up error log in the run directory, not /var/log (a user cannot
        # write there)
        nginx = [self.nginx_bin, "-p", str(self.run_dir), "-e", str(self.run_dir / "error.log"), "-c", str(conf)]
        checked = subprocess.run([*nginx, "-t", "-q"], capture_output=True, text=True)
        if checked.returncode != 0:
            self.stop()
            raise SystemExit(f"nginx refused its configuration {conf}:\n{checked.stderr.strip()}")
        with open(self.run_dir / "nginx.stderr", "ab") as log:
            self.nginx = subprocess.Popen(nginx, stdout=subprocess.DEVNULL, stderr=log, preexec_fn=_die_with_parent)
        self._write_state()
        self.say(f"nginx on http://{self.listen} -> {len(self.replicas)} replicas on ports "
                 f"{self.replicas[0].port}-{self.replicas[-1].port}; logs in {self.run_dir}")
        rooms = self.env.get(ROOMS_ENV)
        self.say(f"classes' rooms: redis-server on port {self.store.port}" if self.store else
                 f"classes' rooms: the store at {_without_password(rooms)}" if rooms else
                 "classes' rooms: in the replica's memory")

    def _start_store(self, wait: float = 10.0) -> None:
        """redis-server, answering before the replicas start (it starts in milliseconds)."""
        store = self.store
        with open(self.run_dir / "redis.stderr", "ab") as log:
            store.process = subprocess.Popen(redis_command(store.binary, store.port, self.run_dir),
                                             cwd=self.run_dir, stdin=subprocess.DEVNULL, stdout=log,
                                             stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
        store.misses = 0
        deadline = time.monotonic() + wait
        while not redis_answers(store.port, timeout=self.timing.timeout):
            if store.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise SystemExit(f"redis-server did not start on port {store.port}; see "
                                 f"{self.run_dir / 'redis.log'} and {self.run_dir / 'redis.stderr'}")
            time.sleep(0.05)

    def _check_store(self) -> bool:
        """Restart the rooms' store if it ended or stopped answering; True when it was restarted."""
        store = self.store
        ended = store.ended
        if not ended and redis_answers(store.port, timeout=self.timing.timeout):
            store.misses = 0
            return False
        store.misses += 0 if ended else 1
        if not ended and store.misses < self.timing.fails:
            return False
        why = f"ended with code {store.process.returncode}" if ended else f"did not answer {store.misses} times"
        self.say(f"the rooms' redis-server (port {store.port}) {why}: restarting it; open classes have ended "
                 "(their teachers start them again)")
        self._stop_store()
        store.restarts += 1
        self._start_store()
        return True

    def _stop_store(self) -> None:
        process = self.store.process if self.store else None
        if process is None or process.poll() is not None:
            return
        process.terminate()  # redis-server's clean shutdown (nothing to save)
        try:
            process.wait(self.timing.stop_wait)
        except subprocess.TimeoutExpired:
            _stop_group(process, signal.SIGKILL)
            process.wait()

    def _start_replica(self, replica: Replica) -> None:
        replica.log = self.run_dir / f"{replica.name}.log"
        env = {**self.env, REPLICA_ENV: replica.name}
        with open(replica.log, "ab") as log:
            replica.process = subprocess.Popen(self.command(self.host, replica.port), cwd=self.app, env=env,
                                               stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                               preexec_fn=_die_with_parent)
        replica.started, replica.misses, replica.ready = time.monotonic(), 0, False

    def _write_state(self) -> None:
        store = self.store
        state = {"port": self.port, "nginx_pid": self.nginx.pid if self.nginx else None,
                 "rooms": self.env.get(ROOMS_ENV) or "memory",
                 "redis": {"port": store.port, "pid": store.process.pid if store.process else None,
                           "restarts": store.restarts} if store else None,
                 "replicas": [{"name": r.name, "port": r.port, "pid": r.process.pid if r.process else None,
                               "restarts": r.restarts, "ready": r.ready} for r in self.replicas]}
        partial = self.run_dir / "state.json.tmp"
        partial.write_text(json.dumps(state, indent=1))
        os.replace(partial, self.run_dir / "state.json")

    def check(self) -> None:
        """One round of health checks: restart a replica that ended, or that stopped answering once ready, and the
        rooms' store likewise."""
        changed = self._check_store() if self.store else False
        for replica in self.replicas:
            url = f"http://{self.host}:{replica.port}"
            ended = replica.ended
            if not ended and _healthy(url, self.timing.timeout):
                changed |= not replica.ready
                replica.ready, replica.misses = True, 0
                continue
            replica.misses += 0 if ended else 1
            starting = not replica.ready and time.monotonic() - replica.started < self.timing.start_grace
            if ended or (not starting and replica.misses >= self.timing.fails):
                why = (f"ended with code {replica.process.returncode}" if ended
                       else f"did not answer /_stcore/health {replica.misses} times")
                self.say(f"replica {replica.name} (port {replica.port}) {why}: restarting it")
                if not ended:
                    self._stop_replica(replica)
                replica.restarts += 1
                self._start_replica(replica)
                changed = True
        if self.nginx is not None and self.nginx.poll() is not None and not self.stopping:
            self.say(f"nginx ended with code {self.nginx.returncode}; see {self.run_dir / 'error.log'}")
            raise SystemExit(1)
        if changed:
            self._write_state()
        if not self.announced and self.ready():
            self.announced = True
            host = socket.gethostname() if self.listen.startswith("0.0.0.0:") else self.listen.rsplit(":", 1)[0]
            self.say(f"all {len(self.replicas)} replicas answer: open http://{host}:{self.port}/")

    def ready(self) -> bool:
        """Every replica answers its health check and nginx accepts connections: a visitor can come in. (The
        replicas may be up before nginx listens: a test that went on when they were refused its first visit.)"""
        if not all(replica.ready for replica in self.replicas):
            return False
        host = self.listen.rsplit(":", 1)[0]
        try:
            with socket.create_connection(("127.0.0.1" if host == "0.0.0.0" else host, self.port),
                                          timeout=self.timing.timeout):
                return True
        except OSError:
            return False

    def _stop_replica(self, replica: Replica) -> None:
        if replica.process is None:
            return
        _stop_group(replica.process)
        try:
            replica.process.wait(self.timing.stop_wait)
        except subprocess.TimeoutExpired:
            _stop_group(replica.process, signal.SIGKILL)
            replica.process.wait()
        _stop_group(replica.process, signal.SIGKILL)  # whatever the replica started and left in its group

    def stop(self) -> None:
        """nginx first (it closes the students' connections), then every replica's process group, then the rooms'
        store (the replicas use it until they end)."""
        self.stopping = True
        if self.nginx is not None and self.nginx.poll() is None:
            self.nginx.send_signal(signal.SIGTERM)  # nginx's fast shutdown
            try:
                self.nginx.wait(self.timing.stop_wait)
            except subprocess.TimeoutExpired:
                _stop_group(self.nginx, signal.SIGKILL)
                self.nginx.wait()
        for replica in self.replicas:
            if replica.process is not None and replica.process.poll() is None:
                _stop_group(replica.process)
        for replica in self.replicas:
            self._stop_replica(replica)
        self._stop_store()

    def run(self) -> None:
        """Check every ``timing.every`` seconds until SIGINT (Ctrl-C) or SIGTERM, then stop everything."""
        def _signalled(signum, _frame):
            raise KeyboardInterrupt

        previous = {sig: signal.signal(sig, _signalled) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            self.start()
            while True:
                time.sleep(self.timing.every)
                self.check()
        except KeyboardInterrupt:
            self.say("stopping nginx and the replicas")
        finally:
            for sig in previous:  # a second Ctrl-C must not cut the clean stop short
                signal.signal(sig, signal.SIG_IGN)
            self.stop()
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def _free(address: str, port: int) -> bool:
    with socket.socket() as sock:
        # As nginx and the replicas bind it: a port whose last connections are in TIME_WAIT (a server stopped a
        # moment ago) is free to them; only a listener holds it (Linux refuses SO_REUSEADDR over a listening socket).
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1" if address == "localhost" else address, port))
        except OSError:
            return False
    return True


def shares_rooms(replicas: int, env: dict) -> bool:
    """Whether the supervisor starts the rooms' store: two or more replicas, and no store named in ``env``."""
    return replicas > 1 and not env.get(ROOMS_ENV)


def default_threads(replicas: int) -> str:
    """torch threads per replica: the cores shared out, at least one (more would oversubscribe them)."""
    return str(max(1, (os.cpu_count() or 1) // replicas))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m deploy.replicas", description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicas", type=int, default=2, help="app processes (2 or more; default 2)")
    parser.add_argument("--port", type=int, default=8501, help="nginx's port; replicas use the next N ports")
    parser.add_argument("--address", default="127.0.0.1",
                        help="address nginx listens on (0.0.0.0 for a classroom network; default 127.0.0.1)")
    parser.add_argument("--run-dir", type=Path, help="where nginx.conf, logs and state.json go (default: a temp dir)")
    parser.add_argument("--nginx", help="the nginx binary (default: nginx on PATH, then /usr/sbin/nginx)")
    parser.add_argument("--redis", help="the redis-server binary for the rooms with 2 or more replicas (default: "
                        f"redis-server on PATH); not used when {ROOMS_ENV} is set")
    parser.add_argument("--app", type=Path, default=ROOT,
                        help="the checkout whose app.py the replicas run (default: this one; another commit's "
                             "worktree measures that commit behind the same nginx, as docs/BENCHMARKS.md's "
                             "'before, 2 replicas' rows do)")
    parser.add_argument("streamlit_args", nargs="*", help="more options for each replica's streamlit, after --")
    args = parser.parse_args(argv)
    if not (args.app / "app.py").is_file() or not (args.app / "ui" / "launch.py").is_file():
        raise SystemExit(f"--app {args.app}: no app.py and ui/launch.py there: give a checkout of this project")
    env = dict(os.environ)
    shared = shares_rooms(args.replicas, env)  # else one replica's memory, or the store given
    after = args.replicas + shared
    if not 1 <= args.port <= 65535 - after:
        raise SystemExit(f"--port {args.port}: the port and the next {after} must be from 1 to 65535")
    busy = [port for port in range(args.port, args.port + after + 1) if not _free(args.address, port)]
    if busy:
        raise SystemExit(f"port {busy[0]} is in use: choose another --port (nginx takes it, the replicas the next "
                         f"{args.replicas}" + (", the rooms' redis-server the one after)" if shared else ")"))
    nginx = find_nginx(args.nginx)
    redis = find_redis(args.redis) if shared else None
    run_dir = args.run_dir or Path(tempfile.mkdtemp(prefix="vizcore-replicas-"))
    run_dir.mkdir(parents=True, exist_ok=True)
    env.setdefault("OMP_NUM_THREADS", default_threads(args.replicas))
    # One secret for all: a cookie Streamlit signs on one replica (st.login's) stays valid on another after a failover.
    env.setdefault("STREAMLIT_SERVER_COOKIE_SECRET", secrets.token_hex(32))
    supervisor = Supervisor(args.replicas, args.port, run_dir.resolve(),
                            lambda host, port: app_command(host, port, args.streamlit_args), nginx,
                            listen_host=args.address, env=env, say=lambda text: print(text, flush=True), redis=redis,
                            app=args.app.resolve())
    supervisor.run()


if __name__ == "__main__":
    main()
