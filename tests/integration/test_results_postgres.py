"""The results store in PostgreSQL (vizcore/results/store_postgres.py) against a real server started here (one cluster
for the module, a new database per check): the same contract as SQLite's, chosen by address, a server that is down
or refuses said in one sentence without the password (and stopping the app's start in one line), a writer killed
with SIGKILL, and the database server itself killed with SIGKILL and started again: no answer said saved is lost."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.postgres_server import postgres_server
from tests.support.processes import free_port_block
from tests.support.results_contract import CHECKS, check_every_quiz_said_saved_is_stored, killed_writer, row
from vizcore.results.store import MIGRATIONS, ResultsError
from vizcore.results.stores import open_results

ROOT = Path(__file__).resolve().parents[2]
_databases = itertools.count()


@pytest.fixture(scope="module")
def server():
    with postgres_server() as running:
        yield running


@pytest.fixture
def fresh(server):
    def place():
        url = server.create_database(f"results{next(_databases)}")
        return lambda **kwargs: _postgres(url, **kwargs)

    return place


def _postgres(url: str, **kwargs):
    from vizcore.results.store_postgres import PostgresResults

    return PostgresResults(url, **kwargs)


@pytest.mark.parametrize("check", CHECKS, ids=lambda check: check.__name__)
def test_the_postgresql_store_keeps_the_contract(check, fresh):
    check(fresh)


def test_the_store_is_chosen_by_address_and_its_schema_is_sqlites(server):
    from vizcore.results.store_postgres import PostgresResults

    url = server.create_database("chosen")
    results = open_results(url.replace("postgresql://", "postgres://"), days=7)
    assert isinstance(results, PostgresResults) and results.retention_days == 7
    assert server.password not in results.describe() and "127.0.0.1" in results.describe()
    import psycopg

    with psycopg.connect(url) as db:
        columns = [name for (name,) in db.execute("SELECT column_name FROM information_schema.columns WHERE "
                                                  "table_name = 'answers' ORDER BY ordinal_position")]
        versions = [v for (v,) in db.execute("SELECT version FROM schema_migrations ORDER BY version")]
    from vizcore.results.store import COLUMNS

    assert columns == [*COLUMNS, "rowid"]  # SQLite's implicit rowid, made a column
    assert versions == list(range(1, len(MIGRATIONS) + 1))


def _refusal(call) -> str:
    started = time.monotonic()
    with pytest.raises(ResultsError) as error:
        call()
    assert time.monotonic() - started < 10, "a page waited too long for a database that does not answer"
    assert error.value.__cause__ is None, "no chained traceback"
    assert error.value.__context__ is None or error.value.__suppress_context__, "no chained traceback"
    said = str(error.value)
    assert "\n" not in said
    return said


def test_a_database_that_does_not_answer_or_refuses_is_said_without_the_password(server):
    port = free_port_block(1)  # nothing listens there
    said = _refusal(lambda: _postgres(f"postgresql://vizcore:hunter2@127.0.0.1:{port}/results"))
    assert said.startswith(f"The results database postgresql://vizcore@127.0.0.1:{port}/results cannot be used (")
    assert "Connection refused" in said and "Check that PostgreSQL runs there" in said and "hunter2" not in said

    said = _refusal(lambda: _postgres(server.url(password="hunter2")))
    assert "password authentication failed" in said and "hunter2" not in said and server.password not in said
    said = _refusal(lambda: _postgres(server.url("never_made")))
    assert 'database "never_made" does not exist' in said and server.password not in said
    said = _refusal(lambda: _postgres(f"postgresql://vizcore:hunter2@127.0.0.1:{port}"))
    assert "it names no database" in said and "hunter2" not in said


def test_the_app_does_not_start_on_a_database_it_cannot_open_and_says_so_in_one_line():
    port = free_port_block(1)
    env = {**os.environ, "VIZCORE_RESULTS": f"postgresql://vizcore:hunter2@127.0.0.1:{port}/results"}
    done = subprocess.run([sys.executable, "-m", "ui.launch", "--server.port", "1"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr and "hunter2" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"vizcore: The results database postgresql://vizcore@127.0.0.1:{port}/results cannot be used"), lines


def test_a_writer_killed_with_sigkill_loses_no_answer_it_said_was_saved(server):
    url = server.create_database("killed_writer")
    said, _ = killed_writer(url, lambda writer: os.kill(writer.pid, signal.SIGKILL))
    check_every_quiz_said_saved_is_stored(_postgres(url).answers(), said)


def test_the_database_server_killed_with_sigkill_loses_nothing_said_saved_and_the_app_reconnects():
    with postgres_server() as crashing:  # a cluster of its own: the module's goes on for the other tests
        url = crashing.create_database("crash")
        import psycopg

        with psycopg.connect(crashing.url(), autocommit=True) as admin:  # the store's commits are durable all the same
            admin.execute("ALTER DATABASE crash SET synchronous_commit = off")
        app = _postgres(url)  # a replica's store, open before the crash and after it
        app.record([row("before")])
        said, other = killed_writer(url, lambda writer: crashing.kill())
        assert other and other[0].startswith("error The results could not be saved (results database "
                                              f"postgresql://postgres@127.0.0.1:{crashing.port}/crash: ")
        assert other[0].endswith("Try again in a moment.") and crashing.password not in other[0]
        said_down = _refusal(lambda: app.answers())
        assert said_down.startswith("The results database") and "cannot be read" in said_down
        assert "could not be saved" in _refusal(lambda: app.record([row("during")]))
        crashing.start()  # it replays its WAL: every commit it acknowledged is back
        check_every_quiz_said_saved_is_stored([r for r in app.answers() if r.student != "before"], said)
        app.record([row("after")])  # the same store, connected again
        assert {"before", "after"} <= {r.student for r in app.answers()}
