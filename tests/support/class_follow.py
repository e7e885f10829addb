"""A class in real browsers (issue 34 C), the one copy of what the browser test of a class
(tests/e2e/test_class_browser.py) and its bench (bench/class_replicas.py) both do: the teacher moves with the page's
Next and every student's drawn step is polled until it is the teacher's; students answer the step's question and the
teacher's chart must count them. Playwright pages in, seconds out; what the times must be is the caller's."""

from __future__ import annotations

import os
import re
import signal
import time
from urllib.parse import urlsplit

from bench.classroom import listening_pid
from tests.e2e.test_presenter_browser import DRAWN

OPTIONS = '[data-testid="stRadio"] [role=radiogroup] label'  # the question's choices (not its own label)
CLASS_ANSWERS = ".class-answers-text"  # the text alternative of the teacher's chart of the answers

# A student's step as drawn: its marker and every chart of the step drawn, whatever the app's run state (a follow
# rerun may still be ending while the step is on screen).
STUDENT_DRAWN = """() => {
  const step = document.querySelector('.st-key-lessons-step');
  if (!step || step.querySelector('[data-testid=stSkeleton]')
      || [...step.querySelectorAll('[data-testid=stPlotlyChart]')].some(c => !c.querySelector('.main-svg')))
    return null;
  const marker = step.querySelector('.lesson-step');
  return marker ? [marker.dataset.lesson, Number(marker.dataset.step)] : null;
}"""


def marker(page) -> tuple[str, int] | None:
    """A student's drawn step (lesson id, 1-based step), None while it is being drawn."""
    found = page.evaluate(STUDENT_DRAWN)
    return None if found is None else tuple(found)


def wait_all(students: list, expected: tuple[str, int], since: float, timeout_s: float) -> list[float]:
    """Poll every student's drawn step until each shows ``expected``; the seconds each took from ``since``."""
    took: dict[int, float] = {}
    deadline = time.perf_counter() + timeout_s
    while len(took) < len(students) and time.perf_counter() < deadline:
        for i, page in enumerate(students):
            if i not in took and marker(page) == expected:
                took[i] = time.perf_counter() - since
        time.sleep(0.05)
    if len(took) < len(students):
        stuck = {i: (marker(p), *where(p)) for i, p in enumerate(students) if i not in took}
        dump_server_threads(students[0])
        raise AssertionError((expected, stuck))
    return [took[i] for i in range(len(students))]


# What a student's page says of its class (following, or on its own and where the teacher is), its run state and
# address: why a student did not follow.
WHERE = """() => {
  const said = [...document.querySelectorAll('[data-testid=stCaptionContainer], [data-testid=stAlert]')]
    .map(e => e.innerText).filter(t => /teacher|class/i.test(t)).join(' | ');
  return [document.querySelector('[data-testid=stApp]')?.getAttribute('data-test-script-state'), said.slice(0, 200),
          location.search.slice(0, 160)];
}"""


def dump_server_threads(page, note: object = "") -> None:
    """Ask the server behind ``page`` (``ui.launch``) to write every thread's stack to its log (SIGUSR1,
    ``faulthandler``): a student's run that never ended shows what it waits for. Best effort."""
    try:
        port = urlsplit(page.url).port
        pid = listening_pid(port) if port else None
        if pid is not None:
            print(f"a student is stuck ({note}): the server's threads are in its log (pid {pid})")
            os.kill(pid, signal.SIGUSR1)
    except Exception as error:  # noqa: BLE001 - a diagnosis must not hide the failure it explains
        print(f"the server's threads could not be asked for: {error}")


def where(page) -> list:
    """``WHERE``, and the page's last console errors and warnings (``keep_console``)."""
    said = [line[:160] for line in getattr(page, "console_lines", [])[-5:]]
    try:
        return [*page.evaluate(WHERE), said]
    except Exception as error:  # noqa: BLE001 - a diagnosis must not hide the failure it explains
        return [f"not read: {str(error).splitlines()[0][:80]}", said]


def keep_console(page):
    """``page``, keeping the errors and warnings its console prints (Streamlit's frontend says there what it could
    not do: a message it could not read, a socket it lost) for ``where``."""
    page.console_lines = []
    page.on("console", lambda message: message.type in ("error", "warning")
            and page.console_lines.append(f"{message.type}: {message.text}"))
    return page


def move(teacher, students: list, expected: tuple[str, int], timeout_s: float) -> tuple[float, list[float]]:
    """The teacher clicks Next: (seconds from the click until the teacher's step ``expected`` was drawn, the seconds
    from then until each student's page had drawn it)."""
    clicked = time.perf_counter()
    teacher.locator(".st-key-lessons-next button").click()
    teacher.wait_for_function(f"expected => JSON.stringify(({DRAWN})()) === JSON.stringify(expected)",
                              arg=list(expected), timeout=120_000)
    moved = time.perf_counter()
    return moved - clicked, wait_all(students, expected, moved, timeout_s)


def wait_listening(page, timeout_s: float = 60) -> None:
    """Wait until the student's page holds its class stream (``ui/lessons/listen.py``: the component's JavaScript
    loads after the page's other elements are drawn), and check it opened one, not one per run."""
    page.wait_for_function("() => (globalThis.__classFollow || {}).source?.readyState === 1",
                           timeout=timeout_s * 1000)
    assert page.evaluate("globalThis.__classFollow.opened") == 1, "one stream for the page's life"


def choices(page) -> list[str]:
    """The step's question's choices, as the page shows them."""
    return [label.inner_text().strip() for label in page.locator(OPTIONS).all()]


def answer(pages: list, given: list[str], timeout_s: float) -> None:
    """Each page checks its answer in ``given`` and waits until the page says it went to the teacher."""
    for page, choice in zip(pages, given):
        page.locator(OPTIONS).filter(has_text=re.compile(f"^{re.escape(choice)}$")).click()
        try:
            page.get_by_role("button", name="Check").click(timeout=timeout_s * 1000)
            page.get_by_text("went to your teacher").wait_for(timeout=timeout_s * 1000)
        except Exception:
            dump_server_threads(page, where(page))
            raise


def wait_counted(teacher, shown: list[str], given: list[str], timeout_s: float = 10) -> None:
    """Wait until the teacher's chart counts the answers ``given`` for each of the choices ``shown``; an
    AssertionError with what the chart said if it does not within ``timeout_s``."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    from ui.lessons.listen import chart_text

    expected = chart_text(shown, {choice: given.count(choice) for choice in shown if given.count(choice)})
    try:
        teacher.wait_for_function(f"text => document.querySelector('{CLASS_ANSWERS}')?.innerText.trim() === text",
                                  arg=expected, timeout=timeout_s * 1000)
    except PlaywrightTimeout as error:
        said = teacher.locator(CLASS_ANSWERS).inner_text().strip()
        raise AssertionError(f"the teacher's chart says '{said}', not '{expected}'") from error
