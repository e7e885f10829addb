"""The follow clock's report (``ui.lessons.clock.drawn_at_rest``) and what ``room.redraw_if_behind`` does with it:
a page at rest on another step than its session for two ticks in a row is redrawn, once per mismatch."""

from __future__ import annotations

import pytest

from ui.lessons import clock, page, room


@pytest.mark.parametrize("report, drawn", [
    ({"state": "notRunning", "drawn": ["attention", 3]}, ("attention", 3)),
    ({"state": "notRunning", "drawn": ["attention", "3"]}, ("attention", 3)),
    ({"state": "running", "drawn": ["attention", 3]}, None),  # mid-run: the page is allowed to lag
    ({"state": "notRunning", "drawn": None}, None),  # no step drawn (an error, a page without a step)
    ({"state": "notRunning", "drawn": ["attention"]}, None),
    ({"state": "notRunning", "drawn": [3, 3]}, None),
    ({"state": "notRunning", "drawn": ["attention", "x"]}, None),
    ("tick", None),
    (None, None),
])
def test_the_report_names_the_step_drawn_at_rest_or_nothing(report, drawn):
    assert clock.drawn_at_rest(report) == drawn


class Rerun(Exception):
    pass


@pytest.fixture
def session(monkeypatch):
    state: dict = {page.KEY_LESSON: "attention", page.KEY_STEP: 4}

    def rerun(scope="app"):
        raise Rerun(scope)

    monkeypatch.setattr(room.st, "session_state", state)
    monkeypatch.setattr(room.st, "rerun", rerun)
    return state


def test_a_page_behind_its_session_for_two_ticks_is_redrawn_three_times_at_most(session, capsys):
    room.redraw_if_behind(("attention", 3))  # one tick: a run may still be on its way
    room.redraw_if_behind(None)  # a tick mid-run says nothing and resets nothing
    with pytest.raises(Rerun):
        room.redraw_if_behind(("attention", 3))
    said = capsys.readouterr().err
    assert "showed ('attention', 3) at rest while its session was on ('attention', 4): redrawn" in said
    for _ in range(room.REDRAWS - 1):  # the redraw was lost too: again, after two more ticks
        room.redraw_if_behind(("attention", 3))
        with pytest.raises(Rerun):
            room.redraw_if_behind(("attention", 3))
    for _ in range(6):  # no redraw mends it: not again and again
        room.redraw_if_behind(("attention", 3))


def test_a_page_that_caught_up_starts_counting_again(session):
    room.redraw_if_behind(("attention", 3))
    room.redraw_if_behind(("attention", 4))  # drawn: the count starts over
    room.redraw_if_behind(("attention", 3))
    assert session[room.KEY_BEHIND] == 1
    with pytest.raises(Rerun):
        room.redraw_if_behind(("attention", 3))
