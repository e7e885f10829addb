"""WCAG 2.2 AA in the dark theme (issue 30 A): axe-core on every page, opened by its link, and on each of its main
views, as the light theme is checked by the 1024 x 768 sweeps (conftest.assert_fits_the_laptop). The dark theme
is the one a user picks in Streamlit's settings (its choice kept in the browser's localStorage, read when the page
loads), so the session's server serves both themes. A view is opened as a user opens it (a click); nothing else
is measured here: the layout is the light theme's, which the sweeps measure.
"""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from tests.e2e import test_embeddings_browser, test_generate_browser, test_translate_browser
from tests.e2e.conftest import LAPTOP, assert_accessible, open_view, screenshot, wait_until_idle
from tests.e2e.test_direct_links_browser import CASES, VIEWS

# Streamlit's key for the theme a user chose (frontend utils: `stActiveTheme-${location.pathname}-v2`)
DARK = "localStorage.setItem('stActiveTheme-' + location.pathname + '-v2', JSON.stringify('Dark'))"
PAGES = {name: (path, params, VIEWS.get(name, [])) for name, (path, params, *_) in CASES.items()}
PAGES.update({"generate": ("/generate", {}, test_generate_browser.VIEWS),
              "translate": ("/translate", {}, test_translate_browser.VIEWS),
              "embeddings": ("/embeddings", {}, test_embeddings_browser.VIEWS)})


@pytest.fixture(scope="module")
def dark(browser):
    context = browser.new_context(viewport=LAPTOP)
    context.add_init_script(DARK)
    yield context
    context.close()


@pytest.mark.parametrize("name", list(PAGES))
def test_every_page_and_view_passes_axe_core_in_the_dark_theme(dark, app_url, name):
    path, params, views = PAGES[name]
    page = dark.new_page()
    try:
        page.goto(f"{app_url}{path}" + (f"?{urlencode(params)}" if params else ""))
        page.wait_for_selector('[data-testid="stMainBlockContainer"] h1', timeout=180_000)
        wait_until_idle(page, timeout_s=180)
        background = page.evaluate("getComputedStyle(document.querySelector('[data-testid=stApp]')).backgroundColor")
        assert background != "rgb(255, 255, 255)", "the dark theme is on"
        screenshot(page, f"dark-{name}")
        assert_accessible(page, f"{name} (dark)")
        for view, (kind, control) in views:
            open_view(page, f"{name} {view}", kind, control)
            assert_accessible(page, f"{name}-{view} (dark)")
    finally:
        page.close()
