"""The supervisor's port check (deploy/replicas._free) answers as nginx and the replicas will bind: a port held by a
listener is busy; a port whose last connection is in TIME_WAIT (a class's server stopped a moment ago) is free.
Before, the check bound without SO_REUSEADDR and refused such a port for up to a minute after every stop."""

import socket

import pytest

from deploy.replicas import Supervisor, _free, main


def test_a_listening_port_is_busy_and_a_port_in_time_wait_is_free():
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    assert not _free("127.0.0.1", port)
    client = socket.create_connection(("127.0.0.1", port))
    served, _ = listener.accept()
    served.close()  # the server's side closes first: its end of the connection waits in TIME_WAIT on ``port``
    client.recv(1)
    client.close()
    listener.close()
    plain = socket.socket()  # what the old check did: a bind without SO_REUSEADDR is refused here
    try:
        plain.bind(("127.0.0.1", port))
        refused = False
    except OSError:
        refused = True
    finally:
        plain.close()
    assert refused, "no TIME_WAIT was made: the test proves nothing"
    assert _free("127.0.0.1", port)


def test_another_checkout_that_is_not_the_app_is_refused_with_a_message(tmp_path):
    with pytest.raises(SystemExit) as stopped:
        main(["--app", str(tmp_path), "--port", "1"])
    assert "no app.py and ui/launch.py there" in str(stopped.value) and str(tmp_path) in str(stopped.value)


def test_the_cluster_is_ready_only_when_nginx_accepts_too(tmp_path):
    """The replicas may answer before nginx listens: the supervisor announced the address then (and the nginx
    tests went on and were refused their first visit, in a loaded clean clone)."""
    with socket.socket() as probe:  # a free port that nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    supervisor = Supervisor(1, port, tmp_path, lambda host, port: ["true"], "nginx")
    supervisor.replicas[0].ready = True
    assert not supervisor.ready()
    with socket.socket() as nginx:
        nginx.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        nginx.bind(("127.0.0.1", port))
        nginx.listen()
        assert supervisor.ready()
        supervisor.replicas[0].ready = False
        assert not supervisor.ready()
