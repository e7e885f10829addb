"""Home in a real browser: the heatmap appears, example buttons work, nothing leaves localhost."""

import time

from tests.e2e.conftest import external_requests, screenshot, wait_until_idle


def test_home_shows_the_heatmap_in_chromium(app_url, page):
    started = time.monotonic()
    page.goto(app_url)
    page.wait_for_selector(".js-plotly-plot .heatmaplayer", timeout=120_000)
    seconds = time.monotonic() - started
    wait_until_idle(page)
    assert page.get_by_text("See inside BERT-style Transformers").is_visible()
    assert page.locator(".js-plotly-plot").first.is_visible()
    assert "layer 3, head 1" in page.locator(".js-plotly-plot").first.inner_text()
    path = screenshot(page, "home")
    assert path.stat().st_size > 20_000
    print(f"heatmap visible after {seconds:.1f} s")


def test_example_button_redraws_for_the_new_sentence(app_url, page):
    page.goto(app_url)
    page.wait_for_selector(".js-plotly-plot .heatmaplayer", timeout=120_000)
    wait_until_idle(page)
    page.get_by_role("button", name="…the dog chased…").click()
    page.wait_for_function(
        "document.querySelector('.js-plotly-plot')?.innerText.includes('chased')", timeout=60_000)
    wait_until_idle(page)
    assert page.locator("textarea").first.input_value() == "The cat that the dog chased was brown."
    screenshot(page, "home-example")


def test_user_markup_is_shown_as_text_and_never_runs(app_url, page):
    page.goto(app_url)
    page.wait_for_selector(".js-plotly-plot .heatmaplayer", timeout=120_000)
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    box = page.locator("textarea").first
    box.fill("<img src=x onerror=alert(1)> <script>alert(2)</script> hello")
    box.press("Control+Enter")
    page.wait_for_function(
        "document.querySelector('.js-plotly-plot')?.innerText.includes('hello')", timeout=60_000)
    wait_until_idle(page)
    assert dialogs == []
    assert page.locator("img[src='x']").count() == 0


def test_no_request_leaves_localhost(app_url, page):
    page.goto(app_url)
    page.wait_for_selector(".js-plotly-plot .heatmaplayer", timeout=120_000)
    wait_until_idle(page)
    assert page.requests_made, "the page made no requests at all?"
    assert external_requests(page.requests_made) == []
