"""The class report and the exports (vizcore/results/report.py, export.py, figures.py) on answers written here: each
share, gain and most common wrong answer against a count made here, the suggestion of an authored and of an unauthored
wrong choice, a student's own result, and the CSV/JSON/HTML files."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest
from plotly.offline import get_plotlyjs

from vizcore.lessons.lesson import load_lessons
from vizcore.results.export import csv_text, json_text, report_html
from vizcore.results.figures import counts, distribution_text, score_distribution
from vizcore.results.report import GENERIC, class_report, normalised_gain, own_result, suggestion
from vizcore.results.store import COLUMNS, Row

LESSONS = {lesson.id: lesson for lesson in load_lessons()}
LESSON = LESSONS["attention"]
IDS = [item.id for item in LESSON.quiz.items]  # step1, step3, step4, step5


def answers(student: str, phase: str, right: list[bool], wrong: str = "0: [CLS]", nickname: str = "") -> list[Row]:
    return [Row("K7P3QX", "attention", phase, item, student, nickname, "R" if ok else wrong, ok,
                f"2026-11-29T10:00:0{i}.000000Z", "R", f"Question {item}?", "all-MiniLM-L6-v2")
            for i, (item, ok) in enumerate(zip(IDS, right))]


ROWS = (answers("a", "pre", [True, False, False, False]) + answers("b", "pre", [True, True, False, False])
        + answers("c", "pre", [False, False, False, False], wrong="2: the", nickname="Ada")
        + answers("a", "post", [True, True, True, False]) + answers("b", "post", [True, True, False, True])
        + answers("c", "post", [True, False, True, True], wrong="2: the"))


def test_each_questions_shares_and_gain_are_the_counts_of_its_answers():
    report = class_report("K7P3QX", LESSONS, ROWS)
    (lesson,) = report.lessons
    assert report.students == 3 and report.answers == 24 and report.nicknames == {"c": "Ada"}
    for question in lesson.questions:
        before = [r.correct for r in ROWS if r.question == question.question and r.phase == "pre"]
        after = [r.correct for r in ROWS if r.question == question.question and r.phase == "post"]
        assert question.before == (sum(before), 3) and question.after == (sum(after), 3)
        b, a = sum(before) / 3, sum(after) / 3
        assert question.gain == (None if b == 1 else pytest.approx((a - b) / (1 - b)))
    assert lesson.scores_before == (0, 1, 2) and lesson.scores_after == (3, 3, 3)
    assert lesson.mean_before == pytest.approx(3 / 12) and lesson.mean_after == pytest.approx(9 / 12)
    assert lesson.gain == pytest.approx((9 / 12 - 3 / 12) / (1 - 3 / 12))


def test_the_most_common_wrong_answer_is_counted_after_the_lesson_and_says_what_it_suggests():
    (lesson,) = class_report("K7P3QX", LESSONS, ROWS).lessons
    step3 = next(q for q in lesson.questions if q.question == "step3")  # after: c wrong with "2: the"
    assert (step3.wrong, step3.wrong_count, step3.wrong_phase) == ("2: the", 1, "post")
    assert step3.suggests == GENERIC["largest"]
    step5 = next(q for q in lesson.questions if q.question == "step5")  # authored: the scaling question
    assert suggestion(LESSON, "step5", "post", "with ÷√d_k").startswith("thinks dividing by √d_k sharpens")
    assert step5.link == "/lessons?lesson=attention&step=5&text=" + LESSON.sentence.replace(" ", "%20").replace(
        "'", "%27")


def test_normalised_gain_is_undefined_when_everyone_was_right_before():
    assert normalised_gain(1.0, 1.0) is None and normalised_gain(None, 0.5) is None
    assert normalised_gain(0.5, 0.75) == pytest.approx(0.5) and normalised_gain(0.5, 0.25) == pytest.approx(-0.5)


def test_a_students_own_result_lists_the_questions_missed_with_their_steps():
    mine = [r for r in ROWS if r.student == "a"]
    result = own_result(LESSON, "post", mine)
    assert (result.right, result.items) == (3, 4)
    (missed,) = result.missed
    assert (missed.question, missed.answer, missed.right, missed.step) == ("step5", "0: [CLS]", "R", 5)
    unanswered = own_result(LESSON, "post", mine[:5])  # the pre answers and the first post answer only
    assert unanswered.right == 1 and [m.answer for m in unanswered.missed] == ["", "", ""]


def test_the_scores_chart_counts_students_per_score_and_says_it_in_words():
    (lesson,) = class_report("K7P3QX", LESSONS, ROWS).lessons
    figure = score_distribution(lesson)
    assert [list(trace.y) for trace in figure.data] == [counts((0, 1, 2), 4), counts((3, 3, 3), 4)]
    assert list(figure.data[0].x) == ["0", "1", "2", "3", "4"]
    assert distribution_text(lesson) == ("Scores of 4. Before the lesson (3 students): 1 scored 0, 1 scored 1, 1 "
                                         "scored 2. After the lesson (3 students): 3 scored 3.")


def test_the_csv_has_one_row_per_answer_and_an_empty_store_the_header_alone():
    table = pd.read_csv(io.StringIO(csv_text(ROWS)))
    assert list(table.columns) == list(COLUMNS) and len(table) == len(ROWS)
    assert table["correct"].tolist() == [r.correct for r in ROWS]
    assert pd.to_datetime(table["answered_at"], utc=True).notna().all()
    assert csv_text([]) == ",".join(COLUMNS) + "\n"
    assert json.loads(json_text([])) == [] and json.loads(json_text(ROWS))[0]["class"] == "K7P3QX"


def test_the_html_report_is_offline_and_escapes_what_students_typed():
    rows = answers("d", "pre", [False] * 4, wrong="<script>alert(1)</script>", nickname="<b>x</b>")
    page = report_html(class_report("K7P3QX", LESSONS, rows))
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page and "&lt;b&gt;x&lt;/b&gt;" in page
    import re

    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", page)  # nothing fetched: plotly.js is in the file
    assert page.count(get_plotlyjs()) == 1
    assert page.count("<table>") == 1 and "normalised gain" in page
