"""The Generate page in a real browser, from a direct link: the bars, the cut-off and the tokens appear,
Next token adds one, nothing leaves localhost. Screenshot: artifacts/screenshots/generate.png."""

from __future__ import annotations

from urllib.parse import urlencode

from tests.e2e.conftest import (
    LAPTOP,
    assert_fits_the_laptop,
    external_requests,
    screenshot,
    sweep_views,
    tab,
    wait_until_idle,
)

VIEWS = [(name, tab(label)) for name, label in (  # the page's views after its first (the dark theme's sweep too)
    ("attention", "Attention and the causal mask"), ("lens", "Layer by layer"), ("beams", "Beams"))]


def test_a_direct_link_shows_the_bars_and_the_cut_off(app_url, page):
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.set_viewport_size(LAPTOP)  # a teacher's laptop: the page must fit it (issue 35 D)
    link = urlencode({"prompt": "She opened the", "mode": "sample", "top_k": "5", "top_p": "1"})
    page.goto(f"{app_url}/generate?{link}")
    page.wait_for_selector(".js-plotly-plot .barlayer", timeout=180_000)
    wait_until_idle(page)
    assert_fits_the_laptop(page, "generate")
    chart = page.locator(".js-plotly-plot").first.inner_text()
    assert "cut-off · top-k 5: 5 kept" in chart and "after temperature, top-k, top-p" in chart
    assert page.get_by_text("Tokens (0 generated)").is_visible()
    screenshot(page, "generate")
    page.get_by_role("button", name="Next token").click()
    wait_until_idle(page)
    page.get_by_text("Tokens (1 generated)").wait_for(timeout=60_000)
    assert "steps=1" in page.url
    assert page.locator('[data-testid="stException"]').count() == 0
    sweep_views(page, "generate", VIEWS)  # each view fits the laptop too
    assert external_requests(requests) == []
