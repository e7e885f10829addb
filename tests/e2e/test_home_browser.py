"""Home in a real browser: the client-side view appears (no plotly.js), arrow keys switch heads in the browser and
the URL follows, example buttons work, markup stays text, nothing leaves localhost."""

import time

from tests.e2e.conftest import LEGEND_PX, external_requests, screenshot, wait_until_idle

VIEW = ".ib-attention[data-head]"


def title(page):
    return page.locator(".ib-attention .ib-title").first.inner_text()


def test_home_shows_the_heatmap_without_plotly_an_example_redraws_and_nothing_leaves_localhost(app_url, page):
    started = time.monotonic()
    page.goto(app_url)
    page.wait_for_selector(VIEW, timeout=120_000)
    seconds = time.monotonic() - started
    wait_until_idle(page)
    assert page.get_by_text("See inside BERT-style Transformers").is_visible()
    assert "layer 3, head 1" in title(page)
    view = page.locator(VIEW)
    assert (view.get_attribute("data-layer"), view.get_attribute("data-head")) == ("3", "1")
    assert not [url for url in page.requests_made if "plotly" in url.lower()]  # E: no plotly.js for Home
    path = screenshot(page, "home")
    assert path.stat().st_size > 20_000
    print(f"heatmap visible after {seconds:.1f} s")

    # an example button redraws for its sentence (on the same page: one page load for both)
    page.get_by_role("button", name="…the dog chased…").click()
    page.wait_for_function(
        "document.querySelector('.ib-attention .ib-title')?.innerText.includes('11 tokens')", timeout=60_000)
    wait_until_idle(page)
    assert page.locator("textarea").first.input_value() == "The cat that the dog chased was brown."
    screenshot(page, "home-example")
    assert page.requests_made, "the page made no requests at all?"
    assert external_requests(page.requests_made) == []  # nothing, in all that, left localhost


def test_arrow_keys_switch_in_the_browser_and_the_url_follows(app_url, page):
    page.goto(f"{app_url}/?layer=2&head=3")
    page.wait_for_selector(VIEW, timeout=120_000)
    wait_until_idle(page)
    view = page.locator(VIEW)
    assert (view.get_attribute("data-layer"), view.get_attribute("data-head")) == ("2", "3")
    view.focus()
    view.press("ArrowRight")
    assert view.get_attribute("data-head") == "4"  # drawn at once, before any server round trip
    view.press("ArrowDown")
    assert view.get_attribute("data-layer") == "3" and "layer 3, head 4" in title(page)
    try:
        page.wait_for_function("location.search.includes('layer=3') && location.search.includes('head=4')",
                               timeout=60_000)
    except Exception as error:  # say what the page showed and said (once seen on CI: the link read head=3)
        shown = (view.get_attribute("data-layer"), view.get_attribute("data-head"), title(page))
        raise AssertionError(f"the link did not follow: {page.url}; the view shows {shown}") from error
    wait_until_idle(page)
    assert (view.get_attribute("data-layer"), view.get_attribute("data-head")) == ("3", "4")
    page.reload()
    page.wait_for_selector(VIEW, timeout=120_000)
    assert "layer 3, head 4" in title(page)


def test_user_markup_is_shown_as_text_and_never_runs(app_url, page):
    page.goto(app_url)
    page.wait_for_selector(VIEW, timeout=120_000)
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    box = page.locator("textarea").first
    box.fill("<img src=x onerror=alert(1)> <script>alert(2)</script> hello")
    box.press("Control+Enter")
    page.wait_for_function(
        "document.querySelector('.ib-attention .ib-title')?.innerText.includes('30 tokens')", timeout=60_000)
    wait_until_idle(page)
    canvas = page.locator(".ib-attention canvas").first
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    # the last cell, [SEP] -> [SEP]: 10 px left of the legend, 12 px above the bottom
    page.mouse.move(box["x"] + box["width"] - LEGEND_PX - 10, box["y"] + box["height"] - 12)
    assert page.locator(".ib-tip").inner_text().startswith("query: [SEP]\nkey: [SEP]\nweight: ")
    label = canvas.get_attribute("aria-label")  # the tokens the canvas drew, as plain text
    assert "< im ##g sr ##c = x one ##rro ##r = alert ( 1 ) > < script > alert ( 2 ) < / script > hello" in label
    assert dialogs == []
    assert page.locator("img[src='x']").count() == 0

