"""A class that follows its teacher on the Lessons page (issue 34 C) in AppTest: ``?teach=1`` opens a class whose code
is shown in an element carrying ``data-room`` with the students' link and its QR code; a student's session opened
with ``?room=CODE`` (typed any case, with a dash) follows each of the teacher's moves, may go on their own and
rejoin; a student's checked answer is counted in the teacher's chart (its text alternative read here, every choice
of the question listed, drawn in the browser from the data checked here; in presenter mode the code in a corner and the
chart in the sidebar); *Start a class* opens
one at the step on screen; a wrong, unknown or ended code gets the store's message and the box to type another while
the lessons stay usable; the teacher's secret is on no page. Two AppTest sessions of one process share the server's
store (``vizcore.lessons.stores.server_rooms``), as two browsers on one server do."""

from __future__ import annotations

import json
import re

import pytest

from tests.app.test_lessons import PAGE, marker, param
from ui.lessons.listen import chart_text
from ui.lessons.room import student_link
from vizcore.lessons.lesson import load_lessons
from vizcore.lessons.rooms import ALPHABET, CODE_LENGTH, secret_hash, watch_token

LESSONS = {lesson.id: lesson for lesson in load_lessons()}


def page_text(at) -> str:
    """Everything the session sent to its page: every element's protobuf, as text."""
    found = []

    def walk(node) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None:
            found.append(str(proto))
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    return "\n".join(found)


def room_code(at) -> str:
    codes = [c for h in at.get("html") for c in re.findall(r'data-room="([^"]+)"', h.proto.body)]
    assert len(set(codes)) == 1, codes
    return codes[0]


def components(at, name: str) -> list[dict]:
    """The data each ``st.components.v2`` component called ``name`` was drawn with (what its JavaScript reads)."""
    found = []

    def walk(node) -> None:
        proto = getattr(node, "proto", None)
        if getattr(proto, "component_name", None) == name:
            found.append(json.loads(proto.json))
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    return found


def chart(at) -> dict:
    """The teacher's chart of the answers: the data the browser draws it from (ui/lessons/listen.py)."""
    (data,) = components(at, "lessons.class_answers")
    return data


def errors(at) -> list[str]:
    return [e.value for e in at.error]


@pytest.fixture
def on_the_network():
    """The server as `make serve` starts it, on every interface (.streamlit/config.toml says localhost, `make run`'s):
    the teacher's page offers the students' link and QR code."""
    from streamlit import config

    before = config.get_option("server.address")
    config.set_option("server.address", "0.0.0.0")
    yield
    config.set_option("server.address", before)


def test_a_class_follows_its_teacher_and_a_student_may_go_on_their_own(new_app, on_the_network):
    teacher = new_app(PAGE, teach="1", lesson="attention", step="2").run()
    assert not teacher.exception and marker(teacher) == ("attention", 2)
    code = room_code(teacher)
    assert len(code) == CODE_LENGTH and set(code) <= set(ALPHABET)
    assert any(f"room={code}" in m.value for m in teacher.markdown)
    assert any(re.search(f'alt="QR code for http[^"]*room={code}"', h.proto.body) for h in teacher.get("html"))
    assert param(teacher, "teach") is None  # a reload is a new session: it does not open a second class

    student = new_app(PAGE, room=f"{code[:3].lower()}-{code[3:]}").run()  # as typed from the screen
    assert not student.exception and marker(student) == ("attention", 2) and param(student, "room") == code
    assert any("Following your teacher" in c.value for c in student.caption)

    teacher.button(key="lessons.next").click().run()  # a button
    assert marker(student.run()) == ("attention", 3)
    teacher.selectbox(key="lessons.picker.attention").set_value("heads").run()  # the picker: another lesson
    assert marker(student.run()) == ("heads", 1)
    teacher.text_input(key="lessons.text").input("The cat sat on the mat.").run()  # a typed sentence
    student.run()
    assert student.text_input(key="lessons.text").value == "The cat sat on the mat." and marker(student) == ("heads", 1)

    secret = teacher.session_state["lessons.class_secret"]
    assert len(secret) >= 24 and secret not in page_text(teacher) and secret not in page_text(student)
    assert secret not in str(teacher.query_params) and secret not in str(student.query_params)

    student.button(key="lessons.next").click().run()  # on their own: the teacher's next move does not pull them
    teacher.session_state["lessons.step"] = 3  # as a presenter's key does
    teacher.run()
    assert marker(student.run()) == ("heads", 2)
    assert any("Your teacher is at 2. Many heads" in i.value.replace("\\", "") and "step 3" in i.value
               for i in student.info), [i.value for i in student.info]
    student.button(key="lessons.rejoin").click().run()
    assert marker(student) == ("heads", 3) and not student.info
    teacher.button(key="lessons.end_class").click().run()
    assert any(f"The class {code} has ended" in s.value for s in teacher.success)
    student.run()
    assert any(code in e and "has ended" in e for e in errors(student))
    assert any(code in t.value and "has ended" in t.value for t in student.toast)  # seen wherever they scrolled
    assert marker(student) == ("heads", 3) and param(student, "room") is None  # the lessons go on, alone


def test_the_teachers_chart_counts_the_students_answers_with_every_choice(new_app):
    teacher = new_app(PAGE, teach="1", lesson="attention", step="3").run()
    code = room_code(teacher)
    choices = teacher.radio(key="lessons.choice.attention.3").options
    drawn = chart(teacher)
    assert drawn["choices"] == list(choices) and drawn["counts"] == {}
    assert chart_text(drawn["choices"], drawn["counts"]) == "Answers: " + "; ".join(f"{c}: 0 answers" for c in choices)
    secret = teacher.session_state["lessons.class_secret"]
    assert drawn["url"] == f"/api/class/answers?room={code}&lesson=attention&step=3"
    assert drawn["token"] == watch_token(secret_hash(secret)) and secret not in json.dumps(drawn)
    picks = [choices[1], choices[0], choices[1]]
    for pick in picks:
        student = new_app(PAGE, room=code).run()
        student.radio(key="lessons.choice.attention.3").set_value(pick).run()
        student.button(key="lessons.check").click().run()
        assert any("went to your teacher" in c.value for c in student.caption)
    teacher.run()
    expected = {c: picks.count(c) for c in choices}
    drawn = chart(teacher)
    assert chart_text(drawn["choices"], drawn["counts"]) == "Answers: " + "; ".join(
        f"{c}: {n} answer{'' if n == 1 else 's'}" for c, n in expected.items())
    teacher.session_state["shared.present"] = True  # presenter mode: the code in a corner, the chart in the sidebar
    teacher.run()
    assert room_code(teacher) == code and marker(teacher) == ("attention", 3)
    (in_sidebar,) = [c for c in teacher.sidebar if getattr(getattr(c, "proto", None), "component_name", "")
                     == "lessons.class_answers"]
    assert json.loads(in_sidebar.proto.json)["counts"] == {c: n for c, n in expected.items() if n}


def test_a_following_student_listens_to_the_class_channel_and_nothing_ticks(new_app):
    teacher = new_app(PAGE, teach="1", lesson="attention", step="2").run()
    code = room_code(teacher)
    student = new_app(PAGE, room=code).run()
    (ears,) = components(student, "lessons.follow")
    assert ears == {"url": f"/api/class/events?room={code}", "moves": 0}
    teacher.button(key="lessons.next").click().run()
    (ears,) = components(student.run(), "lessons.follow")
    assert ears["moves"] == 1 and marker(student) == ("attention", 3)
    assert not components(teacher, "lessons.follow")  # the teacher follows no one


def test_a_wrong_unknown_or_ended_code_is_said_and_another_can_be_typed(new_app):
    bad = new_app(PAGE, room="0O1I00").run()
    assert not bad.exception and any("is not a class code" in e for e in errors(bad))
    assert marker(bad) == (next(iter(LESSONS)), 1) and param(bad, "room") is None  # the lessons stay usable
    bad.text_input(key="lessons.join_code").input("ZZZZZZ")
    bad.button(key="FormSubmitter:lessons-join-Join the class").click().run()
    assert any("There is no class with the code ZZZZZZ" in e for e in errors(bad)), errors(bad)

    teacher = new_app(PAGE, teach="1", lesson="masks", step="2").run()
    code = room_code(teacher)
    bad.text_input(key="lessons.join_code").input(f" {code.lower()} ")
    bad.button(key="FormSubmitter:lessons-join-Join the class").click().run()
    assert not errors(bad) and marker(bad) == ("masks", 2) and param(bad, "room") == code

    alone = new_app(PAGE, lesson="masks", step="3").run()  # the page's own button starts a class at its step
    alone.button(key="lessons.start_class").click().run()
    started = room_code(alone)
    assert started != code and marker(new_app(PAGE, room=started).run()) == ("masks", 3)


def test_the_students_link_is_the_teachers_address_or_this_computers_network_address():
    assert student_link("https://class.example.org/app/lessons", "ABC234", "10.0.0.7") == (
        "https://class.example.org/app/lessons?room=ABC234", None)
    link, note = student_link("http://localhost:8501/lessons", "ABC234", "192.168.1.20")
    assert link == "http://192.168.1.20:8501/lessons?room=ABC234" and "192.168.1.20" in note and "localhost" in note
    link, note = student_link("http://127.0.0.1:8501/lessons/", "ABC234", None)
    assert link == "http://127.0.0.1:8501/lessons?room=ABC234" and "no network address" in note
    assert student_link(None, "ABC234", "192.168.1.20", 9000)[0] == "http://192.168.1.20:9000/lessons?room=ABC234"


def test_the_chart_lists_every_choice_then_answers_from_other_choices():
    """A student whose own sentence or query token gave other choices: their answer is listed after the question's."""
    from vizcore.lessons.figures import answer_counts, answers_text

    rows = answer_counts(["2: animal", "10: it", "5: t"], {"10: it": 2, "3: didn": 1})
    assert rows == [("2: animal", 0), ("10: it", 2), ("5: t", 0), ("3: didn", 1)]
    assert answers_text(rows) == "2: animal: 0 answers; 10: it: 2 answers; 5: t: 0 answers; 3: didn: 1 answer"


@pytest.mark.parametrize("address, local", [(None, False), ("", False), ("0.0.0.0", False), ("::", False),
                                            ("localhost", True), ("127.0.0.1", True), ("::1", True),
                                            ("[::1]", True), ("192.168.1.20", False), ("class.example.org", False)])
def test_a_server_on_localhost_only_is_told_apart(address, local):
    from ui.lessons.room import listens_on_this_computer_only

    assert listens_on_this_computer_only(address) is local


def test_under_make_run_the_teacher_is_told_students_cannot_reach_the_server(new_app):
    """`make run` listens on localhost: no link or QR code as if they worked, and how to start `make serve`."""
    from streamlit import config

    before = config.get_option("server.address")
    config.set_option("server.address", "localhost")
    try:
        teacher = new_app(PAGE, teach="1", lesson="attention", step="3").run()
    finally:
        config.set_option("server.address", before)
    assert not teacher.exception and room_code(teacher)
    assert any("Students cannot reach this server" in w.value and "make serve" in w.value for w in teacher.warning)
    assert not any("QR code for" in h.proto.body for h in teacher.get("html"))
    assert not any("Students open" in m.value for m in teacher.markdown)
