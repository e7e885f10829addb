"""The Embeddings page in a real browser: one head's queries and keys drawn as points; clicking a query opens
its sentence in the Attention Explorer at that layer and head; nothing leaves localhost. Screenshot:
artifacts/screenshots/embeddings-queries.png."""

from __future__ import annotations

from urllib.parse import urlencode

from tests.e2e.conftest import (
    LAPTOP,
    assert_fits_the_laptop,
    external_requests,
    screenshot,
    segment,
    sweep_views,
    wait_until_idle,
)
from ui.embeddings.page import SENSE_TEXTS

POINTS = ".js-plotly-plot .scatterlayer .trace .point"


VIEWS = [(name, segment(label)) for name, label in (  # the views after the first (the dark theme's sweep too)
    ("similarity", "Sentence similarity"), ("search", "Semantic search"), ("contexts", "One word, many contexts"),
    ("tokens", "Token map"))]


def test_clicking_a_query_opens_its_sentence_in_the_explorer(app_url, page):
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.set_viewport_size(LAPTOP)  # a teacher's laptop: the page must fit it (issue 35 D)
    page.goto(f"{app_url}/embeddings?{urlencode({'view': 'queries', 'qk_layer': '2', 'qk_head': '3'})}")
    page.wait_for_selector(POINTS, timeout=180_000)
    wait_until_idle(page)
    assert page.get_by_text("Does distance stand for attention?").is_visible()
    assert "Head 2.3:" in page.locator(".js-plotly-plot").first.inner_text()
    screenshot(page, "embeddings-queries")
    assert_fits_the_laptop(page, "embeddings")
    sweep_views(page, "embeddings", VIEWS)  # each view fits the laptop too
    page.goto(f"{app_url}/embeddings?{urlencode({'view': 'queries', 'qk_layer': '2', 'qk_head': '3'})}")
    page.wait_for_selector(POINTS, timeout=60_000)  # the link again: the window at the top, as a user opens it
    wait_until_idle(page)

    queries = page.locator(".js-plotly-plot .scatterlayer .trace").nth(0).locator(".point")  # trace 0: queries
    queries.nth(5).click(force=True)
    page.wait_for_url("**/attention?**", timeout=60_000)
    wait_until_idle(page)
    assert "layer=2" in page.url and "head=3" in page.url
    sentence = page.locator('[data-testid="stSidebar"] textarea').first.input_value()
    assert sentence in SENSE_TEXTS
    view = page.locator(".ib-attention[data-head]").first  # the Explorer's client-side attention view
    view.wait_for(timeout=60_000)
    assert (view.get_attribute("data-layer"), view.get_attribute("data-head")) == ("2", "3")
    assert page.locator('[data-testid="stException"]').count() == 0
    assert external_requests(requests) == []
