"""The results store (vizcore/results/store.py, stores.py): answers kept across a restart, the schema's
migrations, the last answer counting, the retention, and the setting's one-line refusals (a SIGKILL:
tests/integration/test_results.py)."""

from __future__ import annotations

import sqlite3

import pytest

from vizcore.errors import VizError
from vizcore.results import store as store_module
from vizcore.results.store import COLUMNS, MIGRATIONS, ResultsError, Row, SqliteResults, now_iso
from vizcore.results.stores import check_results, default_path, results_path


def row(student="s1", answer="a", question="step1", phase="pre", correct=True, when=None, class_code="K7P3QX"):
    return Row(class_code, "attention", phase, question, student, "", answer, correct, when or now_iso(), "a",
               "Which key?", "minilm")


def test_answers_survive_closing_and_opening_the_file_again(tmp_path):
    path = tmp_path / "r.sqlite3"
    first = SqliteResults(path)
    first.record([row("s1"), row("s2", "b", correct=False)])
    first.close()
    again = SqliteResults(path)
    stored = again.answers("K7P3QX")
    assert [(r.student, r.answer, r.correct) for r in stored] == [("s1", "a", True), ("s2", "b", False)]
    assert again.schema_version() == len(MIGRATIONS)


def test_a_students_last_answer_to_a_question_counts_once(tmp_path):
    results = SqliteResults(tmp_path / "r.sqlite3")
    results.record([row("s1", "a")])
    results.record([row("s1", "b", correct=False)])
    results.record([row("s1", "c", phase="post")])
    stored = results.answers()
    assert [(r.phase, r.answer) for r in stored] == [("pre", "b"), ("post", "c")]


def test_a_bad_row_stores_nothing_of_its_quiz(tmp_path):
    results = SqliteResults(tmp_path / "r.sqlite3")
    with pytest.raises(ResultsError, match="phase is one of pre, post, step"):
        results.record([row("s1"), row("s2", phase="during")])
    with pytest.raises(ResultsError, match="nickname has at most 40"):
        results.record([Row("", "attention", "pre", "q", "s", "x" * 41, "a", True, now_iso())])
    assert results.answers() == []


def test_answers_older_than_the_retention_are_deleted_and_recent_ones_kept(tmp_path):
    now = [1_800_000_000.0]
    results = SqliteResults(tmp_path / "r.sqlite3", retention_days=30, clock=lambda: now[0])
    old = now_iso(lambda: now[0] - 31 * 86400)
    recent = now_iso(lambda: now[0] - 29 * 86400)
    results.record([row("old", when=old), row("recent", when=recent)])
    results.open_class("OLDCLS", "hash")
    now[0] += 31 * 86400  # a month later the class itself is as old
    results.record([row("new", class_code="NEWCLS")])  # the hourly purge runs on writing
    assert [r.student for r in results.answers()] == ["new"]
    assert results.class_record("OLDCLS") is None


def test_a_class_keeps_its_report_key_hash_and_when_it_ended(tmp_path):
    results = SqliteResults(tmp_path / "r.sqlite3")
    results.open_class("K7P3QX", "h1")
    assert results.class_record("K7P3QX").ended_at is None
    results.end_class("K7P3QX")
    record = results.class_record("K7P3QX")
    assert record.report_key_hash == "h1" and record.ended_at >= record.opened_at


def test_the_migrations_apply_once_in_order_and_a_newer_file_is_refused(tmp_path):
    path = tmp_path / "r.sqlite3"
    SqliteResults(path).close()
    SqliteResults(path).close()  # opened again: nothing applied twice
    with sqlite3.connect(path) as db:
        versions = [v for (v,) in db.execute("SELECT version FROM schema_migrations ORDER BY version")]
        assert versions == list(range(1, len(MIGRATIONS) + 1))
        db.execute("INSERT INTO schema_migrations VALUES (?, ?)", (len(MIGRATIONS) + 1, now_iso()))
    with pytest.raises(ResultsError, match="made by a newer version of this app"):
        SqliteResults(path)


def test_a_new_migration_changes_an_existing_file_and_keeps_its_answers(tmp_path, monkeypatch):
    path = tmp_path / "r.sqlite3"
    SqliteResults(path).record([row("s1")])
    monkeypatch.setattr(store_module, "MIGRATIONS", (*MIGRATIONS, "ALTER TABLE answers ADD COLUMN seconds REAL"))
    again = store_module.SqliteResults(path)
    assert again.schema_version() == len(MIGRATIONS) + 1 and [r.student for r in again.answers()] == ["s1"]


def test_a_file_that_is_not_a_database_is_refused_with_what_to_do(tmp_path):
    path = tmp_path / "r.sqlite3"
    path.write_bytes(b"not a database at all" * 100)
    with pytest.raises(ResultsError, match="cannot be used .* set VIZCORE_RESULTS to another file"):
        SqliteResults(path)


def test_the_dataclass_and_the_tables_columns_agree():
    assert list(row().record()) == list(COLUMNS)


@pytest.mark.parametrize("value", ["postgres-ish", "redis://localhost:6379/0", "sqlite:///", "results.txt"])
def test_a_wrong_results_setting_is_refused_in_one_line(value):
    with pytest.raises(VizError, match=f"^VIZCORE_RESULTS={value!r} is not a valid setting"):
        check_results({"VIZCORE_RESULTS": value})


def test_the_results_setting_names_a_file_or_the_cache_folders_default(tmp_path):
    assert results_path("") == default_path() and default_path().name == "results.sqlite3"
    assert results_path(f"sqlite://{tmp_path}/x.sqlite3") == tmp_path / "x.sqlite3"
    assert results_path(str(tmp_path / "x.db")) == tmp_path / "x.db"
    with pytest.raises(VizError, match="VIZCORE_RESULTS_DAYS='0' is not a valid setting"):
        check_results({"VIZCORE_RESULTS_DAYS": "0"})
