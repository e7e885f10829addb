"""The browser tests' own run counter (conftest._BUSY_AND_QUIET, read by run_and_wait): a script run is counted
once when it starts, even when its start and its end reach the page's observer together, as they can on a
starved renderer (a sweep timed out waiting for a run the counter had missed, at a load average of 24)."""

from __future__ import annotations

from tests.e2e.conftest import _BUSY_AND_QUIET

APP = ('<!doctype html><html lang="en"><body>'
       '<div data-testid="stApp" data-test-script-state="notRunning"></div></body></html>')
SET = "document.querySelector('[data-testid=stApp]').setAttribute('data-test-script-state', '{}')"


def runs_after(page, *states: str) -> int:
    """Set the app's run state to each of ``states`` in one task (no microtask between), then read the counter."""
    page.evaluate(";".join(SET.format(state) for state in states))
    return page.evaluate("new Promise(done => setTimeout(() => done(window.__runs), 0))")


def test_a_run_is_counted_even_when_its_start_and_end_are_observed_together(page):
    page.set_content(APP)
    page.evaluate(_BUSY_AND_QUIET)
    assert runs_after(page, "running", "notRunning") == 1  # the old counter read 'notRunning' twice: 0
    assert runs_after(page, "running") == 2  # one observed alone
    assert runs_after(page, "notRunning") == 2  # its end is not a run
    assert runs_after(page, "running", "notRunning", "running", "notRunning") == 4


def test_the_server_s_finished_runs_are_counted_from_the_page_s_socket(page, app_url):
    """The second signal run_and_wait reads: a run whose state change the page never drew (its start and end in one
    React render, so no mutation at all) is still seen, from the server's script_finished on the websocket."""
    from tests.e2e.conftest import run_and_wait, wait_until_idle

    page.goto(f"{app_url}/?text=A+first+sentence.")
    wait_until_idle(page)
    first = page.finished_runs
    assert first >= 1  # the page's first run
    run_and_wait(page, page.get_by_role("button", name="The cat sat…").click)
    assert page.finished_runs > first
