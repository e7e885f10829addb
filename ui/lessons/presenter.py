"""Presenter mode (issue 34 B): the Lessons page with the projector setting on (``ui.state.presenting``: the
sidebar's toggle or ``?present=1``) shows one step filling the screen, moved by the keyboard or a USB clicker.

Keys: a ``st.components.v2`` component whose JavaScript listens on ``document`` (one listener at a time, removed
when the component unmounts) and sends ``{"action": ...}`` back as a trigger value; ``on_key`` moves
``lessons.lesson``/``lessons.step`` with ``vizcore.lessons.course.move`` (the one place a key becomes a move).
Full screen, blackout and the help overlay happen in the browser alone. Keys act only in presenter mode, only
while ``lessons.keys`` is on, never while the focus is in a text box or a list; nothing advances by itself.

Speaker notes: a second window (``/lessons?notes=1&presenter=ID``) cannot read the presenter's session, so each
presenter run publishes where it is to ``notes_board()`` (vizcore/lessons/board.py: one per server process, keyed by
the random presenter id in the presenter's link), and the notes window listens to the presenter's moves on the class
channel (``listen.follow``): it runs again when the presenter moves, never while the presenter stays.
"""

from __future__ import annotations

import secrets
from typing import Callable, Mapping

import streamlit as st

from ui.state import KEY_PRESENT
from vizcore.errors import VizError
from vizcore.lessons.board import Position, notes_board
from vizcore.lessons.course import ACTIONS, move
from vizcore.lessons.lesson import Lesson

PAGE = "lessons"
KEY_KEYS = f"{PAGE}.keys"  # the keys are on (a toggle, on by default)
KEY_PRESENTER = f"{PAGE}.presenter"  # this presenter's id: in the link, so a reload keeps its notes window
KEY_NOTES = f"{PAGE}.notes"  # this window is a presenter's speaker notes
KEY_COMPONENT = f"{PAGE}.keys_component"
PRESENTER_ID_BYTES = 9  # 12 URL-safe characters: another presenter's notes are not guessed

HELP = (("→ · Space · Page Down", "next step (after a lesson's last step: the next lesson)"),
        ("← · Page Up", "previous step"), ("Home · End", "first · last step of the lesson"),
        ("F", "full screen"), ("B", "black screen (B or any key brings the step back)"), ("?", "these keys"),
        ("Esc", "leave presenter mode"))

_JS = """
const TEXT_BOX = 'input, textarea, select, [contenteditable=""], [contenteditable="true"], [role=combobox], '
  + '[role=listbox], [role=option], [role=slider], [role=spinbutton], [role=textbox], [role=radiogroup]';
const MOVES = {ArrowRight: 'next', ' ': 'next', PageDown: 'next', ArrowLeft: 'previous', PageUp: 'previous',
               Home: 'first', End: 'last', Escape: 'leave'};

function overlay(id, html, css) {
  let el = document.getElementById(id);
  if (!el) {
    el = document.createElement('div');
    el.id = id;
    el.setAttribute('role', 'dialog');
    el.style.cssText = 'position:fixed;inset:0;z-index:1000000;' + css;
    el.innerHTML = html;
    document.body.appendChild(el);
  }
  return el;
}

function closeOverlays() {
  let closed = false;
  for (const id of ['lesson-blackout', 'lesson-keys-help']) {
    const el = document.getElementById(id);
    if (el) { el.remove(); closed = true; }
  }
  return closed;
}

export default function (component) {
  const {data, setTriggerValue, parentElement} = component;
  const keys = globalThis.__lessonKeys = globalThis.__lessonKeys || {};
  keys.send = setTriggerValue;
  keys.help = data.help;
  if (keys.owner !== parentElement) {
    if (keys.handler) document.removeEventListener('keydown', keys.handler, true);
    keys.owner = parentElement;
    keys.count = (keys.count || 0) + 1;  // listeners attached over the page's life (tests read it)
    keys.handler = event => {
      if (event.ctrlKey || event.metaKey || event.altKey || event.defaultPrevented) return;
      const target = event.target instanceof Element ? event.target : null;
      if (target && target.closest(TEXT_BOX)) return;
      if (target && target.closest('button, a, summary') && [' ', 'Enter'].includes(event.key)) return;
      if (closeOverlays()) { event.preventDefault(); return; }  // blackout or help: any key closes it, only that
      const key = event.key;
      if (key in MOVES) {
        event.preventDefault();
        keys.send('action', MOVES[key]);
      } else if (key === 'f' || key === 'F') {
        event.preventDefault();
        if (document.fullscreenElement) document.exitFullscreen();
        else document.documentElement.requestFullscreen().catch(() => {});
      } else if (key === 'b' || key === 'B') {
        event.preventDefault();
        overlay('lesson-blackout', '', 'background:#000;cursor:none');
      } else if (key === '?') {
        event.preventDefault();
        overlay('lesson-keys-help', keys.help,
                'background:#000;color:#fff;font-size:28px;padding:1.2em 2em;overflow:auto;line-height:1.5');
      }
    };
    document.addEventListener('keydown', keys.handler, true);  // capture: before the app's own Esc handling
  }
  parentElement.setAttribute('data-presenter-keys', String(keys.count));
  return () => {
    if (keys.owner !== parentElement) return;  // a newer mount owns the listener
    document.removeEventListener('keydown', keys.handler, true);
    closeOverlays();
    keys.owner = keys.handler = null;
  };
}
"""


@st.cache_resource(show_spinner=False)
def _mount() -> Callable:
    return st.components.v2.component(f"{PAGE}.presenter_keys", js=_JS, isolate_styles=False)


def help_html() -> str:
    rows = "".join(f"<tr><th style='text-align:left;padding-right:1.5em'>{key}</th><td>{what}</td></tr>"
                   for key, what in HELP)
    return f"<h2 style='color:#fff;margin:0 0 .5em'>Presenter keys</h2><table>{rows}</table>" \
           "<p>Any key closes this.</p>"


def apply_action(state: Mapping, lessons: Mapping[str, Lesson], action: str) -> tuple[str, int] | None:
    """The (lesson, step) that ``action`` opens from the session's position; None for ``leave`` or an unknown one."""
    if action not in ACTIONS:
        return None
    course = {lesson_id: len(lesson.steps) for lesson_id, lesson in lessons.items()}
    lesson = state.get(f"{PAGE}.lesson")
    lesson = lesson if lesson in course else next(iter(course))
    step = state.get(f"{PAGE}.step")
    step = step if isinstance(step, int) and 1 <= step <= course[lesson] else 1
    return move(course, lesson, step, action)


def _on_key(lessons: Mapping[str, Lesson], go_to: Callable[[str, int], None]) -> None:
    action = (st.session_state.get(KEY_COMPONENT) or {}).get("action")
    if action == "leave":
        st.session_state[KEY_PRESENT] = False
        return
    moved = apply_action(st.session_state, lessons, str(action))
    if moved is not None:
        go_to(*moved)


def keys(lessons: Mapping[str, Lesson], go_to: Callable[[str, int], None]) -> None:
    """Mount the key listener (only while presenting with the keys on: otherwise it is not drawn, and its
    JavaScript's cleanup removes the listener). Its box takes no room (``PRESENTER_CSS``)."""
    if not st.session_state.get(KEY_KEYS, True):
        return
    with st.container(key=f"{PAGE}-keys"):
        _mount()(key=KEY_COMPONENT, data={"help": help_html()}, height=0,
                 on_action_change=lambda: _on_key(lessons, go_to))


def presenter_id() -> str:
    """This presenter's id, made once per session unless the link brought one."""
    current = st.session_state.get(KEY_PRESENTER)
    if not isinstance(current, str) or not current.strip():
        st.session_state[KEY_PRESENTER] = secrets.token_urlsafe(PRESENTER_ID_BYTES)
    return st.session_state[KEY_PRESENTER]


# ---- speaker notes -----------------------------------------------------------------------------------------

# ---- the presenter's page ----------------------------------------------------------------------------------

# One step fills the window: the main block a column of the window's height with no scrolling, the step's box
# takes it, and in the step the figures' box (``lessons-figures``) takes what the title, claim and question leave.
# The header's bar is see-through (its » and menu stay); lesson text 28 px; motion off when the system asks.
PRESENTER_CSS = """
<style>
[data-testid="stMainBlockContainer"] {
  padding: 0.5rem 3rem 0.5rem 3rem !important; height: 100vh; max-width: none !important; box-sizing: border-box;
}
[data-testid="stMainBlockContainer"] > [data-testid="stVerticalBlock"] { height: 100%; flex-wrap: nowrap; gap: 0; }
[data-testid="stHeader"] { background: transparent !important; height: 0 !important; }
.st-key-lessons-keys { display: none !important; }
[data-testid="stLayoutWrapper"]:has(> .st-key-lessons-step),
[data-testid="stLayoutWrapper"]:has(> .st-key-lessons-figures) {
  flex: 1 1 0 !important; min-height: 0 !important; display: flex; flex-direction: column;
}
.st-key-lessons-step { flex: 1 1 0 !important; min-height: 0; gap: 0.5rem; }
.st-key-lessons-figures { flex: 1 1 0 !important; min-height: 0 !important; }
.st-key-lessons-figures { overflow: hidden; }
.st-key-lessons-figures [data-testid="stVerticalBlock"] { min-height: 0; flex: 1 1 0; }
.st-key-lessons-figures [data-testid="stElementContainer"]:has([data-testid="stPlotlyChart"]) {
  flex: 1 1 0 !important; min-height: 0 !important; height: auto !important;
}
.st-key-lessons-figures [data-testid="stPlotlyChart"], .st-key-lessons-figures .js-plotly-plot {
  height: 100% !important; min-height: 0 !important;
}
.st-key-lessons-heading { flex-wrap: nowrap !important; }
.st-key-lessons-heading h1 { font-size: 36px; line-height: 1.2; padding: 0; }
.st-key-lessons-heading [data-testid="stCaptionContainer"] { white-space: nowrap; }
/* Check beside the choices (they wrap within what is left): a row of its own under them took 72 px from the figures */
.st-key-lessons-question { flex-wrap: nowrap !important; }
.st-key-lessons-question > [data-testid="stElementContainer"]:has([data-testid="stRadio"]) {
  flex: 1 1 auto !important; min-width: 0 !important; width: auto !important;
}
.st-key-lessons-question > [data-testid="stElementContainer"]:has([data-testid="stButton"]) {
  flex: 0 0 auto !important;
}
.st-key-lessons-question [role="radiogroup"] { gap: 0 1.25rem !important; }
.st-key-lessons-question [role="radiogroup"] label { padding-top: 0 !important; padding-bottom: 0 !important;
  min-height: 0 !important; }
.st-key-lessons-step [data-testid="stMarkdownContainer"] p, .st-key-lessons-question [data-testid="stWidgetLabel"] p {
  font-size: 28px; line-height: 1.35;
}
.st-key-lessons-step [data-testid="stCaptionContainer"] { font-size: 20px; }
@media (prefers-reduced-motion: reduce) {
  *, *::before, *::after { animation: none !important; transition: none !important; scroll-behavior: auto !important; }
}
</style>
"""


def presenter_chrome(lessons: Mapping[str, Lesson], lesson: Lesson, number: int, text: str, sel) -> None:
    """Presenter mode's own parts: its styles, the key listener, the sidebar's keys toggle and notes link, and
    this step published for the notes window."""
    from ui.lessons import page

    st.html(PRESENTER_CSS)
    presenter = presenter_id()
    with st.sidebar:
        st.session_state.setdefault(KEY_KEYS, True)
        st.toggle("Presenter keys", key=KEY_KEYS,
                  help="→ Space PageDown: next · ← PageUp: previous · Home End · F full screen · B black screen · "
                       "? the keys · Esc leaves presenter mode")
        st.link_button("Speaker notes (a second window)", f"/lessons?notes=1&presenter={presenter}")
    keys(lessons, page.go_to)
    query = st.session_state.get(page.KEY_QUERY)
    notes_board().publish(presenter, Position(lesson.id, number, text, sel.model, sel.device,
                                              query if isinstance(query, int) else None))


def _step_answer(step, position: Position):
    """The step's question's answer on the presenter's sentence and query token, or None."""
    from ui.lessons import page
    from vizcore.lessons.answers import ANSWERS
    from vizcore.lessons.kinds import KINDS

    if step.question is None:
        return None
    params = dict(step.params)
    if KINDS[step.kind].query and position.query is not None:
        params["query_index"] = position.query
    try:
        view = page.get_view(position.model, position.device, position.text, step.kind, page.frozen(params))
        return ANSWERS[step.question.answer](view, step.question.params)
    except VizError:  # the presenter's page shows the step's own message; the notes carry on without the answer
        return None


def notes_window(lessons: Mapping[str, Lesson]) -> None:
    """The speaker notes window: the step the presenter (``presenter=`` in the link) is on, drawn again when the
    presenter moves."""
    from ui.feedback import plain
    from ui.lessons import listen
    from vizcore.lessons.course import speaker_notes

    st.title("Speaker notes")
    presenter = st.session_state.get(KEY_PRESENTER)
    if not isinstance(presenter, str) or not presenter.strip():
        st.error("This notes window needs its presenter's link: open it from presenter mode's sidebar "
                 "(Speaker notes).")
        return

    position, moves = notes_board().read_moves(presenter)
    listen.follow(listen.notes_url(presenter), moves, key=f"{PAGE}.notes_follow")
    if position is None or position.lesson not in lessons:
        st.info("Waiting for the presenter: open the Lessons page in presenter mode (?present=1) from the "
                "link that opened this window.")
        return
    lesson = lessons[position.lesson]
    step = lesson.steps[position.step - 1]
    st.subheader(f"{plain(lesson.title)} · step {position.step} of {len(lesson.steps)}: {plain(step.title)}")
    for paragraph in speaker_notes(step, _step_answer(step, position)):
        st.markdown(plain(paragraph))
    if position.step < len(lesson.steps):
        st.caption(f"Next: {plain(lesson.steps[position.step].title)}")
    st.html(f'<div class="lesson-notes" data-lesson="{lesson.id}" data-step="{position.step}"></div>')
