"""Positional encoding and Attention, step by step in a real browser: numbers on screen, bad input, offline."""

from tests.e2e.conftest import external_requests, screenshot, wait_until_idle


def _open(page, app_url, path):
    page.goto(f"{app_url}/{path}")
    page.wait_for_selector(".js-plotly-plot .heatmaplayer", timeout=120_000)
    wait_until_idle(page)


def test_positional_page_shows_the_worked_example_and_rejects_an_odd_d_model(app_url, page):
    _open(page, app_url, "positional")
    assert page.get_by_text("PE(5, 0) = sin 5 ≈ -0.959").is_visible()
    assert page.get_by_text("0.283662").first.is_visible()
    assert page.locator(".js-plotly-plot").count() >= 6
    assert screenshot(page, "positional").stat().st_size > 20_000
    box = page.get_by_role("spinbutton", name="d_model (dimensions, even)")
    box.fill("7")
    box.press("Enter")
    page.get_by_text("d_model must be even").wait_for(timeout=60_000)
    wait_until_idle(page)
    screenshot(page, "positional-bad-d-model")
    assert external_requests(page.requests_made) == []


def test_step_by_step_page_proves_each_step_and_walks_the_layer(app_url, page):
    _open(page, app_url, "step-by-step")
    assert page.get_by_text("≤ 1e-05 ✓").count() >= 3
    assert page.get_by_text("max |Δ| layer 3 output").is_visible()  # every page opens on the middle layer
    screenshot(page, "step-by-step")
    page.get_by_role("tab", name="The layer, step by step").click()
    page.get_by_text("12. Residual + LayerNorm = output of layer 3").wait_for(timeout=60_000)
    wait_until_idle(page)
    assert page.get_by_text("A = softmax(QKᵀ/√32 + mask), head 1 · shape 16 × 16").count() >= 1
    screenshot(page, "step-by-step-layer")
    page.get_by_role("tab", name="Word order").click()
    wait_until_idle(page)
    assert page.get_by_text("the same, with position embeddings").is_visible()
    screenshot(page, "step-by-step-word-order")
    assert external_requests(page.requests_made) == []
