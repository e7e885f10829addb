"""The Lessons page's state, link and cached views.

The current lesson and step live in ``lessons.lesson`` (the lesson's id) and ``lessons.step`` (1-based): every way
of moving (the picker, the buttons, a link, a presenter's keys, a class following its teacher: ui/lessons/room.py)
sets those two keys and nothing else. The sentence is ``lessons.text``: the lesson's own until the learner types theirs.
"""

from __future__ import annotations

from typing import Mapping

import streamlit as st

from ui import state, url_state
from ui.feedback import or_stop
from vizcore.lessons.kinds import KINDS
from vizcore.lessons.lesson import Lesson, load_lessons
from vizcore.lessons.view import View

PAGE = "lessons"
KEY_LESSON = f"{PAGE}.lesson"
KEY_STEP = f"{PAGE}.step"
KEY_TEXT = f"{PAGE}.text"
KEY_QUERY = f"{PAGE}.query"  # the query token's position, for steps whose kind lets the learner pick it
KEY_CHECKED = f"{PAGE}.checked"  # (lesson, step, text, choice) of the last "Check"
KEY_CLASS_QUIZ = f"{PAGE}.class_quiz"  # a teacher's open quiz for the class (ui/lessons/room.py): a move closes it


@st.cache_resource(show_spinner=False)
def get_lessons() -> dict[str, Lesson]:
    """Every lesson file, read and checked once per server (a broken file stops the page with its message)."""
    return {lesson.id: lesson for lesson in load_lessons()}


def lessons_or_stop() -> dict[str, Lesson]:
    return or_stop(get_lessons)


# The lesson's id is checked against the lesson files and the step against that lesson's steps where the page
# settles them (``settle``): a bad one is reported and the first lesson or step opens instead.
# Presenter mode (ui/lessons/presenter.py): the presenter's id, and the speaker notes window (notes=1).
# A class (ui/lessons/room.py): teach=1 opens one (not written back: a reload is a new session, without the
# class's secret), room=CODE follows one (checked against the store, its message said where the class's line is).
# A quiz (ui/lessons/quiz.py): quiz=pre or quiz=post opens the lesson's quiz before or after it.
LINK = url_state.Link(PAGE, {"lesson": (KEY_LESSON, url_state.Choice()), "step": (KEY_STEP, url_state.Integer(1)),
                             "text": (KEY_TEXT, url_state.Text()),
                             "presenter": (f"{PAGE}.presenter", url_state.Text()),
                             "notes": (f"{PAGE}.notes", url_state.OneOf(("1", "0"))),
                             "teach": (f"{PAGE}.teach", url_state.OneOf(("1", "0"))),
                             "room": (f"{PAGE}.room", url_state.Text()),
                             "quiz": (f"{PAGE}.quiz", url_state.OneOf(("pre", "post")))})


class AppSource:
    """Models and runs from the server's caches (``ui.state``): shared, read-only."""

    def __init__(self, model: str, device: str) -> None:
        self.name, self.device = model, device

    def model(self, head: str = "base", name: str | None = None):
        return state.get_model(name or self.name, self.device, head)

    def run(self, text: str, hidden: bool = False):
        return state.get_run(self.name, self.device, text, None, hidden)


@st.cache_resource(show_spinner="Computing the step…", max_entries=64)
def get_view(model: str, device: str, text: str, kind: str, params: tuple[tuple[str, object], ...]) -> View:
    # cache_resource: a View holds figures that pages only read (for_screen draws a copy for the projector).
    return KINDS[kind].build(AppSource(model, device), text, dict(params))


def frozen(params: Mapping[str, object]) -> tuple[tuple[str, object], ...]:
    """A step's parameters as a hashable cache key (lists become tuples)."""
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in params.items()))


def keep_step_choices() -> None:
    """Keep the step's query token through runs that do not draw its selectbox (a quiz in its place): Streamlit
    forgets the value of a widget a run does not draw, and the browser, drawing the selectbox again, sent its first
    entry ([CLS]) with the next click, so the step's question changed under a student's first answer after a quiz."""
    if KEY_QUERY in st.session_state:
        st.session_state[KEY_QUERY] = st.session_state[KEY_QUERY]


def go_to(lesson: str, step: int) -> None:
    """Callback: open ``lesson`` at ``step`` (1-based). Another lesson brings its own sentence and query token; the
    query token the learner picked stays from step to step of one lesson; a check belongs to its step."""
    if lesson != st.session_state.get(KEY_LESSON) or KEY_TEXT not in st.session_state:
        st.session_state[KEY_TEXT] = get_lessons()[lesson].sentence
        st.session_state.pop(KEY_QUERY, None)
    st.session_state[KEY_LESSON] = lesson
    st.session_state[KEY_STEP] = step
    st.session_state.pop(KEY_CHECKED, None)
    st.session_state.pop(KEY_CLASS_QUIZ, None)


def picker_key(lesson: str) -> str:
    """The lesson picker's key names the lesson it was drawn on. A browser that sends its picker's value from before
    the last move (seen with the presenter's keys: the folded sidebar's picker still said the lesson before, and its
    "change" ran before the key's move, so Page Down from masks 1 opened heads 2) sends it for a picker no longer on
    the page: Streamlit runs no callback for a widget the last run did not draw."""
    return f"{PAGE}.picker.{lesson}"


def on_lesson_picked(key: str) -> None:
    go_to(st.session_state[key], 1)


def settle(lessons: Mapping[str, Lesson]) -> tuple[Lesson, int]:
    """The lesson and step to show: the link's (a bad one reported, the first lesson or step instead), else the
    session's, else the first lesson's first step; the sentence defaults to the lesson's."""
    first = next(iter(lessons))
    lesson_id = url_state.settle_choice(KEY_LESSON, list(lessons), first)
    lesson = lessons[lesson_id]
    step = url_state.settle(KEY_STEP, 1, 1, len(lesson.steps))
    if not str(st.session_state.get(KEY_TEXT) or "").strip():
        st.session_state[KEY_TEXT] = lesson.sentence
    return lesson, step
