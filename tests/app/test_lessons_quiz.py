"""The quizzes on the Lessons page and the Class results page in AppTest (issue 50): a learner alone takes the quiz
before and after a lesson and each answer is stored with its verdict (the right answer computed here with the quiz's
answer functions on the embedded model); an unanswered question or a store that fails loses nothing of the form; a
teacher opens and closes a class's quiz, the students' page shows it and their scores reach the teacher's chart; the
report opens with the class's report key only. AppTest sessions of one process share the server's stores, as
browsers on one server do."""

from __future__ import annotations

import html

import pytest

from tests.app.test_lessons import PAGE, marker
from tests.app.test_lessons_room import room_code
from vizcore.lessons.cli import LocalSource
from vizcore.lessons.kinds import KINDS
from vizcore.lessons.lesson import load_lessons
from vizcore.lessons.quiz import asked
from vizcore.lessons.rooms import QUIZ_STEPS
from vizcore.lessons.stores import server_rooms
from vizcore.model.catalog import DEFAULT_MODEL
from vizcore.results.store import ResultsError, SqliteResults
from vizcore.results.stores import server_results

LESSON = next(lesson for lesson in load_lessons() if lesson.id == "attention")
RESULTS = "pages/results.py"


@pytest.fixture(scope="module")
def expected():
    """Each phase's questions and right answers, computed here on the embedded model with the quiz's own items."""
    source = LocalSource(DEFAULT_MODEL, "cpu")
    return {phase: asked(LESSON, phase, lambda text, kind, params: KINDS[kind].build(source, text, params))
            for phase in ("pre", "post")}


def radio_key(phase: str, item_id: str) -> str:
    return f"lessons.quiz.attention.{phase}.{item_id}"


def submit(at):
    (button,) = [b for b in at.button if b.label == "Submit my answers"]
    return button.click().run()


def fill(at, phase: str, items, right: set[str]) -> dict[str, str]:
    chosen = {}
    for item in items:
        wrong = next(c for c in item.answer.choices if c != item.answer.right)
        chosen[item.id] = item.answer.right if item.id in right else wrong
        at.radio(key=radio_key(phase, item.id)).set_value(chosen[item.id])
    return chosen


def stored(at, phase: str) -> dict[str, tuple[str, bool]]:
    if "lessons.student" not in at.session_state:  # nothing was saved by this session
        return {}
    student = at.session_state["lessons.student"]
    return {row.question: (row.answer, row.correct) for row in server_results().student_answers(student)
            if row.phase == phase and row.lesson == "attention"}


def test_a_learner_alone_takes_both_quizzes_and_each_answer_is_stored_with_its_verdict(new_app, expected):
    at = new_app(PAGE, lesson="attention", quiz="pre").run()
    assert not at.exception
    shown = [r.key for r in at.radio]
    assert shown == [radio_key("pre", item.id) for item in expected["pre"]]
    for item in expected["pre"]:
        assert list(at.radio(key=radio_key("pre", item.id)).options) == item.answer.choices
    chosen = fill(at, "pre", expected["pre"], right={"step1"})
    at.text_input(key="lessons.nickname").set_value("Ada")
    submit(at)
    assert stored(at, "pre") == {i: (c, c == e.answer.right) for (i, c), e in zip(chosen.items(), expected["pre"])}
    assert any(m.value == "### Your score: 1 of 4" for m in at.markdown)
    at.button(key="lessons.quiz_back").click().run()
    assert marker(at) == ("attention", 1)
    at.session_state["lessons.quiz"] = "post"
    at.run()
    assert [r.key for r in at.radio] == [radio_key("post", item.id) for item in expected["post"]]
    fill(at, "post", expected["post"], right={"step1", "step3", "step4"})
    submit(at)
    text = "\n".join(m.value for m in at.markdown)
    assert "### Your score: 3 of 4" in text and "Before the lesson: 1 of 4." in text
    assert "lesson=attention&step=5" in html.unescape(text)  # the one missed: the step that teaches it


def test_an_unanswered_question_stores_nothing_and_keeps_the_other_answers(new_app, expected):
    at = new_app(PAGE, lesson="attention", quiz="pre").run()
    chosen = fill(at, "pre", expected["pre"][:3], right=set())
    submit(at)
    assert any("question 4 has no answer yet" in w.value for w in at.warning)
    assert stored(at, "pre") == {}
    assert {i: at.radio(key=radio_key("pre", i)).value for i in chosen} == chosen


def test_a_store_that_cannot_save_says_so_and_the_answers_stay_in_the_form(new_app, expected, monkeypatch):
    def refuse(self, rows):
        raise ResultsError("The results could not be saved (database is locked). Try again in a moment.")

    at = new_app(PAGE, lesson="attention", quiz="pre").run()
    chosen = fill(at, "pre", expected["pre"], right=set())
    monkeypatch.setattr(SqliteResults, "record", refuse)
    submit(at)
    assert any("Your answers were not saved" in e.value and "submit again" in e.value for e in at.error)
    assert {i: at.radio(key=radio_key("pre", i)).value for i in chosen} == chosen
    monkeypatch.undo()
    submit(at)
    assert set(stored(at, "pre")) == set(chosen)


def test_a_teacher_opens_a_class_quiz_the_students_take_it_and_the_teacher_closes_it(new_app, expected):
    teacher = new_app(PAGE, teach="1", lesson="attention", step="1").run()
    code = room_code(teacher)
    teacher.button(key="lessons.open_class_quiz_pre").click().run()
    assert any('data-teacher="1"' in h.proto.body for h in teacher.get("html"))
    student = new_app(PAGE, room=code).run()
    assert [r.key for r in student.radio] == [radio_key("pre", item.id) for item in expected["pre"]]
    fill(student, "pre", expected["pre"], right={"step1", "step3"})
    submit(student)
    rows = server_results().answers(code)
    assert {(r.phase, r.question, r.correct) for r in rows} == {
        ("pre", item.id, item.id in {"step1", "step3"}) for item in expected["pre"]}
    assert server_rooms().tally(code, "attention", QUIZ_STEPS["pre"]) == {"2 of 4": 1}
    teacher.button(key="lessons.close_class_quiz").click().run()
    assert marker(teacher) == ("attention", 1)
    student.run()  # the channel's push asks for this run in the browser
    assert marker(student) == ("attention", 1) and not student.radio(key="lessons.choice.attention.1").value


def test_the_report_opens_with_the_class_key_only(new_app, expected):
    teacher = new_app(PAGE, teach="1", lesson="attention", step="1").run()
    code = room_code(teacher)
    code_, key = teacher.session_state["lessons.class_report"]
    assert code_ == code and key not in str(teacher.query_params)
    teacher.button(key="lessons.open_class_quiz_pre").click().run()
    student = new_app(PAGE, room=code).run()
    fill(student, "pre", expected["pre"], right={"step1"})
    submit(student)
    teacher.switch_page(RESULTS).run()
    assert any(key in i.value for i in teacher.info) and teacher.header[0].value.startswith(f"Class {code}")
    assert "1 students · 4 answers" in "\n".join(m.value for m in teacher.markdown)
    someone = new_app(RESULTS).run()  # another browser: a student with the code, or a guess
    someone.text_input(key="results.code").set_value(code)
    someone.text_input(key="results.key").set_value("AAAA-BBBB-CCCC")
    (button,) = [b for b in someone.button if b.label == "Open the report"]
    button.click().run()
    assert any("No report opens" in e.value for e in someone.error) and not someone.header
    someone.text_input(key="results.code").set_value(code.lower())
    someone.text_input(key="results.key").set_value(key.lower().replace("-", " "))  # as a person types it
    (button,) = [b for b in someone.button if b.label == "Open the report"]
    button.click().run()
    assert someone.header[0].value.startswith(f"Class {code}") and not any(key in i.value for i in someone.info)


def test_a_bad_quiz_link_or_class_code_gets_a_message_and_loses_nothing(new_app):
    at = new_app(PAGE, lesson="attention", step="2", quiz="during").run()
    assert not at.exception and marker(at) == ("attention", 2)  # the step, not a quiz
    assert any("quiz" in w.value and "pre, post" in w.value for w in at.warning)
    someone = new_app(RESULTS).run()
    someone.text_input(key="results.code").set_value("<script>x</script>")
    someone.text_input(key="results.key").set_value("k")
    (button,) = [b for b in someone.button if b.label == "Open the report"]
    button.click().run()
    assert not someone.exception and any("is not a class code" in e.value for e in someone.error)
    assert someone.text_input(key="results.code").value == "<script>x</script>"  # what was typed stays
