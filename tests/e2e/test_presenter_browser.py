"""Presenter mode (issue 34 B) in the browser, with the keyboard only: one page at 1024 x 768 opened by
``/lessons?present=1`` walks every step of every lesson with Page Down (a clicker's button), checking after each
press the step's marker (``data-lesson``, ``data-step``), that the step fits the window (nothing scrolls) and that a
question's Check sits beside its choices, and on each lesson's first step the projector's text sizes and 7:1
contrast (tests/e2e/test_projector_browser.py's measurement); then Page Up, Home, End, the help and blackout
overlays, that a key in a text box does nothing and that Esc leaves presenter mode. One page, one session: the
whole course once.

``walk`` and ``press`` are also used by bench/presenter_keys.py (the time from a key to the step drawn) and
bench/lesson_screenshots.py.
"""

from __future__ import annotations

import time

from tests.e2e.conftest import LAPTOP, chart_label_problems, screenshot
from tests.e2e.test_projector_browser import SIZES, contrast_below_7
from vizcore.lessons.lesson import load_lessons

COURSE = [(lesson.id, number) for lesson in load_lessons() for number in range(1, len(lesson.steps) + 1)]
STEP_TIMEOUT_S = 180  # a step's first view on a cold server (the live fine-tuning run) on a loaded machine

# The step on screen once the browser has drawn it: its marker (drawn last by the run), the run over, every chart
# of the step drawn (its SVG there), no placeholder left. [lesson, step] or null.
DRAWN = """() => {
  const app = document.querySelector('[data-testid=stApp]');
  if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return null;
  if (document.querySelector('[data-testid=stSkeleton], [data-testid=stStatusWidget]')) return null;
  const step = document.querySelector('.st-key-lessons-step');
  if (!step || [...step.querySelectorAll('[data-testid=stPlotlyChart]')].some(c => !c.querySelector('.main-svg')))
    return null;
  const marker = step.querySelector('.lesson-step');
  return marker ? [marker.dataset.lesson, Number(marker.dataset.step)] : null;
}"""

LESSON_PX = 28  # the step's title, claim and question
CHART_PX = 16  # the smallest chart text in presenter mode (issue 47 A)

# Steps whose charts still overlap or cut a label in presenter mode at 1024 x 768 (issue 47 A: none now, from 30
# steps and 1,354 problems). Each is asserted to still have a problem, so a fix takes its step off this list; every
# other step is asserted to have none.
CHARTS_NOT_YET_FITTING: set[tuple[str, int]] = set()

# The step's own text (its title, claim and question) smaller than LESSON_PX: "text (px)".
LESSON_TEXT = """px => [...document.querySelectorAll(
    '.st-key-lessons-step h1, .st-key-lessons-step [data-testid=stMarkdownContainer] p, '
    + '.st-key-lessons-question [data-testid=stWidgetLabel] p')]
  .filter(el => !el.closest('[data-testid=stCaptionContainer], .st-key-lessons-query-row'))
  .map(el => [el.innerText.slice(0, 40), parseFloat(getComputedStyle(el).fontSize)])
  .filter(([, size]) => size < px).map(([text, size]) => `${text} (${size} px)`)"""

# Nothing scrolls: Streamlit's main container (and the document) hold no more than they show.
FITS = """() => {
  const main = document.querySelector('[data-testid=stMain]');
  const root = document.scrollingElement;
  return {main: [main.scrollHeight, main.clientHeight], root: [root.scrollHeight, root.clientHeight]};
}"""


# A question's choices and its Check button: [radio's rect, button's rect] (left, top, right, bottom), null without.
QUESTION_ROW = """() => {
  const box = el => { const r = el.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const radio = document.querySelector('.st-key-lessons-question [data-testid=stRadio]');
  const button = document.querySelector('.st-key-lessons-question [data-testid=stButton] button');
  return radio && button ? [box(radio), box(button)] : null;
}"""


def check_beside_the_choices(page) -> bool:
    """Check sits right of the choices, within their height, not on a row of its own under them: at 1024 x 768 the
    row it took (72 px) went to the figures (heads step 1's map of 13 tokens: 95 -> 182 px high)."""
    found = page.evaluate(QUESTION_ROW)
    if found is None:
        return True
    (_, top, right, bottom), (b_left, b_top, _, b_bottom) = found
    return b_left >= right - 1 and b_top >= top - 1 and b_bottom <= bottom + 1


def at(page, timeout_s: float = STEP_TIMEOUT_S) -> tuple[str, int]:
    """The step drawn, once it is."""
    handle = page.wait_for_function(DRAWN, timeout=timeout_s * 1000)
    return tuple(handle.json_value())


def press(page, key: str, expected: tuple[str, int], timeout_s: float = STEP_TIMEOUT_S) -> float:
    """Press ``key`` and wait for step ``expected`` to be drawn; the seconds that took."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    start = time.perf_counter()
    page.keyboard.press(key)
    try:
        page.wait_for_function(f"expected => JSON.stringify(({DRAWN})()) === JSON.stringify(expected)",
                               arg=list(expected), timeout=timeout_s * 1000)
    except PlaywrightTimeout as error:
        state = page.evaluate("document.querySelector('[data-testid=stApp]')?.getAttribute('data-test-script-state')")
        marker = page.evaluate("[...document.querySelectorAll('.lesson-step')]"
                               ".map(m => [m.dataset.lesson, m.dataset.step])")
        raise AssertionError(f"{key} to {expected}: not drawn in {timeout_s:.0f} s; the app is {state}, the page shows "
                             f"{marker}, url {page.url}") from error
    return time.perf_counter() - start


def fits(page) -> bool:
    found = page.evaluate(FITS)
    return found["main"][0] <= found["main"][1] and found["root"][0] <= found["root"][1]


def test_a_clicker_walks_every_lesson_in_presenter_mode_and_each_step_fits_the_laptop(context, app_url):
    page = context.new_page()
    page.set_viewport_size(LAPTOP)
    start = time.perf_counter()
    try:
        page.goto(f"{app_url}/lessons?present=1")
        assert at(page) == COURSE[0]
        measured, labels = set(), []
        for i, (lesson, step) in enumerate(COURSE):
            if i:
                press(page, "PageDown", (lesson, step))  # from a lesson's last step: the next lesson's first
            assert page.locator('[data-testid="stException"]').count() == 0, (lesson, step)
            assert fits(page), (lesson, step, page.evaluate(FITS))
            assert check_beside_the_choices(page), (lesson, step, page.evaluate(QUESTION_ROW))
            problems = chart_label_problems(page, CHART_PX)
            if ((lesson, step) in CHARTS_NOT_YET_FITTING) != bool(problems):  # said once the walk is over: all of them
                labels.append(f"{lesson} {step}: " + ("; ".join(problems[:4]) if problems else
                                                      "fits its labels now: take it off CHARTS_NOT_YET_FITTING"))
            if lesson not in measured:  # each lesson's first step: the projector's sizes and contrast
                measured.add(lesson)
                sizes = page.evaluate(SIZES)
                assert (sizes["small"], sizes["body"], sizes["labels"]) == ([], [], []), (lesson, sizes)
                assert page.evaluate(LESSON_TEXT, LESSON_PX) == [], lesson
                assert contrast_below_7(page) == [], lesson
        assert labels == [], "\n".join(labels)
        screenshot(page, "presenter-last-step")
        page.keyboard.press("PageDown")  # the course's last step: nothing further, nothing moves
        page.wait_for_timeout(1500)
        assert at(page) == COURSE[-1]
        last, total = COURSE[-1]
        press(page, "Home", (last, 1))
        press(page, "End", (last, total))
        press(page, "ArrowLeft", (last, total - 1))
        press(page, "Space", (last, total))
        assert page.evaluate("document.querySelector('[data-presenter-keys]').dataset.presenterKeys") == "1"
        assert "present=1" in page.url and f"lesson={last}" in page.url

        page.keyboard.press("?")  # help: an overlay listing the keys; any key closes it and does nothing else
        assert "Page Down" in page.locator("#lesson-keys-help").inner_text()
        page.keyboard.press("ArrowLeft")
        assert page.locator("#lesson-keys-help").count() == 0
        page.keyboard.press("b")  # blackout: a black overlay over the whole window; B again removes it
        assert page.locator("#lesson-blackout").evaluate(
            "el => getComputedStyle(el).backgroundColor === 'rgb(0, 0, 0)' && el.getBoundingClientRect().height >= 768")
        page.keyboard.press("b")
        assert page.locator("#lesson-blackout").count() == 0
        page.wait_for_timeout(1500)
        assert at(page) == (last, total)

        # a text box keeps its keys (the sidebar's sentence, opened with its »)
        page.locator('[data-testid="stExpandSidebarButton"]').click()
        box = page.get_by_label("Sentence (the lesson's, or type your own)")
        box.click()
        box.press("Home")
        box.press("PageUp")
        page.wait_for_timeout(1500)
        assert at(page) == (last, total)
        box.evaluate("el => el.blur()")

        page.keyboard.press("Escape")  # leaves presenter mode: the link without present=1
        page.wait_for_function("() => !location.search.includes('present=1')", timeout=60_000)
        # the link changes during the run; the run's stale keys element goes when it finishes
        page.locator(".st-key-lessons-keys").wait_for(state="detached", timeout=30_000)
    finally:
        page.close()
        print(f"presenter walk: {len(COURSE)} steps in {time.perf_counter() - start:.0f} s")

