"""The dark theme a user picks (issue 30 A). Every page and main view is checked with axe-core in both themes by the
1024 x 768 sweeps (conftest.assert_fits_the_laptop: the computer's dark mode switched in place, as Streamlit's default
theme choice follows it). Here the other way in: Dark chosen in Streamlit's settings menu (kept in the browser's
localStorage and read when the page loads), on the page with the most kinds of control (a primary button, radios,
sliders, number steppers), and then switched to light and back in place: the app's CSS (focus rings, a primary
button's label) follows, with no rerun.
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import (
    APP_BACKGROUND,
    LAPTOP,
    WHITE,
    assert_accessible,
    in_theme,
    screenshot,
    wait_until_idle,
)

# Streamlit's key for the theme a user chose (frontend utils: `stActiveTheme-${location.pathname}-v2`)
DARK = "localStorage.setItem('stActiveTheme-' + location.pathname + '-v2', JSON.stringify('Dark'))"
# The primary button's label and the focused element's ring, as drawn
DRAWN = """() => [getComputedStyle(document.querySelector('[data-testid=stBaseButton-primary]')).color,
                 getComputedStyle(document.activeElement).outlineColor]"""


@pytest.fixture(scope="module")
def dark(browser):
    context = browser.new_context(viewport=LAPTOP)
    context.add_init_script(DARK)
    yield context
    context.close()


def test_dark_chosen_in_the_settings_passes_axe_core_and_the_apps_colours_follow_a_switch(dark, app_url):
    page = dark.new_page()
    try:
        page.goto(f"{app_url}/finetune")
        page.wait_for_selector('[data-testid="stBaseButton-primary"]', timeout=180_000)
        wait_until_idle(page, timeout_s=180)
        assert page.evaluate(APP_BACKGROUND) != WHITE, "the dark theme is on"
        screenshot(page, "dark-finetune")
        assert_accessible(page, "finetune (dark, chosen)")
        assert page.evaluate(DRAWN)[0] == "rgb(0, 0, 0)"  # black on the dark theme's light red (white was 2.5:1)
    finally:
        page.close()


def test_a_switch_in_place_recolours_the_apps_own_css(page, app_url):
    page.set_viewport_size(LAPTOP)
    page.goto(f"{app_url}/finetune")
    page.wait_for_selector('[data-testid="stBaseButton-primary"]', timeout=180_000)
    wait_until_idle(page, timeout_s=180)
    page.locator('[data-testid="stBaseButton-primary"]').first.focus()  # then a key, so the focus ring shows
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Tab")
    # the label white on the light theme's dark red, the ring black; then black on light red and a white ring
    assert page.evaluate(DRAWN) == ["rgb(255, 255, 255)", "rgb(0, 0, 0)"]
    in_theme(page, "dark")
    assert page.evaluate(DRAWN) == ["rgb(0, 0, 0)", "rgb(255, 255, 255)"]
    in_theme(page, "light")
    assert page.evaluate(DRAWN) == ["rgb(255, 255, 255)", "rgb(0, 0, 0)"]
