"""Attention Explorer in Chromium: URL state, switching heads, the grid, embedded offline views, markup as text."""

from urllib.parse import quote

from tests.e2e.conftest import external_requests, screenshot, wait_until_idle

HEATMAP = ".js-plotly-plot .heatmaplayer"
EVIL = "<script>alert(1)</script> <img onerror=alert(2)> The cat sat."  # 26 tokens: under the neuron view's 32


def open_page(page, app_url, query):
    page.goto(f"{app_url}/attention?{query}")
    wait_until_idle(page)


def chart_text(page):
    return page.locator(".js-plotly-plot").first.inner_text()


def test_link_opens_layer_and_head_and_a_head_switch_updates_chart_and_url(app_url, page):
    open_page(page, app_url, "layer=2&head=3")
    page.wait_for_selector(HEATMAP, timeout=120_000)
    assert "layer 2, head 3" in chart_text(page)
    slider = page.get_by_role("slider").nth(1)  # layer, head
    slider.focus()
    slider.press("ArrowRight")
    page.wait_for_function("document.querySelector('.js-plotly-plot')?.innerText.includes('head 4')",
                           timeout=60_000)
    wait_until_idle(page)
    assert "head=4" in page.url and "layer=2" in page.url
    screenshot(page, "attention-heatmap")
    assert external_requests(page.requests_made) == []


def test_grid_click_opens_that_head(app_url, page):
    open_page(page, app_url, "view=grid")
    page.wait_for_selector(HEATMAP, timeout=120_000)
    screenshot(page, "attention-grid")
    page.locator(".js-plotly-plot .scatterlayer .point").nth(3 * 12 + 4).click(force=True)  # layer 4, head 5
    page.wait_for_function("location.search.includes('view=heatmap')", timeout=60_000)
    wait_until_idle(page)
    assert "layer=4" in page.url and "head=5" in page.url
    assert "layer 4, head 5" in chart_text(page)
    assert external_requests(page.requests_made) == []


def test_head_view_and_bertviz_views_draw_offline_with_markup_as_text(app_url, page):
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    open_page(page, app_url, f"view=lines&text={quote(EVIL)}")
    frame = page.frame_locator("iframe").first
    frame.locator("svg line").first.wait_for(state="attached", timeout=60_000)
    tokens = frame.locator("text.token").all_text_contents()
    assert "<" in tokens and "script" in tokens and "cat" in tokens
    assert frame.locator("img").count() == 0
    screenshot(page, "attention-head-view")

    page.get_by_text("bertviz views", exact=True).click()
    wait_until_idle(page)
    frame = page.frame_locator("iframe").first
    frame.locator("svg text", has_text="cat").first.wait_for(state="attached", timeout=60_000)
    assert frame.locator("svg line, svg path, svg rect").count() > 10
    screenshot(page, "attention-bertviz-head")
    page.get_by_text("Neuron view", exact=True).click()
    wait_until_idle(page)
    label = page.frame_locator("iframe").first.locator("svg text", has_text="cat").first
    label.wait_for(state="attached", timeout=60_000)
    screenshot(page, "attention-bertviz-neuron")

    assert dialogs == []
    assert page.locator("img[onerror]").count() == 0
    assert external_requests(page.requests_made) == []


def test_statistics_view_shows_the_table_and_the_cls_sep_chart(app_url, page):
    open_page(page, app_url, "view=stats")
    page.wait_for_selector('[data-testid="stDataFrame"]', timeout=60_000)
    page.wait_for_selector(".js-plotly-plot", timeout=60_000)
    assert "[CLS] and [SEP] per layer" in page.locator(".js-plotly-plot").first.inner_text()
    screenshot(page, "attention-stats")
    assert external_requests(page.requests_made) == []
