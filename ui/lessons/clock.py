"""The Lessons page's own clock for a student following the class (``room._watch``): it reruns the follow fragment
every second, and with each tick tells the server which step the page has drawn.

Why not the fragment's ``run_every``. Streamlit 1.67's frontend drops every ``run_every`` timer when a full run
starts (``cleanupAutoReruns`` at its new-session message) and arms one again only when that run calls the fragment (an
auto-rerun message). In three clean clones of the class test a student's timer was gone for good: the page at rest
on the teacher's previous step, saying "Following your teacher", and no run of it on the server (its threads'
stacks, docs/SCALE.md). Here the timer is the page's: a component drawn inside the fragment whose JavaScript
``setInterval`` sends a trigger, and a trigger of a widget in a fragment reruns that fragment. It lives as long as
the component is on the page: a run that no longer draws it stops it.

Why the page says what it has drawn. With the clock, a clean clone still left a student on the teacher's previous
step, at rest, while the server's session had followed (so the fragment saw nothing to do). Streamlit's server sends
a run's messages on only while the runner that made them is the session's current one ("Ignoring event from
non-current ScriptRunner", ``AppSession._handle_scriptrunner_event_on_event_loop``): a fragment's rerun that arrives
just as a run ends starts a new runner, and the ended run's last elements can be dropped (Streamlit's own comment in
``AppSession.request_rerun`` describes the race). On a page whose fragment reran every 20 ms, the server's debug
log counted the element messages it dropped. So the page reports
the lesson and step its marker (``.lesson-step``) shows while it is at rest, and ``room`` redraws a page that shows
another step than its session is on.

The teacher's chart of the answers, the speaker notes and a background job's progress still use ``run_every``.
"""

from __future__ import annotations

from typing import Callable

import streamlit as st

# No tick within QUIET_MS of the user's last click, key or input. Streamlit's frontend sends the widget updates of one
# moment as one batch (``scheduleFlush``: a setTimeout of 0) with the first fragment id any of them has: a tick
# in the same batch as a student's choice sent the choice as the follow fragment's rerun, so the page's own run never
# came (a clean clone: Check still disabled 30 s after a choice; the console said "Multiple different fragmentIds
# detected in a single batch of widget updates"). The user's own run draws the fragment anyway.
QUIET_MS = 1500
_TICK_JS = """
export default function (component) {
  const {data, setTriggerValue} = component;
  const every = (data && data.every_ms) || 1000, quiet = (data && data.quiet_ms) || 1500;
  const events = ['pointerdown', 'pointerup', 'click', 'keydown', 'input', 'change'];
  let touched = 0;
  const touch = () => { touched = Date.now(); };
  events.forEach(name => document.addEventListener(name, touch, true));
  const report = () => {
    const app = document.querySelector('[data-testid=stApp]');
    const marker = document.querySelector('.lesson-step');
    return {state: app ? app.getAttribute('data-test-script-state') : null,
            drawn: marker ? [marker.dataset.lesson, Number(marker.dataset.step)] : null};
  };
  const timer = setInterval(() => { if (Date.now() - touched >= quiet) setTriggerValue('tick', report()); }, every);
  return () => { clearInterval(timer); events.forEach(name => document.removeEventListener(name, touch, true)); };
}
"""


@st.cache_resource(show_spinner=False)
def _clock() -> Callable:
    return st.components.v2.component("lessons.clock", js=_TICK_JS, isolate_styles=False)


def every(seconds: float, key: str) -> tuple[str, int] | None:
    """Call first thing in an ``st.fragment``: the page reruns that fragment every ``seconds`` while this run and the
    next ones draw the clock (``key``: unique on the page), except within ``QUIET_MS`` of the user's last click, key
    or input. Nothing is drawn (no height, nothing to focus).
    Returns, in a run the tick started, the (lesson, step) the page showed at rest; else None."""
    result = _clock()(key=key, data={"every_ms": round(seconds * 1000), "quiet_ms": QUIET_MS}, height=0,
                      on_tick_change=_nothing)
    return drawn_at_rest(getattr(result, "tick", None))


def drawn_at_rest(report: object) -> tuple[str, int] | None:
    """The (lesson, step) in a tick's report when the page was at rest (not running) and had drawn a step."""
    if not isinstance(report, dict) or report.get("state") != "notRunning":
        return None
    drawn = report.get("drawn")
    if not isinstance(drawn, list) or len(drawn) != 2 or not isinstance(drawn[0], str):
        return None
    try:
        return drawn[0], int(drawn[1])
    except (TypeError, ValueError):
        return None


def _nothing() -> None:
    """The tick's callback: the tick itself is the point (a trigger with a callback reruns its fragment)."""
