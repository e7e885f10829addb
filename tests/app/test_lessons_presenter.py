"""Presenter mode on the Lessons page in AppTest (issue 34 B): ``?present=1`` shows the step alone (its title as the
page's heading, no task, the lesson picker and sentence in the folded sidebar) with the key listener mounted and a
presenter id in the link; the keys' toggle removes the listener; a key's action moves the session's lesson and step
as vizcore.lessons.course says; the speaker notes window (``?notes=1&presenter=ID``) shows the presenter's step and
follows it, with the question's answer computed here from the run's attention."""

from __future__ import annotations

import numpy as np

from tests.app.test_lessons import PAGE, marker, param
from ui.lessons.presenter import apply_action
from vizcore.lessons.lesson import load_lessons

LESSONS = {lesson.id: lesson for lesson in load_lessons()}
COMPONENT = "lessons.presenter_keys"


def presenting(new_app, **params):
    """The Lessons page in presenter mode (as the sidebar's toggle or ?present=1 sets it: a page run alone in AppTest
    has no sidebar to read the link's present=1)."""
    at = new_app(PAGE, **params)
    at.session_state["shared.present"] = True
    return at.run()


def listeners(at) -> int:
    return sum(COMPONENT in element.proto.component_name for element in at.get("bidi_component"))


def test_presenter_mode_shows_the_step_alone_with_its_keys_and_the_toggle_removes_them(new_app):
    at = presenting(new_app, lesson="attention", step="3")
    assert not at.exception and marker(at) == ("attention", 3)
    step = LESSONS["attention"].steps[2]
    assert [t.value for t in at.title] == [f"3. {step.title}"]  # the step's title is the heading, nothing above
    assert not any("Your turn" in m.value for m in at.markdown)  # the task is in the speaker notes
    assert at.sidebar.selectbox(key="lessons.picker.attention").value == "attention"
    assert listeners(at) == 1
    presenter = param(at, "presenter")
    assert presenter and len(presenter) >= 12 and param(at, "present") == "1"
    at.toggle(key="lessons.keys").set_value(False).run()
    assert listeners(at) == 0 and marker(at) == ("attention", 3)
    assert param(at, "presenter") == presenter  # one presenter for the session: its notes window keeps following

    plain = new_app(PAGE, lesson="attention", step="3").run()  # without present=1: the page as it was, no keys
    assert listeners(plain) == 0 and plain.title[0].value.startswith("Lessons")
    assert any("Your turn" in m.value for m in plain.markdown) and param(plain, "presenter") is None


def test_a_keys_action_moves_through_the_course_and_leave_is_not_a_move():
    ids = list(LESSONS)
    last = len(LESSONS[ids[0]].steps)
    state = {"lessons.lesson": ids[0], "lessons.step": last}
    assert apply_action(state, LESSONS, "next") == (ids[1], 1)
    assert apply_action({"lessons.lesson": ids[1], "lessons.step": 1}, LESSONS, "previous") == (ids[0], last)
    assert apply_action(state, LESSONS, "first") == (ids[0], 1)
    assert apply_action({}, LESSONS, "last") == (ids[0], last)  # no position yet: the course's start
    assert apply_action(state, LESSONS, "leave") is None


def test_the_speaker_notes_window_follows_the_presenter(new_app):
    from ui.state import get_run
    from vizcore.model.catalog import DEFAULT_MODEL

    presenter = presenting(new_app, lesson="attention", step="3")
    presenter_id = param(presenter, "presenter")
    notes = new_app(PAGE, notes="1", presenter=presenter_id).run()
    assert not notes.exception
    lesson = LESSONS["attention"]
    step = lesson.steps[2]
    run = get_run(DEFAULT_MODEL, "auto", lesson.sentence, None)
    query = run.tokens.index(step.params["query"])
    row = run.attention[step.params["layer"] - 1, step.params["head"] - 1, query]
    right = f"{int(np.argmax(row))}: {run.tokens[int(np.argmax(row))]}"
    text = " ".join(m.value.replace("\\", "") for m in notes.markdown)
    assert step.claim in text and step.task in text and f"Answer: {right}" in text
    assert any("data-step=\"3\"" in h.proto.body for h in notes.get("html"))

    presenter.session_state["lessons.step"] = 4  # as a key press does (lessons.step)
    presenter.run()
    notes.run()
    assert any('data-lesson="attention" data-step="4"' in h.proto.body for h in notes.get("html"))

    lost = new_app(PAGE, notes="1").run()  # no presenter id: says how to open it
    assert any("needs its presenter's link" in e.value for e in lost.error)
