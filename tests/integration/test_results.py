"""Results that outlive the server (issue 50 B): a process killed with SIGKILL loses no answer it said was saved, and
every lesson's quizzes on the embedded model ask the same ideas on different items."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from vizcore.lessons.lesson import load_lessons
from vizcore.results.store import SqliteResults

WRITER = textwrap.dedent("""
    import sys
    from vizcore.results.store import Row, SqliteResults, now_iso
    results = SqliteResults(sys.argv[1])
    for i in range(100000):
        results.record([Row("K7P3QX", "attention", "pre", f"q{j}", f"s{i}", "", "a", True, now_iso())
                        for j in range(5)])
        print(i, flush=True)  # said only once stored: what a student would have seen as "saved"
""")


def test_a_server_killed_with_sigkill_loses_no_answer_it_said_was_saved(tmp_path):
    path = tmp_path / "r.sqlite3"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": os.getcwd()})
    acknowledged = -1
    for line in writer.stdout:
        acknowledged = int(line)
        if acknowledged >= 40:
            break
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    stored = SqliteResults(path).answers()
    students = {r.student for r in stored}
    assert {f"s{i}" for i in range(acknowledged + 1)} <= students
    assert len(stored) % 5 == 0  # a quiz is stored whole or not at all


LESSONS = {lesson.id: lesson for lesson in load_lessons()}


def _asked_key(one) -> tuple:
    figures = tuple(f.to_json() if hasattr(f, "to_json") else repr(f.to_dict()) for f in one.view.figures)
    return one.text, tuple(one.answer.choices), one.answer.right, one.answer.reason, figures


@pytest.mark.parametrize("lesson_id", list(LESSONS))
def test_each_quiz_on_the_embedded_model_asks_each_idea_again_on_another_item(lesson_id):
    from vizcore.lessons.cli import LocalSource
    from vizcore.lessons.kinds import KINDS
    from vizcore.lessons.quiz import asked
    from vizcore.model.catalog import DEFAULT_MODEL

    source = LocalSource(DEFAULT_MODEL, "cpu")
    lesson = LESSONS[lesson_id]
    pre, post = (asked(lesson, phase, lambda text, kind, params: KINDS[kind].build(source, text, params))
                 for phase in ("pre", "post"))
    assert [one.id for one in pre] == [one.id for one in post] == [item.id for item in lesson.quiz.items]
    for before, after in zip(pre, post):
        assert before.step == after.step
        assert _asked_key(before) != _asked_key(after), f"{lesson_id} {before.id}: the same item twice"
        for one in (before, after):
            assert one.answer.right in one.answer.choices and len(set(one.answer.choices)) >= 2
            assert one.answer.reason.strip()
