"""``python -m deploy.replicas --replicas N [--port P]``: N app processes behind nginx, one address for a class.

Streamlit runs every session of a process on that one process's cores and keeps the session in its memory,
so more students need more processes, and each student must stay on the process that holds their session.
This starts N ``python -m ui.launch`` processes on 127.0.0.1 ports P+1 ... P+N and nginx on port P in front of
them (``deploy/nginx.conf.template``: sticky by a cookie naming the replica, failover to another replica),
then watches them: a replica whose process ends, or whose ``/_stcore/health`` stops answering, is restarted.
Ctrl-C or SIGTERM stops nginx first (no new connection reaches a dying replica), then each replica's whole
process group, so nothing is left behind. nginx runs as an ordinary child process with its configuration,
pid, logs and temporary files in the run directory (``--run-dir``, a temporary one by default).

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
REPLICA_ENV = "VIZCORE_REPLICA"  # r1 ... rN in each replica's environment (its logs can say which it is)
NGINX_HELP = ("nginx is missing: install Debian's package (`sudo apt-get install nginx`, or `make nginx` as "
              "root), or pass --nginx /path/to/nginx")

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


@dataclass
class Replica:
    name: str
    port: int
    process: subprocess.Popen | None = None
    started: float = 0.0
    misses: int = 0
    ready: bool = False
    restarts: int = 0
    log: Path | None = field(default=None, repr=False)


class Supervisor:
    """Starts, watches and stops the replicas and nginx. ``command(host, port)`` is one replica's command."""

    def __init__(self, replicas: int, port: int, run_dir: Path, command: Command, nginx: str,
                 listen_host: str = "127.0.0.1", host: str = "127.0.0.1", env: dict | None = None,
                 say: Callable[[str], None] = print, timing: Timing = Timing()):
        if replicas < 1:
            raise SystemExit("--replicas must be 1 or more")
        self.replicas = [Replica(f"r{i}", port + i) for i in range(1, replicas + 1)]
        self.port, self.run_dir, self.command, self.nginx_bin = port, run_dir, command, nginx
        self.listen, self.host, self.say = f"{listen_host}:{port}", host, say
        self.env = dict(os.environ if env is None else env)
        self.timing = timing
        self.nginx: subprocess.Popen | None = None
        self.stopping = False
        self.announced = False  # "all replicas answer" said once

    def start(self) -> None:
        for sub in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
            (self.run_dir / "tmp" / sub).mkdir(parents=True, exist_ok=True)
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

    def _start_replica(self, replica: Replica) -> None:
        replica.log = self.run_dir / f"{replica.name}.log"
        env = {**self.env, REPLICA_ENV: replica.name}
        with open(replica.log, "ab") as log:
            replica.process = subprocess.Popen(self.command(self.host, replica.port), cwd=ROOT, env=env,
                                               stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                               preexec_fn=_die_with_parent)
        replica.started, replica.misses, replica.ready = time.monotonic(), 0, False

    def _write_state(self) -> None:
        state = {"port": self.port, "nginx_pid": self.nginx.pid if self.nginx else None,
                 "replicas": [{"name": r.name, "port": r.port, "pid": r.process.pid if r.process else None,
                               "restarts": r.restarts, "ready": r.ready} for r in self.replicas]}
        partial = self.run_dir / "state.json.tmp"
        partial.write_text(json.dumps(state, indent=1))
        os.replace(partial, self.run_dir / "state.json")

    def check(self) -> None:
        """One round of health checks: restart a replica that ended, or that stopped answering once ready."""
        changed = False
        for replica in self.replicas:
            url = f"http://{self.host}:{replica.port}"
            ended = replica.process is None or replica.process.poll() is not None
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
            if all(replica.ready for replica in self.replicas) and not self.announced:
                self.announced = True
                host = socket.gethostname() if self.listen.startswith("0.0.0.0:") else self.listen.rsplit(":", 1)[0]
                self.say(f"all {len(self.replicas)} replicas answer: open http://{host}:{self.port}/")

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
        """nginx first (it closes the students' connections), then every replica's process group."""
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
        try:
            sock.bind(("127.0.0.1" if address == "localhost" else address, port))
        except OSError:
            return False
    return True


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
    parser.add_argument("streamlit_args", nargs="*", help="more options for each replica's streamlit, after --")
    args = parser.parse_args(argv)
    if not 1 <= args.port <= 65535 - args.replicas:
        raise SystemExit(f"--port {args.port}: the port and the next {args.replicas} must be from 1 to 65535")
    busy = [port for port in range(args.port, args.port + args.replicas + 1) if not _free(args.address, port)]
    if busy:
        raise SystemExit(f"port {busy[0]} is in use: choose another --port (nginx takes it, the replicas the next "
                         f"{args.replicas})")
    nginx = find_nginx(args.nginx)
    run_dir = args.run_dir or Path(tempfile.mkdtemp(prefix="vizcore-replicas-"))
    run_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", default_threads(args.replicas))
    # One secret for all: a cookie Streamlit signs on one replica (st.login's) stays valid on another after a failover.
    env.setdefault("STREAMLIT_SERVER_COOKIE_SECRET", secrets.token_hex(32))
    supervisor = Supervisor(args.replicas, args.port, run_dir.resolve(),
                            lambda host, port: app_command(host, port, args.streamlit_args), nginx,
                            listen_host=args.address, env=env, say=lambda text: print(text, flush=True))
    supervisor.run()


if __name__ == "__main__":
    main()
