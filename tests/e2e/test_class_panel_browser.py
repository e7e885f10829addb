"""The teacher's class panel at a projector's and a laptop's 1024 x 768 (issue 47 C): in presenter mode the class
code sits in the step's heading row and covers no control; without presenter mode the step starts above the fold;
under `make run`'s localhost-only server (as the tests' server listens) the panel says students cannot reach it."""

from __future__ import annotations

from tests.e2e.conftest import LAPTOP, screenshot, wait_until_idle

COVERED = """() => {
  const badge = document.querySelector('.class-corner').getBoundingClientRect();
  const shown = 'button, input, a, label, [role=radio], [role=tab], [role=combobox], h1, h2, h3, p';
  return [...document.querySelectorAll(shown)]
    .filter(el => !el.closest('.class-corner'))
    .map(el => [el, el.getBoundingClientRect()])
    .filter(([, r]) => r.width > 0 && r.height > 0 && r.left < badge.right && r.right > badge.left
                       && r.top < badge.bottom && r.bottom > badge.top)
    .map(([el]) => el.outerHTML.slice(0, 100));
}"""


def open_teacher(context, app_url, present: str):
    page = context.new_page()
    page.set_viewport_size(LAPTOP)
    page.goto(f"{app_url}/lessons?teach=1&lesson=attention&step=3&present={present}")
    page.wait_for_selector(".lesson-step[data-step='3']", state="attached", timeout=180_000)
    wait_until_idle(page, timeout_s=180)
    return page


def test_in_presenter_mode_the_class_code_covers_nothing(context, app_url):
    page = open_teacher(context, app_url, "1")
    try:
        assert page.locator("[data-room]").count() == 1
        assert page.evaluate(COVERED) == []
        screenshot(page, "class-panel-presenter")
    finally:
        page.close()


def test_without_presenter_mode_the_step_starts_above_the_fold(context, app_url):
    page = open_teacher(context, app_url, "0")
    try:
        heading = page.get_by_role("heading", name="3. Softmax turns scores into weights")
        box = heading.bounding_box()
        assert box is not None and box["y"] + box["height"] <= LAPTOP["height"], box
        assert page.evaluate(COVERED) == []
        assert "Students cannot reach this server" in page.inner_text("[data-testid=stMain]")
        assert page.locator("img[alt^='QR code for']").count() == 0  # no code that would not open on a phone
        screenshot(page, "class-panel-laptop")
    finally:
        page.close()
