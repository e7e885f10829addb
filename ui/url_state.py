"""The address bar reproduces every page's view: one helper that reads a link once and writes it back.

Shared by every page: ``text``, ``pair``, ``model`` and ``present`` (the sidebar; read once per session by
``ui.state``). Each page declares its own parameters once, as a ``Link`` (name -> session key and parser),
reads it with ``read`` on its first run and calls ``write`` at the end of each run with the values on screen.

The promise (README, "Sharing a view"): a value the page cannot use is reported with its name and value,
left out (the control keeps its default) and dropped from the rewritten link, never silently changed.
``read`` checks what can be checked from the text alone (a number, one of fixed choices); a bound only known
once the page has its model or results (a model's layers, a folder's relations) is checked where the control
is drawn, by ``settle`` or ``settle_choice``, with the same message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import streamlit as st

from ui.state import presenting, selection

MAX_URL_TEXT = 2_000  # longer sentences are left out of the link (browsers and chat apps cut long URLs)
SHOWN_RAW = 80  # characters of a bad value quoted in its message
LINKED = "url.linked"  # {session key: (name, raw)}: set from the link, its page-dependent bound not checked yet
REJECTED = "url.rejected"  # {name: value shown since it was reported, None before}: out of the link until it changes

Parse = Callable[[str], object]
Params = Mapping[str, tuple[str, Parse]]  # link name -> (session key, parse)


@dataclass(frozen=True)
class Integer:
    """A whole number from ``low`` to ``high``. ``high=None``: the top depends on what the page shows (a
    model's layers) and ``settle`` checks it where the control is drawn."""

    low: int
    high: int | None = None

    def __call__(self, raw: str) -> int:
        text = raw.strip()
        if not text.isdigit() or int(text) < self.low or (self.high is not None and int(text) > self.high):
            if self.high is None:
                raise ValueError(f"it must be a whole number, at least {self.low:,}.")
            raise ValueError(f"it must be a whole number from {self.low:,} to {self.high:,}.")
        return int(text)


@dataclass(frozen=True)
class OneOf:
    """One of fixed choices."""

    options: tuple[str, ...]

    def __call__(self, raw: str) -> str:
        if raw not in self.options:
            raise ValueError(f"it is one of {', '.join(self.options)}.")
        return raw


@dataclass(frozen=True)
class Choice:
    """One of choices the page knows only once it has its data (a results folder's relations, the words of the
    sentence); ``settle_choice`` checks it where the control is drawn."""

    def __call__(self, raw: str) -> str:
        if not raw.strip():
            raise ValueError("it is empty.")
        return raw


@dataclass(frozen=True)
class Words:
    """Comma-separated words (lower-cased), each checked by ``settle_words`` against the words on screen."""

    def __call__(self, raw: str) -> list[str]:
        return [w.strip().lower() for w in raw.split(",") if w.strip()]


@dataclass(frozen=True)
class Text:
    """Free text, used as typed (a sentence, a prompt, a folder); any text is a value. ``convert``: what the
    control keeps of it (a model name that is not listed goes to the "Other" box)."""

    convert: Callable[[str], object] | None = None

    def __call__(self, raw: str) -> object:
        return raw if self.convert is None else self.convert(raw)


@dataclass(frozen=True)
class Link:
    """A page's link parameters, declared once. ``selector`` names the parameter that picks the part of the
    page on screen, and ``sections`` the parameters each part adds (drawn only while that part is on screen)."""

    page: str  # the page's session-state prefix (``<page>.url_read``)
    params: Params
    selector: str | None = None
    sections: Mapping[str, Params] = field(default_factory=dict)

    def all(self) -> dict[str, tuple[str, Parse]]:
        merged = dict(self.params)
        for more in self.sections.values():
            merged.update(more)
        return merged


def first_visit(page: str) -> bool:
    """True once per session and page: the moment to take that page's parameters from the link."""
    key = f"{page}.url_read"
    if st.session_state.get(key):
        return False
    st.session_state[key] = True
    return True


def problem(name: str, raw: str, why: str) -> str:
    """The one message for a link value that was not used; its parameter stays out of the rewritten link."""
    st.session_state.setdefault(REJECTED, {})[name] = None
    shown = raw if len(raw) <= SHOWN_RAW else raw[:SHOWN_RAW] + "…"
    return f"The link's {name}={shown!r} was not used: {why}"


def read(link: Link) -> list[str]:
    """On a session's first visit to the page, set each parameter's session key from the link. A value its
    parser refuses (ValueError) is reported, not used; the messages are returned for the page to show."""
    page, params = link.page, link.all()
    if not first_visit(page):
        return []
    problems = []
    linked = st.session_state.setdefault(LINKED, {})
    for name, (key, parse) in params.items():
        raw = st.query_params.get(name)
        if raw is None:
            continue
        try:
            st.session_state[key] = parse(raw)
        except ValueError as error:
            problems.append(problem(name, raw, str(error)))
        else:
            linked[key] = (name, raw)
    return problems


def warn(problems: Sequence[str]) -> None:
    for text in problems:
        st.warning(text)


def _from_link(key: str) -> tuple[str, str] | None:
    return st.session_state.get(LINKED, {}).pop(key, None)


def settle(key: str, default: int, low: int, high: int) -> int:
    """Give a numeric control its starting value through session state, inside ``low``..``high``: a value from
    the link outside them is reported and replaced by ``default``; one kept from before (a bigger model chosen
    then) is brought inside. Draw the control with ``key`` and no ``value``."""
    state = st.session_state
    linked = _from_link(key)
    value = int(state.get(key, default))
    if linked is not None and not low <= value <= high:
        st.warning(problem(*linked, f"it must be a whole number from {low:,} to {high:,} here."))
        value = default
    state[key] = int(min(max(value, low), high))
    return state[key]


def settle_choice(key: str, options: Sequence, default) -> object:
    """The same for a choice whose options the page has just learnt: a linked value it does not offer is
    reported and replaced by ``default``; one kept from before falls back to ``default`` too."""
    state = st.session_state
    linked = _from_link(key)
    if state.get(key) not in options:
        if linked is not None:
            listed = ", ".join(map(str, options[:12])) + (", …" if len(options) > 12 else "")
            st.warning(problem(*linked, f"here it is one of {listed}."))
        state[key] = default
    return state[key]


def settle_words(key: str, options: Sequence[str], default: list[str]) -> list[str]:
    """The same for a list of words: a linked list with a word not among ``options`` is reported and replaced by
    ``default``; words kept from before that are gone (other sentences) are dropped."""
    state = st.session_state
    linked = _from_link(key)
    chosen = state.get(key, default)
    unknown = [w for w in chosen if w not in options]
    if unknown and linked is not None:
        st.warning(problem(*linked, f"not in these sentences: {', '.join(unknown[:5])}."))
        chosen = default
    state[key] = [w for w in chosen if w in options]
    return state[key]


def _left_out(name: str, value: str) -> bool:
    """A parameter reported as not used stays out of the link until its control shows another value."""
    rejected = st.session_state.get(REJECTED, {})
    if name not in rejected:
        return False
    if rejected[name] is None:
        rejected[name] = value
    if rejected[name] == value:
        return True
    del rejected[name]
    return False


def write(page_params: Mapping[str, object] | None = None) -> None:
    """Rewrite the address bar with the shared selection and this page's parameters (when they changed).
    Text longer than ``MAX_URL_TEXT`` is left out, and the page says so."""
    sel = selection()
    params: dict[str, str] = {}
    candidates = {"text": sel.text, "pair": sel.pair, "model": sel.model, **(page_params or {}),
                  "present": "1" if presenting() else None}
    too_long = []
    for name, value in candidates.items():
        if value is None or value == "" and name in ("pair", "model"):
            continue
        text = str(value)
        if len(text) > MAX_URL_TEXT:
            too_long.append(f"{name} ({len(text):,} characters)")
        elif not _left_out(name, text):
            params[name] = text
    if too_long:
        st.caption(f"The link leaves out {', '.join(too_long)}: a link holds at most {MAX_URL_TEXT:,} characters "
                   "of text, so it opens with the defaults there.")
    if dict(st.query_params) != params:
        st.query_params.from_dict(params)
