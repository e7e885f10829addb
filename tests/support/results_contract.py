"""The results store's contract (vizcore/results/store.py), checked the same way on every store: SQLite in the unit
tier (tests/unit/test_results_store.py), PostgreSQL in the integration tier
(tests/integration/test_results_postgres.py).

Each check in ``CHECKS`` takes ``fresh() -> Opener``: a new, empty place for a store (a file, a database); calling the
``Opener`` (``opener(retention_days=..., clock=...)``) opens a store there, as often as a check needs, as a server
started again or several replicas do. ``killed_writer`` is the SIGKILL test's writer process, on any store's address.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Callable, Protocol

import pytest

from vizcore.results import store as store_module
from vizcore.results.store import MIGRATIONS, ResultsError, Row, SqlResults, now_iso

ROOT = Path(__file__).resolve().parents[2]


class Opener(Protocol):
    def __call__(self, retention_days: float = 30.0, clock: Callable[[], float] = ...) -> SqlResults: ...


def row(student="s1", answer="a", question="step1", phase="pre", correct=True, when=None, class_code="K7P3QX",
        nickname="") -> Row:
    return Row(class_code, "attention", phase, question, student, nickname, answer, correct, when or now_iso(), "a",
               "Which key?", "minilm")


def answers_survive_closing_and_opening_the_store_again(fresh: Callable[[], Opener]) -> None:
    opener = fresh()
    first = opener()
    first.record([row("s1"), row("s2", "b", correct=False)])
    first.close()
    again = opener()
    stored = again.answers("K7P3QX")
    assert [(r.student, r.answer, r.correct) for r in stored] == [("s1", "a", True), ("s2", "b", False)]
    assert stored[0] == row("s1", when=stored[0].answered_at)  # every field as given
    assert again.schema_version() == len(MIGRATIONS)


def a_students_last_answer_to_a_question_counts_once(fresh: Callable[[], Opener]) -> None:
    results = fresh()()
    results.record([row("s1", "a")])
    results.record([row("s1", "b", correct=False)])
    results.record([row("s1", "c", phase="post")])
    assert [(r.phase, r.answer, r.correct) for r in results.answers()] == [("pre", "b", False), ("post", "c", True)]


def a_quizs_answers_come_back_in_the_order_given_and_by_lesson_class_and_student(fresh: Callable[[], Opener]) -> None:
    results = fresh()()
    when = now_iso()  # one quiz's answers share their time: the order given decides
    questions = ["step9", "step10", "step2", "step1"]
    results.record([row("s1", question=q, when=when) for q in questions])
    results.record([row("s2", question="step1", class_code="OTHERC"), row("s1", question="step3", phase="post")])
    assert [r.question for r in results.answers("K7P3QX", "attention") if r.phase == "pre"] == questions
    assert [r.question for r in results.answers("OTHERC")] == ["step1"]
    assert results.answers("K7P3QX", "masks") == [] and results.answers("NOSUCH") == []
    assert [r.question for r in results.student_answers("s1")] == [*questions, "step3"]
    assert results.student_answers("nobody") == []


def a_bad_row_stores_nothing_of_its_quiz(fresh: Callable[[], Opener]) -> None:
    results = fresh()()
    with pytest.raises(ResultsError, match="phase is one of pre, post, step"):
        results.record([row("s1"), row("s2", phase="during")])
    with pytest.raises(ResultsError, match="nickname has at most 40"):
        results.record([row("s1"), row("s2", nickname="x" * 41)])
    with pytest.raises(ResultsError, match="cannot hold the character NUL"):
        results.record([row("s1"), row("s2", nickname="a\x00b")])
    results.record([])
    assert results.answers() == []


def answers_older_than_the_retention_are_deleted_and_recent_ones_kept(fresh: Callable[[], Opener]) -> None:
    now = [1_800_000_000.0]
    opener = fresh()
    results = opener(retention_days=30, clock=lambda: now[0])
    old = now_iso(lambda: now[0] - 31 * 86400)
    recent = now_iso(lambda: now[0] - 29 * 86400)
    results.record([row("old", when=old), row("recent", when=recent)])
    results.open_class("OLDCLS", "hash")
    assert results.purge() == 1
    now[0] += 31 * 86400  # a month later the class itself is as old
    results.record([row("new", class_code="NEWCLS", when=now_iso(lambda: now[0]))])  # the hourly purge on writing
    assert [r.student for r in results.answers()] == ["new"]
    assert results.class_record("OLDCLS") is None
    results.record([row("two days old", when=now_iso(lambda: now[0] - 2 * 86400))])
    assert [r.student for r in opener(retention_days=1, clock=lambda: now[0]).answers()] == ["new"]  # at open too


def a_class_keeps_its_report_key_hash_and_when_it_ended(fresh: Callable[[], Opener]) -> None:
    results = fresh()()
    assert results.class_record("K7P3QX") is None
    results.open_class("K7P3QX", "h1")
    assert results.class_record("K7P3QX").ended_at is None
    results.end_class("K7P3QX")
    record = results.class_record("K7P3QX")
    assert record.report_key_hash == "h1" and record.ended_at >= record.opened_at
    results.end_class("K7P3QX")  # ending it again keeps the first end
    assert results.class_record("K7P3QX") == record
    results.open_class("K7P3QX", "h2")  # the code opened again: a new key, not ended
    again = results.class_record("K7P3QX")
    assert again.report_key_hash == "h2" and again.ended_at is None


ADDED_COLUMN = "ALTER TABLE answers ADD COLUMN seconds REAL"  # fails if applied twice: the column is there


def the_migrations_apply_once_and_a_newer_store_is_refused(fresh: Callable[[], Opener]) -> None:
    opener = fresh()
    opener().record([row("s1")])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(store_module, "MIGRATIONS", (*MIGRATIONS, ADDED_COLUMN))
        newer = opener()  # a new migration changes the store and keeps its answers
        assert newer.schema_version() == len(MIGRATIONS) + 1 and [r.student for r in newer.answers()] == ["s1"]
        opener().close()  # opened again: nothing applied twice
    with pytest.raises(ResultsError, match=f"has schema version {len(MIGRATIONS) + 1}, made by a newer version of "
                                           f"this app \\(this one knows {len(MIGRATIONS)}\\): update the app"):
        opener()


def replicas_starting_at_once_apply_each_migration_once(fresh: Callable[[], Opener]) -> None:
    opener = fresh()
    start, opened, failed = threading.Barrier(4), [], []

    def replica() -> None:
        start.wait()
        try:
            opened.append(opener())
        except Exception as error:  # noqa: BLE001 - said below, with what it was
            failed.append(error)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(store_module, "MIGRATIONS", (*MIGRATIONS, ADDED_COLUMN))
        threads = [threading.Thread(target=replica) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert not failed, failed
    assert [store.schema_version() for store in opened] == [len(MIGRATIONS) + 1] * 4


def concurrent_quizzes_from_sessions_and_replicas_are_all_stored(fresh: Callable[[], Opener]) -> None:
    """Thirty students submit at once (Streamlit runs each session in its own thread) on two replicas."""
    opener = fresh()
    replicas = [opener(), opener()]
    start = threading.Barrier(30)

    def student(i: int) -> None:
        start.wait()
        replicas[i % 2].record([row(f"s{i}", question=f"step{j}") for j in range(4)])

    threads = [threading.Thread(target=student, args=(i,)) for i in range(30)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    counts = Counter(r.student for r in replicas[0].answers())
    assert counts == {f"s{i}": 4 for i in range(30)}


CHECKS = [answers_survive_closing_and_opening_the_store_again, a_students_last_answer_to_a_question_counts_once,
          a_quizs_answers_come_back_in_the_order_given_and_by_lesson_class_and_student,
          a_bad_row_stores_nothing_of_its_quiz, answers_older_than_the_retention_are_deleted_and_recent_ones_kept,
          a_class_keeps_its_report_key_hash_and_when_it_ended, the_migrations_apply_once_and_a_newer_store_is_refused,
          replicas_starting_at_once_apply_each_migration_once,
          concurrent_quizzes_from_sessions_and_replicas_are_all_stored]


# ---- a writer killed mid-stream ----

WRITER = """
import sys
from vizcore.results.store import ResultsError, Row, now_iso
from vizcore.results.stores import open_results
results = open_results(sys.argv[1])
for i in range(100000):
    try:
        results.record([Row("K7P3QX", "attention", "pre", f"q{j}", f"s{i}", "", "a", True, now_iso())
                        for j in range(5)])
    except ResultsError as error:
        print("error", error, flush=True)
        break
    print(i, flush=True)  # said only once stored: what a student would have seen as "saved"
"""


def killed_writer(address: str, kill: Callable[[subprocess.Popen], None],
                  after: int = 40) -> tuple[set[str], list[str]]:
    """A process records quizzes of five answers into the store at ``address`` (``VIZCORE_RESULTS``'s forms), saying
    each one saved; once it has said ``after``, ``kill(writer)``. Returns the students of every quiz it said saved
    (the lines read after the kill too: said before it) and what else it said."""
    writer = subprocess.Popen([sys.executable, "-c", WRITER, address], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    said: set[str] = set()
    other: list[str] = []

    def heard(line: str) -> None:
        if line.strip().isdigit():
            said.add(f"s{int(line)}")
        else:
            other.append(line.strip())

    try:
        for line in writer.stdout:
            heard(line)
            if len(said) > after or other:
                break
        kill(writer)
        for line in writer.stdout:
            heard(line)
    finally:
        if writer.poll() is None:
            writer.kill()
        writer.wait()
        errors = writer.stderr.read()
    assert len(said) > after, f"the writer stopped early: {errors or other}"
    return said, other


def check_every_quiz_said_saved_is_stored(stored: list[Row], said: set[str]) -> None:
    counts = Counter(r.student for r in stored)
    assert said <= set(counts), f"answers said saved are lost: {sorted(said - set(counts))}"
    assert set(counts.values()) == {5}, "a quiz is stored whole or not at all"
