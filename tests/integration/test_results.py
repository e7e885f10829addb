"""Results that outlive the server (issue 50 B): a process killed with SIGKILL loses no answer it said was saved (the
SQLite file; PostgreSQL's: tests/integration/test_results_postgres.py), and every lesson's quizzes on the embedded
model ask the same ideas on different items."""

from __future__ import annotations

import os
import signal

import pytest

from tests.support.results_contract import check_every_quiz_said_saved_is_stored, killed_writer
from vizcore.lessons.lesson import load_lessons
from vizcore.results.store import SqliteResults


def test_a_server_killed_with_sigkill_loses_no_answer_it_said_was_saved(tmp_path):
    path = tmp_path / "r.sqlite3"
    said, _ = killed_writer(str(path), lambda writer: os.kill(writer.pid, signal.SIGKILL))
    check_every_quiz_said_saved_is_stored(SqliteResults(path).answers(), said)


LESSONS = {lesson.id: lesson for lesson in load_lessons()}


def _figure_key(figure) -> str:
    """What a figure shows, as text: plotly's JSON, altair's spec, or an HtmlFigure's fields (its dataclass repr)."""
    if hasattr(figure, "to_json"):
        return figure.to_json()
    return repr(figure.to_dict()) if hasattr(figure, "to_dict") else repr(figure)


def _asked_key(one) -> tuple:
    figures = tuple(_figure_key(f) for f in one.view.figures)
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
