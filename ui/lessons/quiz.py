"""The quizzes before and after a lesson on the Lessons page (issue 50 A): the form, saving it, the student's result.

A quiz opens with the link's ``quiz=pre`` or ``quiz=post`` (``lessons.quiz``; the buttons on the lesson's first and
last steps set it), or for a class when its teacher opens one (ui/lessons/room.py). Its questions and their right
answers come from ``vizcore.lessons.quiz.asked`` on the model on screen, each view from the page's cache (a class
asks 30 times the same views: computed once). All choices sit in one form: choosing runs nothing on the server;
*Submit* stores the answers in the results store (``vizcore.results.stores.server_results``) in its callback, before
the page runs, and that one run says "saved" only once the store has them on disk (or what went wrong, the answers
still in the form). The student is the random id of the browser session (no name); the
nickname is optional.
"""

from __future__ import annotations

import html
import re

import streamlit as st

from ui.feedback import or_stop, plain
from ui.lessons import room
from ui.lessons.page import PAGE, frozen, get_view
from ui.lessons.step import draw_figures, model_terms
from vizcore.errors import VizError
from vizcore.lessons.course import step_link
from vizcore.lessons.lesson import Lesson
from vizcore.lessons.quiz import PHASE_NAMES, Asked, asked
from vizcore.lessons.view import View
from vizcore.results.report import own_result
from vizcore.results.store import MAX_NICKNAME_CHARS, Row, now_iso
from vizcore.results.stores import server_results

KEY_QUIZ = f"{PAGE}.quiz"  # "pre" or "post": this learner's own quiz (the link's quiz=), "" none
KEY_NICKNAME = room.KEY_NICKNAME
KEY_SAVED = f"{PAGE}.quiz_saved"  # {(class, lesson, phase)}: the quizzes this session saved
KEY_PROBLEM = f"{PAGE}.quiz_problem"  # (kind, message) of a submit that saved nothing, said by the next run
STORED = ("What is stored: your answers, whether each was right, a random id of this browser session (no name), the "
          "nickname if you type one, the model and the time; deleted after {days:g} days.")


student_id = room.student_id


def open_quiz(phase: str) -> None:
    """Callback of the quiz buttons: this learner's own quiz (alone; a class's quizzes are opened by the teacher)."""
    st.session_state[KEY_QUIZ] = phase


def close_quiz() -> None:
    st.session_state[KEY_QUIZ] = ""


def own_phase() -> str | None:
    phase = st.session_state.get(KEY_QUIZ) or ""
    return phase if phase in PHASE_NAMES else None


def asked_items(lesson: Lesson, phase: str, model: str, device: str) -> list[Asked]:
    return asked(lesson, phase, lambda text, kind, params: get_view(model, device, text, kind, frozen(params)))


def _choice_key(lesson: Lesson, phase: str, item: Asked) -> str:
    return f"{PAGE}.quiz.{lesson.id}.{phase}.{item.id}"


def _save(lesson: Lesson, phase: str, items: list[Asked], model: str, class_code: str) -> None:
    """Callback of *Submit my answers*: store the form's answers (all or none) before the page runs, so that the run
    that follows draws the result, once (saving in the run and then rerunning drew the whole form, figures and all,
    for nothing: half of a class's submit cost, bench/quiz_load.py). What went wrong is kept for the run to say."""
    state = st.session_state
    missing = [i for i, item in enumerate(items, 1) if state.get(_choice_key(lesson, phase, item)) is None]
    if missing:
        state[KEY_PROBLEM] = ("warning", f"Answer every question before you submit: question"
                              f"{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))} "
                              f"{'have' if len(missing) > 1 else 'has'} no answer yet. Your other answers are kept.")
        return
    nickname = " ".join(str(state.get(KEY_NICKNAME) or "").split())[:MAX_NICKNAME_CHARS]
    student, when = student_id(), now_iso()
    rows = [Row(class_code, lesson.id, phase, item.id, student, nickname, state[_choice_key(lesson, phase, item)],
                item.answer.verdict(state[_choice_key(lesson, phase, item)]), when, item.answer.right, item.text,
                model) for item in items]
    try:
        server_results().record(rows)
    except VizError as error:
        state[KEY_PROBLEM] = ("error", f"Your answers were not saved: {error} They are still in the form: submit "
                                       "again.")
        return
    state.setdefault(KEY_SAVED, set()).add((class_code, lesson.id, phase))
    if class_code:
        room.send_quiz_score(lesson.id, phase, sum(row.correct for row in rows), len(rows))


def _again(where: tuple[str, str, str]) -> None:
    st.session_state.get(KEY_SAVED, set()).discard(where)


def _result(lesson: Lesson, phase: str, class_code: str) -> None:
    """The student's result, read back from the store: their score, and after the lesson the questions missed."""
    mine = [row for row in server_results().student_answers(student_id()) if row.class_code == class_code]
    result = own_result(lesson, phase, mine)
    st.html(f'<div class="quiz-saved" data-saved="{result.items}" data-right="{result.right}" role="status">'
            f"<strong>Saved.</strong> Your answers to the quiz {PHASE_NAMES[phase]} are stored.</div>")
    st.markdown(f"### Your score: {result.right} of {result.items}")
    if phase == "pre":
        st.markdown("The lesson now: the quiz after it asks the same ideas on other examples.")
        return
    before = own_result(lesson, "pre", mine)
    if any(row.lesson == lesson.id and row.phase == "pre" for row in mine):
        st.markdown(f"Before the lesson: {before.right} of {before.items}.")
    if not result.missed:
        st.success("Every answer right.")
        return
    st.markdown("**The questions you missed**, with the step that teaches each:")
    for missed in result.missed:
        link = html.escape(step_link(lesson.id, missed.step, lesson.sentence))
        title = plain(lesson.steps[missed.step - 1].title)
        st.markdown(f"- {plain(missed.text)} You answered *{plain(missed.answer)}*; the model's answer is "
                    f"**{plain(missed.right)}**. <a href=\"{link}\" target=\"_blank\" rel=\"noopener\">Step "
                    f"{missed.step}: {title}</a>", unsafe_allow_html=True)


def draw_quiz(lesson: Lesson, phase: str, model: str, device: str, class_code: str = "") -> None:
    """The quiz ``phase`` of ``lesson`` for this learner (in the class ``class_code``, "" alone): the form, or their
    result once it is saved (with *Answer again*)."""
    from vizcore.results.stores import retention_days

    st.subheader(f"Quiz {PHASE_NAMES[phase]}: {plain(lesson.title)}")
    where = (class_code, lesson.id, phase)
    if where in st.session_state.get(KEY_SAVED, set()):
        _result(lesson, phase, class_code)
        st.button("Answer again", key=f"{PAGE}.quiz_again", on_click=_again, args=(where,))
        return
    items = or_stop(asked_items, lesson, phase, model, device)
    terms = model_terms(model, device)
    st.caption(f"{len(items)} questions on the model on screen · " + STORED.format(days=retention_days()))
    st.markdown(f"The quiz's sentence: **{plain(lesson.quiz.sentences[phase])}**")
    with st.form(key=f"{PAGE}-quiz-{lesson.id}-{phase}", enter_to_submit=False):
        st.text_input("Nickname (optional; your teacher sees it in the class report)", key=KEY_NICKNAME,
                      max_chars=MAX_NICKNAME_CHARS)
        for i, item in enumerate(items, 1):
            st.markdown(f"**{i}. {plain(terms(item.text))}**")
            if item.context:
                st.markdown(plain(item.context))
            if item.figures:
                draw_figures(View(figures=list(item.figures)), f"{PAGE}.quiz.{lesson.id}.{phase}.{item.id}",
                             fill=False)
            label = re.sub(r"([<>])", r"\\\1", f"Question {i}: {terms(item.text)}")  # "</s>" as itself
            st.radio(label, item.answer.choices, index=None,
                     key=_choice_key(lesson, phase, item), label_visibility="collapsed")
        problem = st.session_state.pop(KEY_PROBLEM, None)
        if problem:
            (st.warning if problem[0] == "warning" else st.error)(problem[1])
        st.form_submit_button("Submit my answers", type="primary", on_click=_save,
                              args=(lesson, phase, items, model, class_code))
    st.html(f'<div class="lesson-quiz" data-lesson="{html.escape(lesson.id)}" data-phase="{phase}"></div>')


def quiz_buttons(lesson: Lesson, number: int) -> None:
    """On a lesson's first step, the quiz before it; on its last, the quiz after it (a learner alone)."""
    if lesson.quiz is None:
        return
    if number == 1:
        st.button(f"Quiz before the lesson ({len(lesson.quiz.items)} questions)", key=f"{PAGE}.quiz_pre",
                  on_click=open_quiz, args=("pre",), help="What you know now: the same ideas are asked after it.")
    if number == len(lesson.steps):
        st.button(f"Quiz after the lesson ({len(lesson.quiz.items)} questions)", key=f"{PAGE}.quiz_post",
                  on_click=open_quiz, args=("post",), type="primary")


def teacher_view(lesson: Lesson, phase: str, model: str, device: str) -> None:
    """The teacher's page while the class's quiz is open: what the students are doing, their scores as they come,
    and the questions with the model's answers (folded: the page may be on the projector)."""
    st.subheader(f"Quiz {PHASE_NAMES[phase]}: {plain(lesson.title)}")
    st.markdown(f"The students answer {len(lesson.quiz.items)} questions on their own devices. Close the quiz when "
                "they have submitted: the class goes back to the step, and the answers are kept for the class report "
                "(the Class results page).")
    room.quiz_scores(lesson, phase)
    items = or_stop(asked_items, lesson, phase, model, device)
    terms = model_terms(model, device)
    with st.expander("The questions and the model's answers"):
        for i, item in enumerate(items, 1):
            st.markdown(f"{i}. {plain(terms(item.text))} **{plain(item.answer.right)}** ({plain(item.answer.reason)})")
    st.html(f'<div class="lesson-quiz" data-lesson="{html.escape(lesson.id)}" data-phase="{phase}" '
            'data-teacher="1"></div>')
