"""Under a step (issue 34 D): the link that reopens it, to copy, and the lesson as an offline HTML handout.

The link is ``vizcore.lessons.course.step_link`` on the app's own address (``st.context.url``), the handout
``vizcore.lessons.handout`` built from the page's cached views (``get_view``: a step the learner has seen is not
computed again). The handout is made only when the button is pressed (a deferred download: Streamlit calls
``data`` in a thread of its own, so the callable takes everything it needs from this run, never from the session).
"""

from __future__ import annotations

import html

import streamlit as st

from ui.lessons.page import PAGE, AppSource, frozen, get_view
from vizcore.errors import VizError
from vizcore.lessons.course import PATH, step_link
from vizcore.lessons.handout import handout
from vizcore.lessons.lesson import Lesson

LABEL = "Download this lesson as a handout (HTML)"


def app_address() -> str:
    """The app's address as the browser sees it (``http://host:8501``, with any path prefix), '' when unknown (a
    test without a browser): then links start at the app's root."""
    url = (st.context.url or "").split("?")[0].rstrip("/")
    return url.removesuffix(f"/{PATH}")


def make_handout(lesson: Lesson, model: str, device: str, text: str, base: str) -> bytes:
    """The lesson's handout on ``text``, each step's view from the page's cache; a model that cannot be loaded
    gives a one-line file that says so (the download runs outside the page: it has no other way to tell)."""
    views = lambda step: get_view(model, device, text, step.kind, frozen(step.params))  # noqa: E731
    try:
        made = handout(lesson, AppSource(model, device), text, base=base, model=model, views=views)
    except VizError as error:
        made = (f'<!DOCTYPE html>\n<html lang="en"><meta charset="utf-8"><title>No handout</title><p>The handout of '
                f"{html.escape(lesson.title)} could not be made: {html.escape(str(error))}</p></html>\n")
    return made.encode("utf-8")


def draw_share(lesson: Lesson, number: int, model: str, device: str, text: str) -> None:
    base = app_address()
    st.markdown("**Link to this step** (it reopens this step on this sentence; copy it with the button at its right)")
    st.code(step_link(lesson.id, number, text, base, model), language=None, wrap_lines=True)
    st.download_button(LABEL, data=lambda: make_handout(lesson, model, device, text, base),
                       file_name=f"{lesson.id}-handout.html", mime="text/html", on_click="ignore",
                       key=f"{PAGE}.handout", icon=":material/download:",
                       help="Every step of this lesson on this sentence: its figures, question and answer (folded), "
                            "in one file that opens without the internet (about 5 MB: it carries plotly.js).")
