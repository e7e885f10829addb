"""The app's own page layout rules, injected once per run by ``app.py``: what Streamlit's defaults get wrong
on the screens this app is used on (a teacher's 1024 x 768 laptop, a projector).

Streamlit's wide layout keeps 90 px of padding on each side of the page and 108 px above it whatever the
screen; on a 1024 px screen beside the 338 px sidebar that left 507 px for the page, so example buttons,
metrics and control labels were cut or broken inside words. Below 1400 px wide the padding shrinks, and a
metric's label wraps rather than ending in an ellipsis.

``lazy_tabs``: tabs whose pages compute and draw only the open one (step by step, Fill-mask).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import streamlit as st

NARROW_PX = 1400

CSS = f"""
<style>
/* A metric's label wraps onto a second line instead of ending in "…" ("max |Δ| attention, layer 1 h…") */
[data-testid="stMetricLabel"], [data-testid="stMetricLabel"] * {{
  white-space: normal !important; overflow: visible !important; text-overflow: clip !important;
}}
@media (max-width: {NARROW_PX}px) {{
  [data-testid="stMainBlockContainer"] {{ padding-left: 1.5rem; padding-right: 1.5rem; padding-top: 3.5rem; }}
}}
</style>
"""


def apply() -> None:
    """Call once per run, before the page draws (an element-free style block: it takes no space)."""
    st.html(CSS)


def lazy_tabs(labels: Sequence[str], key: str, keep: Mapping[str, object] | None = None) -> Sequence:
    """Tabs that run only the open one: a click on a tab reruns the page with it open (``on_change="rerun"``),
    and ``tab.open`` is True for that tab alone, so a page draws ``if tab.open:`` what it shows there. Step by
    step recomputed and sent its 25 charts on every change of layer or sentence, four tabs of them hidden.

    ``keep``: the widgets inside the tabs (key -> default), pinned in the session so that a value set in one
    tab is still there after a visit to another (Streamlit drops a widget's state after a run that did not
    draw it). Those widgets take their default from here, not from their own ``value`` (which would warn of a
    value set twice); a default of None pins a value only once the widget has one.
    """
    for name, default in (keep or {}).items():
        if name in st.session_state or default is not None:
            st.session_state[name] = st.session_state.get(name, default)
    return st.tabs(list(labels), key=key, on_change="rerun")
