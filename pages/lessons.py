"""Lessons: a guided course through the Transformer, each step a claim, a live view of the real model's numbers, a
task and a question whose answer is computed from those numbers.

Lessons: vizcore/lessons/data/*.toml (format: vizcore/lessons/lesson.py, docs/LESSONS.md) · step kinds:
vizcore/lessons/kinds.py (each calls an existing computation and figure) · answers: vizcore/lessons/answers.py
UI: ui/lessons/ (page: state, link, cached views; step: one step drawn). URL: /lessons?lesson=attention&step=3
"""

import streamlit as st

from ui import url_state
from ui.lessons import page
from ui.lessons.step import draw_step
from ui.state import selection

st.title("Lessons: the Transformer, step by step")
lessons = page.lessons_or_stop()
url_state.warn(url_state.read(page.LINK))
lesson, number = page.settle(lessons)
sel = selection()

st.session_state[f"{page.PAGE}.picker"] = lesson.id
st.selectbox("Lesson", list(lessons), key=f"{page.PAGE}.picker", format_func=lambda i: lessons[i].title,
             on_change=page.on_lesson_picked)
st.text_input("Sentence (the lesson's, or type your own)", key=page.KEY_TEXT)
text = st.session_state[page.KEY_TEXT].strip() or lesson.sentence

total = len(lesson.steps)
with st.container(horizontal=True, vertical_alignment="center"):
    st.button("← Previous", key=f"{page.PAGE}.previous", disabled=number == 1, on_click=page.go_to,
              args=(lesson.id, number - 1))
    st.markdown(f"Step **{number}** of **{total}**")
    st.button("Next →", key=f"{page.PAGE}.next", disabled=number == total, on_click=page.go_to,
              args=(lesson.id, number + 1))

with st.container(key=f"{page.PAGE}-step"):
    draw_step(lesson, number, sel.model, sel.device, text)
url_state.write({"lesson": lesson.id, "step": number, "text": text})
