"""The results store (vizcore/results/store.py, stores.py) on SQLite: the contract every store keeps
(tests/support/results_contract.py: answers kept across a restart, the last answer counting, the order, the retention,
the migrations, replicas and sessions at once), what is SQLite's own, and the setting's one-line refusals (a SIGKILL:
tests/integration/test_results.py; the same contract on PostgreSQL: tests/integration/test_results_postgres.py)."""

from __future__ import annotations

import itertools
import sqlite3

import pytest

from tests.support.results_contract import CHECKS, row
from vizcore.errors import VizError
from vizcore.results.store import COLUMNS, MIGRATIONS, ResultsError, SqliteResults, now_iso
from vizcore.results.stores import check_results, default_path, results_path, results_place


@pytest.fixture
def fresh(tmp_path):
    files = itertools.count()

    def place():
        path = tmp_path / f"r{next(files)}.sqlite3"
        return lambda **kwargs: SqliteResults(path, **kwargs)

    return place


@pytest.mark.parametrize("check", CHECKS, ids=lambda check: check.__name__)
def test_the_sqlite_store_keeps_the_contract(check, fresh):
    check(fresh)


def test_the_migrations_are_recorded_in_order_in_the_file(tmp_path):
    path = tmp_path / "r.sqlite3"
    SqliteResults(path).close()
    SqliteResults(path).close()
    with sqlite3.connect(path) as db:
        versions = [v for (v,) in db.execute("SELECT version FROM schema_migrations ORDER BY version")]
        db.execute("INSERT INTO schema_migrations VALUES (?, ?)", (len(MIGRATIONS) + 1, now_iso()))
    assert versions == list(range(1, len(MIGRATIONS) + 1))
    with pytest.raises(ResultsError, match=f"results file {path} has schema version"):
        SqliteResults(path)


def test_a_file_of_the_first_schema_is_migrated_and_a_students_answers_are_read_by_the_index(tmp_path, monkeypatch):
    from vizcore.results import store

    path = tmp_path / "r.sqlite3"
    monkeypatch.setattr(store, "MIGRATIONS", MIGRATIONS[:1])
    first = store.SqliteResults(path)
    first.record([row("s1")])
    first.close()
    monkeypatch.undo()
    again = SqliteResults(path)
    assert again.schema_version() == len(MIGRATIONS) and [r.student for r in again.student_answers("s1")] == ["s1"]
    with sqlite3.connect(path) as db:
        plan = " ".join(str(step) for step in db.execute(
            "EXPLAIN QUERY PLAN SELECT * FROM answers WHERE student = ? ORDER BY answered_at", ("s1",)))
    assert "answers_student" in plan


def test_a_file_that_is_not_a_database_is_refused_with_what_to_do(tmp_path):
    path = tmp_path / "r.sqlite3"
    path.write_bytes(b"not a database at all" * 100)
    with pytest.raises(ResultsError, match="cannot be used .* set VIZCORE_RESULTS to another file"):
        SqliteResults(path)


def test_the_dataclass_and_the_tables_columns_agree():
    assert list(row().record()) == list(COLUMNS)


@pytest.mark.parametrize("value", ["postgres-ish", "redis://localhost:6379/0", "sqlite:///", "results.txt",
                                   "mysql://user@host/results"])
def test_a_wrong_results_setting_is_refused_in_one_line(value):
    with pytest.raises(VizError, match=f"^VIZCORE_RESULTS={value!r} is not a valid setting.*postgresql://"):
        check_results({"VIZCORE_RESULTS": value})


def test_the_results_setting_names_a_file_or_the_cache_folders_default(tmp_path):
    assert results_path("") == default_path() and default_path().name == "results.sqlite3"
    assert results_path(f"sqlite://{tmp_path}/x.sqlite3") == tmp_path / "x.sqlite3"
    assert results_path(str(tmp_path / "x.db")) == tmp_path / "x.db"
    with pytest.raises(VizError, match="VIZCORE_RESULTS_DAYS='0' is not a valid setting"):
        check_results({"VIZCORE_RESULTS_DAYS": "0"})


@pytest.mark.parametrize("value", ["postgresql://vizcore@db.example:5432/results", "postgres://vizcore@db/results",
                                   "postgresql://vizcore:s3cret@10.0.0.5/results?sslmode=require",
                                   "postgresql:///results?host=/var/run/postgresql"])
def test_a_postgresql_address_is_accepted_without_connecting(value):
    check_results({"VIZCORE_RESULTS": value})  # nothing listens at these: only parsed
    assert results_place(value) == value


@pytest.mark.parametrize(("value", "why"), [
    ("postgresql://vizcore:s3cret@db:port/results", "the port 'port' is not a number"),
    ("postgresql://vizcore:s3cret@db:5432", "it names no database"),
    ("postgresql://vizcore:s3cret@db/results?colour=blue", 'invalid URI query parameter: "colour"'),
])
def test_a_wrong_postgresql_address_is_refused_in_one_line_without_its_password(value, why):
    with pytest.raises(VizError) as error:
        check_results({"VIZCORE_RESULTS": value})
    said = str(error.value)
    assert said.startswith("VIZCORE_RESULTS='postgresql://vizcore@db") and why in said and "\n" not in said
    assert "s3cret" not in said and "postgresql://user:password@host:5432/database" in said
