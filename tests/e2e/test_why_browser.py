"""The Why? page in a real browser: click heads and watch the bars move; the patching map; nothing leaves
localhost. Screenshots of each part go to artifacts/screenshots/why-*.png."""

from __future__ import annotations

from urllib.parse import urlencode

from tests.e2e.conftest import external_requests, screenshot, wait_until_idle

BARS = ".js-plotly-plot .barlayer"
HEATMAP = ".js-plotly-plot .heatmaplayer"


def open_why(page, app_url: str, selector: str, **params: str) -> list[str]:
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(f"{app_url}/why?{urlencode(params)}")
    page.wait_for_selector(selector, timeout=180_000)
    wait_until_idle(page)
    return requests


def bar_chart_text(page) -> str:
    return page.locator(".js-plotly-plot").first.inner_text()


def test_clicking_heads_moves_the_bars_and_the_link(app_url, page):
    requests = open_why(page, app_url, BARS, text="The capital of France is [MASK].")
    assert page.get_by_text("No head is switched off").is_visible()
    before = bar_chart_text(page)
    assert "paris" in before and "all heads" in before
    screenshot(page, "why-ablation-none")
    for head in ("4", "6"):  # button group 0 is the part selector, 1 to 6 the layers
        page.locator('[data-testid="stButtonGroup"]').nth(6).get_by_role("button", name=head, exact=True).click()
        wait_until_idle(page)
    assert "heads=6%3A4%2C6%3A6" in page.url or "heads=6:4,6:6" in page.url
    assert bar_chart_text(page) != before
    assert page.get_by_text("How far each head's attention moved").is_visible()
    screenshot(page, "why-ablation")
    assert page.locator('[data-testid="stException"]').count() == 0
    assert external_requests(requests) == []


def test_the_patching_map_shows_where_the_answer_comes_back(app_url, page):
    requests = open_why(page, app_url, HEATMAP, part="patching")
    text = page.locator(".js-plotly-plot").first.inner_text()
    assert "italy → france" in text and "embeddings" in text and "layer 6" in text
    assert page.get_by_text("Difference to recover").is_visible()
    screenshot(page, "why-patching")
    page.get_by_role("button", name="John / Mary").click()
    wait_until_idle(page)
    assert "mary → john" in page.locator(".js-plotly-plot").first.inner_text()
    assert page.locator('[data-testid="stException"]').count() == 0
    assert external_requests(requests) == []


def test_head_importance_runs_in_the_background_and_draws_both_maps(app_url, page):
    requests = open_why(page, app_url, '[data-testid="stButton"] button:has-text("Start")', part="importance",
                        count="3")
    page.get_by_role("button", name="Start").click()
    page.get_by_text("Pruning heads least important first").first.wait_for(timeout=240_000)
    wait_until_idle(page)
    charts = page.locator(".js-plotly-plot").all_inner_texts()
    assert any("Ablation: what removing the head alone costs" in c for c in charts)
    assert any("Michel et al.'s importance" in c for c in charts)
    assert page.get_by_text("Spearman's ρ").first.is_visible()
    screenshot(page, "why-importance")
    assert page.locator('[data-testid="stException"]').count() == 0
    assert external_requests(requests) == []


def test_attribution_shows_four_methods_and_completeness(app_url, page):
    requests = open_why(page, app_url, BARS, part="attribution", text="The capital of France is Paris.",
                        output="paris")  # the link's answer (by default the model's own, which may differ)
    assert page.get_by_text("Completeness of integrated gradients").is_visible()
    body = page.inner_text("body")
    for method in ("Integrated gradients", "Gradient × input", "Occlusion (leave one out)", "Attention rollout"):
        assert method in body
    assert "f = P(paris)" in body.replace("Paris", "paris")
    screenshot(page, "why-attribution")
    assert page.locator('[data-testid="stException"]').count() == 0
    assert external_requests(requests) == []
