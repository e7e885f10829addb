"""Fine-tuning lab in Chromium: live training, a second user staying responsive and waiting in the server's one
job queue, closing a tab, Stop, the tiny Transformer."""

import re
import time

from tests.e2e.conftest import external_requests, screenshot, wait_until_idle

PROGRESS = '[data-testid="stProgress"]'


def stop_button(page):
    # Streamlit's own header also has a "Stop" (the running script's); ours is inside the tabs.
    return page.get_by_test_id("stTabs").get_by_role("button", name="Stop", exact=True)


def open_lab(page, app_url):
    # 1400 x 1000 (the other tests' window): a 2600-px-tall one drew 2.6 times the pixels at every poll of the
    # training (each second), and Playwright scrolls each control into view before it clicks
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{app_url}/finetune")
    page.get_by_role("button", name="Train", exact=True).wait_for(timeout=120_000)
    wait_until_idle(page)


def current_step(page) -> int:
    text = page.locator(PROGRESS).first.inner_text()
    match = re.search(r"step (\d+)/", text)
    return int(match.group(1)) if match else -1


def test_a_second_user_stays_responsive_waits_in_line_starts_when_the_first_tab_closes_and_stop_keeps_the_model(
        app_url, context):
    """The server's one job queue with two users: while the first trains, the second's pages answer; the
    second's own run waits in line, showing its place; closing the first tab (not Stop) ends its run, so the
    second starts by itself within seconds; Stop then ends the second's run and keeps what it trained."""
    first = context.new_page()  # a tab
    first.requests_made = []
    first.on("request", lambda request: first.requests_made.append(request.url))
    open_lab(first, app_url)
    first.get_by_text("full model", exact=True).click()  # every weight moves: minutes per epoch, not seconds
    epochs = first.get_by_label("Epochs")  # long enough that no machine finishes before the tab closes
    epochs.fill("50")
    epochs.press("Enter")
    wait_until_idle(first)
    first.get_by_role("button", name="Train", exact=True).click()
    first.wait_for_function(f"document.querySelector('{PROGRESS}')?.innerText.includes('epoch')", timeout=120_000)
    first_step = current_step(first)

    second = context.new_page()  # another tab: its own session
    second.requests_made = []
    second.on("request", lambda request: second.requests_made.append(request.url))
    try:
        started = time.monotonic()
        second.goto(app_url)
        second.wait_for_selector(".ib-attention[data-head]", timeout=60_000)  # Home's attention view
        second.get_by_role("button", name="…the dog chased…").click()
        second.wait_for_function(
            "document.querySelector('.ib-attention canvas')?.getAttribute('aria-label').includes('chased')",
            timeout=60_000)
        responsive_s = time.monotonic() - started
        assert stop_button(first).is_enabled(), "training ended before the second user was done: proves nothing"
        assert responsive_s < 45, f"the second user waited {responsive_s:.0f} s"
        screenshot(second, "finetune-second-user")
        print(f"second user: Home heatmap and an example redraw in {responsive_s:.1f} s while training")

        first.wait_for_function(  # the bar moves with no interaction: the page polls the job
            f"(document.querySelector('{PROGRESS}')?.innerText.match(/step (\\d+)\\//) || [0, -1])[1] > {first_step}",
            timeout=60_000)
        screenshot(first, "finetune-training")

        open_lab(second, app_url)
        second.get_by_role("button", name="Train", exact=True).click()
        second.get_by_text("1st in line").wait_for(timeout=60_000)
        assert stop_button(second).is_enabled()
        screenshot(second, "jobs-waiting-in-line")

        first.close()  # the tab is gone: its websocket closes, and nothing will ever read its run
        closed = time.monotonic()
        second.get_by_text("1st in line").wait_for(state="detached", timeout=90_000)
        waited_s = time.monotonic() - closed
        print(f"the second session's run started {waited_s:.1f} s after the first tab closed")
        # 5 s of grace, a 1 s check, the step under way (seconds on a loaded 2-core machine; 8.7 s to 15 s
        # measured here): far less than the minutes the 50-epoch run would hold the queue if it went on
        assert waited_s < 30, f"the closed tab's run held the queue for {waited_s:.0f} s"
        second.wait_for_function(f"document.querySelector('{PROGRESS}')?.innerText.includes('epoch')",
                                 timeout=90_000)  # and it trains

        stop_button(second).click()
        second.get_by_text("Stopped: the results below").wait_for(timeout=90_000)
        second.get_by_text("Every held-out example").wait_for(timeout=120_000)
        wait_until_idle(second)
        assert second.get_by_text("Held-out accuracy").first.is_visible()
        assert second.locator(".vega-embed").count() >= 1  # the altair curves
        screenshot(second, "finetune-results")
        assert external_requests(first.requests_made + second.requests_made) == []
    finally:
        second.close()
        if not first.is_closed():
            first.close()


def test_tiny_transformer_heatmaps_refresh_while_it_trains_and_stop_keeps_the_model(app_url, page):
    open_lab(page, app_url)
    page.get_by_role("tab", name="Tiny Transformer from scratch").click()
    steps = page.get_by_label("Steps")
    steps.fill("3000")  # more than any machine runs during the test: Stop ends it, whatever the speed
    steps.press("Enter")
    wait_until_idle(page)
    page.get_by_role("button", name="Train from scratch").click()
    titles: list[str] = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(set(titles)) < 3:
        for title in page.eval_on_selector_all(".gtitle", "nodes => nodes.map(n => n.textContent)"):
            if "at step" in title and title not in titles:
                titles.append(title)
        time.sleep(0.3)
    assert len(set(titles)) >= 3, f"the heatmaps did not refresh during training: {titles}"
    page.locator(".st-key-finetune-tiny_stop button").click()
    page.get_by_text("(stopped)").wait_for(timeout=60_000)
    wait_until_idle(page)
    bar = page.locator(PROGRESS).first.inner_text()
    stopped_at = int(re.search(r"step (\d+)/3000", bar).group(1))
    assert 0 < stopped_at < 3000, bar
    body = page.locator("body").inner_text()
    assert "Replay: attention at step" in body and "Model output" in body
    screenshot(page, "finetune-tiny-transformer")
