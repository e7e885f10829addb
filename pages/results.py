"""Class results: a class's report for its teacher (with the class's report key) and a student's own results.

UI: ui/results/page.py · computation: vizcore/results/ (store: the answers in SQLite; report: shares, normalised
gain, wrong answers; export: CSV, JSON, offline HTML; figures: the scores' chart) · URL: /results
"""

import streamlit as st

from ui.results import page

st.title("Class results")
lessons = page.lessons()
opened = page.opened_class()
if opened is not None:
    page.draw_report(*opened, lessons)
else:
    page.access_form()
page.own_results(lessons)
page.privacy()
