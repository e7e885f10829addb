"""The address bar reproduces every page's view: one helper that reads a link once and writes it back.

Shared by every page: ``text``, ``pair`` and ``model`` (the sidebar; read once per session by
``ui.state``). Each page adds its own parameters, e.g. the Attention Explorer's ``layer``, ``head``
and ``view``, and calls ``write`` at the end of its run with the values now on screen.
"""

from __future__ import annotations

from typing import Callable, Mapping

import streamlit as st

from ui.state import selection

MAX_URL_TEXT = 2_000  # longer sentences are left out of the link (browsers and chat apps cut long URLs)


def first_visit(page: str) -> bool:
    """True once per session and page: the moment to take that page's parameters from the link."""
    key = f"{page}.url_read"
    if st.session_state.get(key):
        return False
    st.session_state[key] = True
    return True


def read(page: str, params: Mapping[str, tuple[str, Callable[[str], object]]]) -> list[str]:
    """On a session's first visit to ``page``, set each ``params[name] = (session key, parse)`` from the
    link. ``parse`` raises ValueError for a value it refuses; that value is reported, not used."""
    if not first_visit(page):
        return []
    problems = []
    for name, (key, parse) in params.items():
        raw = st.query_params.get(name)
        if raw is None:
            continue
        try:
            st.session_state[key] = parse(raw)
        except ValueError as error:
            problems.append(f"The link's {name}={raw[:80]!r} was not used: {error}")
    return problems


def one_of(options, what: str) -> Callable[[str], str]:
    """A link value parser that accepts only ``options``."""
    def parse(raw: str) -> str:
        if raw not in options:
            raise ValueError(f"{what} is one of {', '.join(options)}.")
        return raw
    return parse


def integer_in(low: int, high: int, what: str) -> Callable[[str], int]:
    def parse(raw: str) -> int:
        if not raw.strip().isdigit() or not low <= int(raw) <= high:
            raise ValueError(f"{what} must be a whole number from {low} to {high}.")
        return int(raw)
    return parse


def settle(key: str, default: int, low: int, high: int) -> None:
    """Give a numeric widget its starting value through session state (a link may have set it), kept in
    range: a smaller model may have been chosen since. Draw the widget with ``key`` and no ``value``."""
    st.session_state[key] = int(min(max(int(st.session_state.get(key, default)), low), high))


def write(page_params: Mapping[str, object] | None = None) -> None:
    """Rewrite the address bar with the shared selection and this page's parameters (when they changed)."""
    sel = selection()
    params: dict[str, str] = {}
    if len(sel.text) <= MAX_URL_TEXT:
        params["text"] = sel.text
    if sel.pair and len(sel.pair) <= MAX_URL_TEXT:
        params["pair"] = sel.pair
    if sel.model:
        params["model"] = sel.model
    for name, value in (page_params or {}).items():
        if value is not None and len(str(value)) <= MAX_URL_TEXT:
            params[name] = str(value)
    if dict(st.query_params) != params:
        st.query_params.from_dict(params)
