"""Attention Explorer in Chromium: URL state, switching heads in the browser, the grid, embedded offline views,
markup as text."""

from urllib.parse import quote

from tests.e2e.conftest import LEGEND_PX, external_requests, screenshot, wait_until_idle

EVIL = "<script>alert(1)</script> <img onerror=alert(2)> The cat sat."  # 26 tokens: under the neuron view's 32


def open_page(page, app_url, query):
    page.goto(f"{app_url}/attention?{query}")
    wait_until_idle(page)


VIEW = ".ib-attention[data-head]"


def drawn(page):
    view = page.locator(VIEW)
    return view.get_attribute("data-view"), view.get_attribute("data-layer"), view.get_attribute("data-head")


def test_link_opens_layer_and_head_and_a_head_switch_updates_view_and_url(app_url, page):
    open_page(page, app_url, "layer=2&head=3")
    page.wait_for_selector(VIEW, timeout=120_000)
    assert drawn(page) == ("heatmap", "2", "3")
    assert "layer 2, head 3" in page.locator(".ib-title").inner_text()
    view = page.locator(VIEW)
    view.focus()
    view.press("ArrowRight")
    assert drawn(page) == ("heatmap", "2", "4")  # in the browser, at once
    page.wait_for_function("location.search.includes('head=4')", timeout=60_000)
    wait_until_idle(page)
    assert "head=4" in page.url and "layer=2" in page.url
    assert page.get_by_role("slider").count() == 0  # one set of controls: the view's own
    page.get_by_role("button", name="next layer").click()  # its stepper, also in the browser
    page.wait_for_selector(f"{VIEW}[data-layer='3'][data-head='4']", timeout=10_000)
    page.wait_for_function("location.search.includes('layer=3')", timeout=60_000)
    wait_until_idle(page)
    assert drawn(page) == ("heatmap", "3", "4") and "head=4" in page.url
    page.get_by_text("Aggregations").click()  # a view drawn on the server: its steppers hold the same head
    page.wait_for_selector('[data-testid="stNumberInputField"]', timeout=60_000)
    wait_until_idle(page)
    fields = page.locator('[data-testid="stNumberInputField"]')
    assert [fields.nth(0).input_value(), fields.nth(1).input_value()] == ["3", "4"]
    page.locator('[data-testid="stNumberInputStepUp"]').first.click()
    page.wait_for_function("location.search.includes('layer=4')", timeout=60_000)
    page.get_by_text("Head heatmap").click()
    page.wait_for_function("document.querySelector('.ib-attention')?.dataset.layer === '4'", timeout=60_000)
    wait_until_idle(page)
    assert drawn(page) == ("heatmap", "4", "4")
    page.locator(VIEW).scroll_into_view_if_needed()
    screenshot(page, "attention-heatmap")
    assert external_requests(page.requests_made) == []


def test_grid_click_opens_that_head(app_url, page):
    open_page(page, app_url, "view=grid")
    page.wait_for_selector(VIEW, timeout=120_000)
    assert drawn(page)[0] == "grid"
    screenshot(page, "attention-grid")
    canvas = page.locator(f"{VIEW} canvas").first
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    left = 36  # "L6" labels
    pitch = (box["width"] - LEGEND_PX - left) / 12
    page.mouse.click(box["x"] + left + 4.5 * pitch, box["y"] + 32 + 3.5 * pitch)  # layer 4, head 5
    assert drawn(page) == ("heatmap", "4", "5")
    page.wait_for_function("location.search.includes('view=heatmap')", timeout=60_000)
    wait_until_idle(page)
    assert "layer=4" in page.url and "head=5" in page.url
    assert drawn(page) == ("heatmap", "4", "5")
    assert page.get_by_role("radio", name="Head heatmap").is_checked()
    assert external_requests(page.requests_made) == []


def test_head_view_and_bertviz_views_draw_offline_with_markup_as_text(app_url, page):
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    open_page(page, app_url, f"view=lines&layer=2&head=3&text={quote(EVIL)}")
    page.wait_for_selector(f"{VIEW}[data-view=lines] .ib-lines canvas", timeout=60_000)
    assert drawn(page) == ("lines", "2", "3")
    tokens = page.locator(f"{VIEW} .ib-lines .ib-token").all_text_contents()  # each side's tokens, as text
    assert "<" in tokens and "script" in tokens and "cat" in tokens
    view = page.locator(VIEW)
    view.focus()
    view.press("ArrowRight")  # the next head, drawn in the browser
    page.wait_for_selector(f"{VIEW}[data-view=lines][data-head='4']", timeout=10_000)
    screenshot(page, "attention-head-view")

    page.get_by_text("bertviz views", exact=True).click()
    wait_until_idle(page)
    frame = page.frame_locator("iframe").first
    frame.locator("svg text", has_text="cat").first.wait_for(state="attached", timeout=60_000)
    assert frame.locator("svg line, svg path, svg rect").count() > 10
    # bertviz's own layer menu counts from 1, as the app does (its code writes 0-based option texts)
    assert frame.locator("select#layer option").all_inner_texts() == [str(n) for n in range(1, 7)]
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
