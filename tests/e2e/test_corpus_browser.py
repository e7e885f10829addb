"""The Corpus page in a real browser: the demo's role map, the relation bars and the search tab with its link's
relation and head; nothing leaves localhost. Screenshots: artifacts/screenshots/corpus-roles.png,
corpus-relations.png, corpus-search.png."""

from __future__ import annotations

from urllib.parse import urlencode

from tests.e2e.conftest import external_requests, screenshot, wait_until_idle

HEATMAP = ".js-plotly-plot .heatmaplayer"


def test_the_demo_roles_relations_and_search(app_url, page):
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(f"{app_url}/corpus?{urlencode({'relation': 'dobj', 'layer': '3', 'head': '1'})}")
    page.wait_for_selector(HEATMAP, timeout=180_000)
    wait_until_idle(page)
    assert page.get_by_text("1,119").first.is_visible()  # sentences of the demo
    roles = page.locator(".js-plotly-plot").first.inner_text()
    assert "What each head does over the corpus" in roles and "syntactic" in roles
    screenshot(page, "corpus-roles")

    page.get_by_role("tab", name="Relations").click()
    wait_until_idle(page)
    page.wait_for_selector(".js-plotly-plot .barlayer", timeout=60_000)
    assert "Best head vs best fixed offset" in page.get_by_role("tabpanel").inner_text()
    screenshot(page, "corpus-relations")

    page.get_by_role("tab", name="Search").click()
    wait_until_idle(page)
    panel = page.get_by_role("tabpanel")
    assert "head 3-1 puts the most weight" in panel.inner_text() and "dobj" in panel.inner_text()
    screenshot(page, "corpus-search")
    assert page.locator('[data-testid="stException"]').count() == 0
    assert external_requests(requests) == []
