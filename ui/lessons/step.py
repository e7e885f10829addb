"""One step drawn: its claim, its live view, what to do, and its question with the reveal. ``draw_step`` is the one
function that draws a step (a presenter's or a follower's page will call it too)."""

from __future__ import annotations

import html
import re
import threading
import weakref

import streamlit as st

from ui.feedback import CHART, or_none, plain
from ui.layout import fitted, for_screen, own_height
from ui.lessons import room
from ui.lessons.page import KEY_CHECKED, KEY_QUERY, PAGE, frozen, get_view
from ui.state import presenting
from vizcore.errors import VizError
from vizcore.lessons.answers import ANSWERS, Answer
from vizcore.lessons.kinds import KINDS, query_position
from vizcore.lessons.lesson import Lesson, Step, in_model_terms
from vizcore.lessons.view import View
from vizcore.plot import HtmlFigure, own_copy


def _query_params(step: Step, model: str, device: str, text: str) -> dict:
    """The step's parameters, with the query token the learner picked (a selectbox of the sentence's tokens)."""
    params = dict(step.params)
    if not KINDS[step.kind].query:
        return params
    from ui.state import get_run
    from vizcore.inside.figures import token_labels

    run = or_none(get_run, model, device, text, None)
    if run is None:
        return params
    labels = token_labels(run.tokens)
    default = query_position(run.tokens, params)
    if not isinstance(st.session_state.get(KEY_QUERY), int) or not 0 <= st.session_state[KEY_QUERY] < len(labels):
        st.session_state[KEY_QUERY] = default
    label = "Query token (the word that asks)"
    if not presenting():
        params["query_index"] = st.selectbox(label, range(len(labels)), key=KEY_QUERY, format_func=labels.__getitem__)
        return params
    with st.container(horizontal=True, vertical_alignment="center", key=f"{PAGE}-query-row"):
        st.markdown(label, width="content")
        params["query_index"] = st.selectbox(label, range(len(labels)), key=KEY_QUERY, width=260,
                                             format_func=labels.__getitem__, label_visibility="collapsed")
    return params


def draw_figures(view: View, key: str, fill: bool) -> None:
    """The view's figures; ``fill`` (presenter mode): side by side in the room the step's text leaves (the
    container ``lessons-figures`` takes the rest of the screen, ``PRESENTER_CSS``), each chart as high as that
    room with its title written above it."""
    if view.caption:
        st.caption(view.caption)
    if not fill:
        for i, figure in enumerate(view.figures):
            shown, title = _title_above(for_screen(figure))  # the view is shared: each copies under own_copy's lock
            if isinstance(figure, HtmlFigure):
                shown, title = figure, figure.title
            if title:
                st.caption(f"**{plain(title)}**")
            _chart(shown, f"{key}.figure{i}", "content")
        return
    with st.container(key=f"{PAGE}-figures", horizontal=True, height="stretch"):
        for i, figure in enumerate(view.figures):
            shown, title = (figure, figure.title) if isinstance(figure, HtmlFigure) else fitted(for_screen(figure))
            with st.container(height="stretch", gap="small"):
                if title:
                    st.caption(f"**{plain(title)}**")
                _chart(shown, f"{key}.figure{i}", "content" if own_height(shown) else "stretch")


_UNTITLED: dict[int, tuple[weakref.ref, object, str]] = {}  # id(figure) -> (the figure, its copy, its title)
_UNTITLED_LOCK = threading.Lock()


def _title_above(figure):
    """A plotly figure without its title, and the title as plain text to write above it: plotly draws a title on one
    line and the chart cuts it at its width (on a 390 px phone: "Query 10: it against every key, layer 4, hea");
    text above the chart wraps. Other charts as they are (None).

    The copy is made once per figure and kept while the figure lives: a cached view's figure is shared by every
    session and read-only, and so is its copy (st.plotly_chart only reads it). Copying it on every run was a fifth
    of a student's follow run (a class of 30 reruns the step at once when the teacher moves)."""
    if not hasattr(figure, "to_plotly_json") or not figure.layout.title.text:
        return figure, None
    with _UNTITLED_LOCK:
        kept = _UNTITLED.get(id(figure))
        if kept is not None and kept[0]() is figure:
            return kept[1], kept[2]
        for key in [key for key, (alive, _, _) in _UNTITLED.items() if alive() is None]:
            del _UNTITLED[key]
    untitled = own_copy(figure)  # the figure may be a cached view's, shared by every session
    title = " ".join(re.sub(r"<[^>]+>", " ", untitled.layout.title.text).split())
    untitled.update_layout(title_text=None)
    with _UNTITLED_LOCK:
        _UNTITLED[id(figure)] = (weakref.ref(figure), untitled, title)
    return untitled, title


def _chart(figure, key: str, height: str) -> None:
    if isinstance(figure, HtmlFigure):
        st.html(figure.body)
    elif hasattr(figure, "to_plotly_json"):
        st.plotly_chart(for_screen(figure), key=key, config=CHART, height=height)
    else:
        st.altair_chart(for_screen(figure), key=key, height=height)


def model_terms(model: str, device: str):
    """``in_model_terms`` for the model on screen: its own names for BERT's [CLS] and [SEP] (no change when its
    tokenizer cannot be read: the step still draws)."""
    from ui.state import get_model

    loaded = or_none(get_model, model, device)
    tokenizer = getattr(loaded, "tokenizer", None)
    cls_token = getattr(tokenizer, "cls_token", None) or getattr(tokenizer, "bos_token", None)
    sep_token = getattr(tokenizer, "sep_token", None) or getattr(tokenizer, "eos_token", None)
    return lambda words: in_model_terms(words, cls_token, sep_token)


def _question(lesson: Lesson, number: int, step: Step, view: View, text: str, model: str,
              terms=lambda words: words) -> Answer | None:
    """The question, its choices and *Check*; a checked answer also goes to the class this session follows."""
    question = step.question
    try:
        answer: Answer = ANSWERS[question.answer](view, question.params)
    except VizError as error:
        st.error(str(error))
        return None
    if not presenting():
        st.subheader("Predict, then check")
    where = (lesson.id, number, text)
    with st.container(horizontal=presenting(), vertical_alignment="bottom", key=f"{PAGE}-question"):
        label = re.sub(r"([<>])", r"\\\1", terms(question.text))  # "</s>" shown as itself, not as markup
        choice = st.radio(label, answer.choices, index=None, key=f"{PAGE}.choice.{lesson.id}.{number}",
                          horizontal=presenting())
        if st.button("Check", key=f"{PAGE}.check", disabled=choice is None, type="primary"):
            st.session_state[KEY_CHECKED] = (*where, choice)
            room.send_answer(lesson.id, number, choice, answer.verdict(choice), answer.right, question.text, model)
    checked = st.session_state.get(KEY_CHECKED)
    if checked and checked[:3] == where and checked[3] in answer.choices:
        if answer.verdict(checked[3]):
            st.success(f"Right: {plain(answer.right)}. The model's numbers: {plain(answer.reason)}.")
        else:
            st.error(f"Not quite: the answer is {plain(answer.right)}. The model's numbers: {plain(answer.reason)}.")
    return answer


def draw_step(lesson: Lesson, number: int, model: str, device: str, text: str) -> Answer | None:
    """Step ``number`` (1-based) of ``lesson`` on ``text``; the marker with ``data-lesson`` and ``data-step`` is
    drawn last, once the step's view is on screen. In presenter mode (``presenting()``) the step fills the
    screen: its title is the page's heading, the task goes to the speaker notes, the figures take what is left.
    Returns the step's question's answer (its choices: a teacher's chart of the class's answers), None without."""
    step = lesson.steps[number - 1]
    terms = model_terms(model, device)
    if presenting():
        with st.container(horizontal=True, vertical_alignment="center", key=f"{PAGE}-heading"):
            st.title(f"{number}. {plain(terms(step.title))}")
            st.caption(f"{plain(lesson.title)} · {number} / {len(lesson.steps)}", width="content")
            room.heading_code()
    else:
        st.subheader(f"{number}. {plain(terms(step.title))}")
    st.markdown(plain(step.claim))
    params = _query_params(step, model, device, text)
    view = or_none(get_view, model, device, text, step.kind, frozen(params))
    if view is not None:
        draw_figures(view, f"{PAGE}.{lesson.id}.{number}", fill=presenting())
    if not presenting():
        st.markdown(f"**Your turn:** {plain(terms(step.task))}")
    answer = None
    if step.question is not None and view is not None:
        answer = _question(lesson, number, step, view, text, model, terms)
    st.html(f'<div class="lesson-step" data-lesson="{html.escape(lesson.id)}" data-step="{number}"></div>')
    return answer
