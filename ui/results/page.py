"""The Class results page: a class's report for its teacher, and a student's own results (issue 50 C, D).

The report opens only with the class's **report key** (``vizcore.results.store.new_report_key``): the teacher's
session has it from the moment the class opens (``lessons.class_report``, ui/lessons/room.py) and this page shows it
to keep; after the class, a restart or on another computer, the teacher types the class code and the key. The store
keeps the key's hash only; a wrong key and an unknown class get the same answer. A student's link opens nothing of
the report: their own results are read by their browser session's random id.
"""

from __future__ import annotations

import hmac
from typing import Mapping

import streamlit as st

from ui.feedback import CHART, or_stop, plain
from ui.layout import for_screen
from ui.lessons.page import lessons_or_stop
from ui.lessons.room import KEY_REPORT, KEY_STUDENT
from vizcore.errors import VizError
from vizcore.lessons.lesson import Lesson
from vizcore.lessons.quiz import PHASE_NAMES
from vizcore.lessons.rooms import RoomError, check_code
from vizcore.results.export import csv_text, gain, json_text, report_html, share, wrong_answer
from vizcore.results.figures import distribution_text, score_distribution
from vizcore.results.report import ClassReport, class_report, own_result
from vizcore.results.store import report_key_hash
from vizcore.results.stores import retention_days, server_results

PAGE = "results"
KEY_OPEN = f"{PAGE}.open"  # the class whose report this session opened with its key
KEY_CODE = f"{PAGE}.code"
KEY_KEY = f"{PAGE}.key"
KEY_PROBLEM = f"{PAGE}.problem"
NO_REPORT = ("No report opens with this class code and key. Check both on the teacher's page of the class (the key is "
             "shown on this page while the class is on), or ask the person who taught it.")


def opens(code: str, key: str) -> bool:
    """Whether ``key`` opens the report of the class ``code`` (the store compares the key's hash)."""
    record = server_results().class_record(code)
    return record is not None and hmac.compare_digest(record.report_key_hash, report_key_hash(key))


def open_report() -> None:
    """Callback of the form: open the typed class's report when its key is right, else say so (same message)."""
    state = st.session_state
    try:
        code = check_code(state.get(KEY_CODE) or "")
    except RoomError as error:
        state[KEY_PROBLEM] = str(error).replace("Check it with your teacher.", "")
        return
    if not opens(code, state.get(KEY_KEY) or ""):
        state[KEY_PROBLEM] = NO_REPORT
        return
    state[KEY_OPEN] = code
    state[KEY_KEY] = ""


def opened_class() -> tuple[str, str | None] | None:
    """(code, key to show) of the report this session may read: the class it taught (with the key to keep), or the
    one opened with the form (the key not shown again)."""
    taught = st.session_state.get(KEY_REPORT)
    if taught and opens(*taught):
        return taught
    code = st.session_state.get(KEY_OPEN)
    return (code, None) if code else None


def access_form() -> None:
    problem = st.session_state.pop(KEY_PROBLEM, None)
    if problem:
        st.error(problem)
    with st.form(key=f"{PAGE}-open", border=True, enter_to_submit=True):
        st.markdown("**A class's report** (for its teacher)")
        st.text_input("Class code", key=KEY_CODE, max_chars=20, placeholder="e.g. K7P 3QX")
        st.text_input("Report key (shown to the teacher when the class opened)", key=KEY_KEY, type="password",
                      max_chars=40)
        st.form_submit_button("Open the report", on_click=open_report)


def _table(rows: list[list[str]], head: list[str]) -> str:
    def cells(values):
        return "| " + " | ".join(plain(v).replace("\n", " ") for v in values) + " |"

    return "\n".join([cells(head), "|" + "---|" * len(head), *map(cells, rows)])


def draw_report(code: str, key: str | None, lessons: Mapping[str, Lesson]) -> ClassReport:
    rows = or_stop(server_results().answers, code)
    report = class_report(code, lessons, rows)
    st.header(f"Class {code}: what the class learned")
    if key:
        st.info(f"Report key of this class: **{key}**. Keep it: with the class code it opens this report later, after "
                "the class or a restart, from any browser. Students do not see it.")
    named = f" · nicknames: {plain(', '.join(sorted(report.nicknames.values())))}" if report.nicknames else ""
    st.markdown(f"{report.students} students · {report.answers} answers{named}")
    if not report.lessons and not report.steps:
        st.info("No answers yet. Open a quiz from the class's Lessons page: the answers appear here as they are saved.")
    for lesson in report.lessons:
        st.subheader(plain(lesson.title))
        st.markdown(f"Right before the lesson: **{share(lesson.mean_before)}** · after: **{share(lesson.mean_after)}** "
                    f"· the class's normalised gain: **{gain(lesson.gain)}**")
        st.plotly_chart(for_screen(score_distribution(lesson, titled=False)), key=f"{PAGE}.scores.{lesson.lesson}",
                        config=CHART)
        st.caption(distribution_text(lesson))
        st.markdown(_table(
            [[q.text, f"{q.before[0]}/{q.before[1]} ({share(q.share_before)})",
              f"{q.after[0]}/{q.after[1]} ({share(q.share_after)})", gain(q.gain),
              wrong_answer(q), q.suggests or "—", f"step {q.step}"] for q in lesson.questions],
            ["question", "right before", "right after", "normalised gain", "most common wrong answer",
             "what it suggests", "taught in"]))
    if report.steps:
        st.subheader("The lessons' questions, answered in class")
        titles = {lesson_id: lesson.title for lesson_id, lesson in lessons.items()}
        table = [[f"{titles.get(s.lesson, s.lesson)} · step {s.step}: {s.text}", f"{s.right}/{s.answered}",
                  s.wrong or "—"] for s in report.steps]
        st.markdown(_table(table, ["question", "right", "most common wrong answer"]))
    st.caption("Normalised gain: (after − before) / (1 − before), the share of what was left to learn that was "
               "learned.")
    _downloads(report, rows)
    return report


def _downloads(report: ClassReport, rows) -> None:
    with st.container(horizontal=True):
        st.download_button("Download the answers (CSV)", data=lambda: csv_text(rows), file_name=f"class-{report.code}"
                           "-answers.csv", mime="text/csv", key=f"{PAGE}.csv", on_click="ignore")
        st.download_button("Download the answers (JSON)", data=lambda: json_text(rows),
                           file_name=f"class-{report.code}-answers.json", mime="application/json", key=f"{PAGE}.json",
                           on_click="ignore")
        st.download_button("Download the report (HTML, offline)", data=lambda: report_html(report),
                           file_name=f"class-{report.code}-report.html", mime="text/html", key=f"{PAGE}.html",
                           on_click="ignore")


def own_results(lessons: Mapping[str, Lesson]) -> None:
    """The quizzes this browser session took, each with its score and the questions missed."""
    student = st.session_state.get(KEY_STUDENT)
    st.subheader("Your results")
    if not student:
        st.markdown("You have taken no quiz in this browser session. Each lesson has a quiz before and after it "
                    "(its first and last steps).")
        return
    try:
        mine = server_results().student_answers(student)
    except VizError as error:
        st.error(str(error))
        return
    taken = sorted({(row.class_code, row.lesson, row.phase) for row in mine if row.phase in PHASE_NAMES},
                   key=lambda t: (list(lessons).index(t[1]) if t[1] in lessons else 99, t[2] != "pre"))
    if not taken:
        st.markdown("You have taken no quiz in this browser session yet.")
    for class_code, lesson_id, phase in taken:
        if lesson_id not in lessons:
            continue
        lesson = lessons[lesson_id]
        result = own_result(lesson, phase, [row for row in mine if row.class_code == class_code])
        where = f" (class {class_code})" if class_code else ""
        st.markdown(f"**{plain(lesson.title)}**, quiz {PHASE_NAMES[phase]}{where}: "
                    f"**{result.right} of {result.items}**")
        for missed in result.missed:
            st.markdown(f"- {plain(missed.text)} The model's answer: **{plain(missed.right)}** · "
                        f"[step {missed.step}: {plain(lesson.steps[missed.step - 1].title)}]({missed.link})")


def privacy() -> None:
    st.caption(f"What is stored: each answer, whether it was right, a random id of the student's browser session (no "
               f"name), the nickname a student typed (if any), the model and the time; deleted after "
               f"{retention_days():g} days. A class's report opens only with its report key. docs/RESULTS.md says "
               "where the file is and how to export or delete it.")


def lessons() -> Mapping[str, Lesson]:
    return lessons_or_stop()
