"""The Translate page in a real browser, from direct links: the answer, the step's bars and the three attentions
appear; Previous moves the step and the address bar follows; an impossible date is called outside training;
nothing leaves localhost. Screenshot: artifacts/screenshots/translate.png."""

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
    ("attentions", "The three attentions"), ("alignment", "Alignment per head"), ("train", "Train from scratch"))]


def test_a_direct_link_shows_the_answer_the_steps_and_the_three_attentions(app_url, page):
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    query = {"source": "the twenty first of march nineteen ninety nine", "step": "5", "head": "2"}
    page.set_viewport_size(LAPTOP)  # a teacher's laptop: the page must fit it (issue 35 D)
    page.goto(f"{app_url}/translate?{urlencode(query)}")
    page.wait_for_selector(".js-plotly-plot .barlayer", timeout=120_000)
    wait_until_idle(page)
    page.get_by_role("heading", name="Output: 1999-03-21").wait_for(timeout=30_000)
    page.get_by_text("Step 5 of 11.").wait_for(timeout=30_000)
    assert_fits_the_laptop(page, "translate")
    for title in ("Step 5: the next character", "Cross-attention so far · layer 1, head 2"):
        page.locator(".js-plotly-plot .gtitle", has_text=title).first.wait_for(timeout=30_000)
    screenshot(page, "translate")
    page.get_by_role("tab", name="The three attentions").click()
    for title in ("Encoder self-attention", "Masked self-attention", "Cross-attention · layer 1, head 2"):
        page.locator(".js-plotly-plot .gtitle", has_text=title).first.wait_for(timeout=30_000)
    page.get_by_role("tab", name="Decoding, step by step").click()
    page.get_by_role("button", name="◀ Previous").click()
    wait_until_idle(page)
    page.get_by_text("Step 4 of 11.").wait_for(timeout=30_000)
    assert "step=4" in page.url and "head=2" in page.url
    sweep_views(page, "translate", VIEWS)  # each view fits the laptop too

    page.goto(f"{app_url}/translate?{urlencode({'source': 'the thirty first of february two thousand'})}")
    page.get_by_text("Outside what the model was trained on.").wait_for(timeout=60_000)
    wait_until_idle(page)
    page.get_by_text("February has 29 days in 2000").wait_for(timeout=30_000)
    assert page.locator('[data-testid="stException"]').count() == 0
    assert external_requests(requests) == []
