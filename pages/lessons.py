"""Lessons: a guided course through the Transformer, each step a claim, a live view of the real model's numbers, a
task and a question whose answer is computed from those numbers.

Lessons: vizcore/lessons/data/*.toml (format: vizcore/lessons/lesson.py, docs/LESSONS.md) · step kinds:
vizcore/lessons/kinds.py (each calls an existing computation and figure) · answers: vizcore/lessons/answers.py
UI: ui/lessons/ (page: state, link, cached views; step: one step drawn; presenter: presenter mode, its keys and the
speaker notes; share: the step's link and the lesson's handout; room: a class that follows its teacher).
URL: /lessons?lesson=attention&step=3 · presenter mode: &present=1 · notes: ?notes=1&presenter=ID · a class:
?teach=1 (the teacher), ?room=CODE (a student) · a quiz: ?lesson=attention&quiz=pre (or post; ui/lessons/quiz.py)
"""

import streamlit as st

from ui import url_state
from ui.lessons import page, presenter, quiz, room
from ui.lessons.share import draw_share
from ui.lessons.step import draw_step
from ui.state import presenting, selection

lessons = page.lessons_or_stop()
problems = url_state.read(page.LINK)
if st.session_state.get(presenter.KEY_NOTES) == "1":
    presenter.notes_window(lessons)
    st.stop()
if not presenting():
    st.title("Lessons: the Transformer, step by step")
url_state.warn(problems)
room.follow(lessons)  # a student: to the teacher's step, before the page settles its own
lesson, number = page.settle(lessons)
room.notice_own_move(lesson.id, number)
room.teach(lesson.id, number, (st.session_state.get(page.KEY_TEXT) or "").strip() or lesson.sentence)
room.class_bar(lessons)
sel = selection()

if room.teaching():
    room.quiz_buttons(lesson)
page.keep_step_choices()  # a quiz in place of the step must not reset the step's query token
class_phase = room.class_quiz()
if class_phase and lesson.quiz is not None:  # the class's quiz, opened by the teacher, in place of the step
    if room.teaching():
        quiz.teacher_view(lesson, class_phase, sel.model, sel.device)
    else:
        quiz.draw_quiz(lesson, class_phase, sel.model, sel.device, room.following())
    url_state.write({"lesson": lesson.id, **({"room": room.following()} if room.following() else {})})
    st.stop()
phase = None if room.teaching() or room.following() else quiz.own_phase()
if phase and lesson.quiz is not None:  # a learner's own quiz before or after the lesson, in place of its steps
    st.button("← Back to the lesson", key=f"{page.PAGE}.quiz_back", on_click=quiz.close_quiz)
    quiz.draw_quiz(lesson, phase, sel.model, sel.device)
    url_state.write({"lesson": lesson.id, "quiz": phase})
    st.stop()

chrome = st.sidebar if presenting() else st.container()
with chrome:
    picker = page.picker_key(lesson.id)
    st.session_state[picker] = lesson.id
    st.selectbox("Lesson", list(lessons), key=picker, format_func=lambda i: lessons[i].title,
                 on_change=page.on_lesson_picked, args=(picker,))
    st.text_input("Sentence (the lesson's, or type your own)", key=page.KEY_TEXT)
text = st.session_state[page.KEY_TEXT].strip() or lesson.sentence

total = len(lesson.steps)
with chrome, st.container(horizontal=True, vertical_alignment="center"):
    st.button("← Previous", key=f"{page.PAGE}.previous", disabled=number == 1, on_click=page.go_to,
              args=(lesson.id, number - 1))
    st.markdown(f"Step **{number}** of **{total}**")
    st.button("Next →", key=f"{page.PAGE}.next", disabled=number == total, on_click=page.go_to,
              args=(lesson.id, number + 1))

link = {"lesson": lesson.id, "step": number, "text": text}
if presenting():
    link["presenter"] = presenter.presenter_id()
    presenter.presenter_chrome(lessons, lesson, number, text, sel)
if room.following():
    link["room"] = room.following()
with st.container(key=f"{page.PAGE}-step"):
    answer = draw_step(lesson, number, sel.model, sel.device, text)
room.class_answers(lesson, number, None if answer is None else answer.choices)
if not presenting() and not room.following():
    quiz.quiz_buttons(lesson, number)
if not presenting():
    draw_share(lesson, number, sel.model, sel.device, text)
url_state.write(link)
