"""deploy/replicas.py's rooms store: when the supervisor starts one, and how (no process is started here)."""

from pathlib import Path

from deploy.replicas import ROOMS_ENV, Supervisor, redis_command, shares_rooms


def test_two_or_more_replicas_share_a_store_unless_one_is_named():
    assert not shares_rooms(1, {})  # one replica: its own memory, no outside service
    assert shares_rooms(2, {}) and shares_rooms(8, {ROOMS_ENV: ""})
    assert not shares_rooms(3, {ROOMS_ENV: "redis://rooms.school.example:6379/2"})


def test_every_replica_is_given_the_stores_address_on_its_own_port(tmp_path):
    supervisor = Supervisor(3, 18000, tmp_path, lambda host, port: [], "nginx", env={}, redis="redis-server")
    assert supervisor.store.port == 18004  # nginx 18000, the replicas 18001-18003, then the store
    assert supervisor.env[ROOMS_ENV] == "redis://127.0.0.1:18004/0"
    alone = Supervisor(3, 18000, tmp_path, lambda host, port: [], "nginx", env={})
    assert alone.store is None and ROOMS_ENV not in alone.env


def test_the_store_listens_on_localhost_only_and_writes_nothing_to_disk():
    command = redis_command("redis-server", 7001, Path("/run/x"))
    options = dict(zip(command[1::2], command[2::2]))
    assert options["--port"] == "7001" and options["--bind"] == "127.0.0.1"
    assert options["--save"] == "" and options["--appendonly"] == "no" and options["--daemonize"] == "no"
    assert options["--pidfile"] == "/run/x/redis.pid" and options["--logfile"] == "/run/x/redis.log"
