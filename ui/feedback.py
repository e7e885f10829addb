"""The one way a page shows a user's mistake: a clear message, and the page stops there (or goes on).

Everything a user can get wrong raises ``VizError`` in vizcore with a message meant for them; these
helpers turn it into ``st.error`` (or ``st.info``). The sidebar and every widget keep their values.
User text shown in markdown (a CSV label, a model's answer) goes through ``plain``, so it shows as typed.
"""

from __future__ import annotations

import re
from typing import Callable, TypeVar

import streamlit as st

from vizcore.errors import VizError

T = TypeVar("T")
CHART = {"displaylogo": False}  # every plotly chart's config: no plotly logo in the toolbar


def or_stop(compute: Callable[..., T], *args, show: Callable[[str], object] = st.error, **kwargs) -> T:
    """Run ``compute``; a VizError becomes a clear message (``st.error`` by default) and the page stops."""
    try:
        return compute(*args, **kwargs)
    except VizError as error:
        show(str(error))
        st.stop()


def or_none(compute: Callable[..., T], *args, **kwargs) -> T | None:
    """Like ``or_stop`` but the rest of the page still runs: for one section that cannot be shown."""
    try:
        return compute(*args, **kwargs)
    except VizError as error:
        st.error(str(error))
        return None


def plain(text: str) -> str:
    """User text (CSV labels, a model's answer) for st.markdown: markdown and HTML characters shown as themselves."""
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|<>~$])", r"\\\1", str(text))
