"""The page's own clock: what reruns a fragment on a timer. Used by a student following the class
(``ui.lessons.room``), where a lost timer loses the class.

Not the fragment's ``run_every``. Streamlit 1.67's frontend drops every ``run_every`` timer when a full run starts
(``cleanupAutoReruns`` at its new-session message) and arms one again only when that run calls the fragment (an
auto-rerun message). In three clean clones of the class test a student's timer was gone for good: the page at rest
on the teacher's previous step, saying "Following your teacher", and no run of it on the server (its threads'
stacks, docs/SCALE.md). Here the timer is the page's: a component drawn inside the fragment whose JavaScript
``setInterval`` sends a trigger, and a trigger of a widget in a fragment reruns that fragment. It lives as long as
the component is on the page: a run that no longer draws it stops it.

The teacher's chart of the answers, the speaker notes and a background job's progress still use ``run_every``:
moved to this clock, one run of the class tests (with others beside them) lost a teacher's Enter on *Next* (the
page at rest on the step before for 180 s). 40 presses and 3 runs of the test under load did not do it again, so
whether the move caused it is not known; a lost timer there stops a chart or a progress bar until the next click,
so they stay as they were.
"""

from __future__ import annotations

from typing import Callable

import streamlit as st

_TICK_JS = """
export default function (component) {
  const {data, setTriggerValue} = component;
  const timer = setInterval(() => setTriggerValue('tick', Date.now()), (data && data.every_ms) || 1000);
  return () => clearInterval(timer);
}
"""


@st.cache_resource(show_spinner=False)
def _clock() -> Callable:
    return st.components.v2.component("ui.clock", js=_TICK_JS, isolate_styles=False)


def every(seconds: float, key: str) -> None:
    """Call first thing in an ``st.fragment``: the page reruns that fragment every ``seconds`` while this run and the
    next ones draw the clock (``key``: unique on the page). Nothing is drawn (no height, nothing to focus)."""
    _clock()(key=key, data={"every_ms": round(seconds * 1000)}, height=0, on_tick_change=_nothing)


def _nothing() -> None:
    """The tick's callback: the tick itself is the point (a trigger with a callback reruns its fragment)."""
