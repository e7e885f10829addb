"""Direct links on a fresh plain ``streamlit run app.py`` (issue 15, defect 1): each page's URL opened
as the first request of a new session shows that page inside the app (its navigation and shared
sidebar), with the link's query parameters applied and no "Page not found" dialog; in a 1024 x 768
window, where each page and each of its main views also fits (conftest.assert_fits_the_laptop and
sweep_views; Generate, Translate and Embeddings are checked by their own tests).

One server for the file, started with ``python -m streamlit run app.py`` (what hosts and containers run,
not ``make run``'s ``ui.launch``), and its very first request is a deep link with query parameters
(``FIRST``): Streamlit decides whether a ``pages/`` folder makes an app a legacy (v1) multipage app when
the server's first session starts, whatever page that session asks for, so the defect shows on that first
request of a fresh server. Every other page is then the first request of its own new session (a new page,
its own websocket) on the same server. (Until issue 29 each page started its own server: eight servers for one
decision, about 10 s each.)
"""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from tests.e2e.conftest import (
    LAPTOP,
    assert_fits_the_laptop,
    external_requests,
    lazy_tab,
    radio,
    screenshot,
    segment,
    streamlit_server,
    sweep_views,
    tab,
    wait_until_idle,
)

SENTENCE = "The dog barked."
MASKED = "The dog [MASK] at the cat."
PRETRAINING = "Pre-training: masked words & next sentence"  # the Fill-mask page's heading
# The navigation's titles: short enough for the sidebar of a 1024 x 768 screen (the headings say more)
TITLES = ["Home", "Lessons", "Attention Explorer", "Attention, step by step", "Positional encoding",
          "Pre-training: masked words", "Generate", "Translate: the whole Transformer", "Fine-tuning lab", "Embeddings",
          "Why?", "Corpus: many sentences", "Class results"]
HEATMAP = ".js-plotly-plot .heatmaplayer"
BARS = ".js-plotly-plot .barlayer"
VIEW = ".ib-attention[data-head]"  # the client-side attention view (Home, the Explorer's heatmap)
FIRST_RUN_MS = 240_000  # a fresh server imports torch and loads a model on 2 shared cores

# name: (path, query parameters, nav title, the page's heading, an element only the page draws)
CASES = {
    "home": ("/", {"text": SENTENCE}, "Home", "See inside BERT-style Transformers", VIEW),
    "lessons": ("/lessons", {"text": SENTENCE, "lesson": "heads", "step": "2"}, "Lessons",
                "Lessons: the Transformer, step by step", ".st-key-lessons-step h3"),
    "attention": ("/attention", {"text": SENTENCE, "layer": "2", "head": "3"}, "Attention Explorer",
                  "Attention Explorer", VIEW),
    "step-by-step": ("/step-by-step", {"text": SENTENCE}, "Attention, step by step", "Attention, step by step",
                     HEATMAP),
    "positional": ("/positional", {"text": SENTENCE}, "Positional encoding", "Positional encoding", HEATMAP),
    "fill-mask": ("/fill-mask", {"masked": MASKED}, "Pre-training: masked words", PRETRAINING, BARS),
    "finetune": ("/finetune", {"text": SENTENCE}, "Fine-tuning lab", "Fine-tuning lab",
                 '[data-testid="stButton"] button:has-text("Train")'),
    "why": ("/why", {"text": SENTENCE, "heads": "6:4,6:6"}, "Why?", "Why did the model say that?", BARS),
    "corpus": ("/corpus", {"text": SENTENCE, "relation": "dobj", "layer": "3", "head": "1"}, "Corpus: many sentences",
               "Corpus: what the heads do over many sentences", HEATMAP),
    "results": ("/results", {"text": SENTENCE}, "Class results", "Class results", "[data-testid=stForm]"),
}


# Then each main view of the page, at 1024 x 768 as well (conftest.sweep_views; Generate's, Translate's and
# Embeddings' views are swept by their own tests)
VIEWS = {
    "attention": [(name, radio(label)) for name, label in (
        ("grid", "All heads"), ("lines", "Head view"), ("bertviz", "bertviz views"), ("aggregate", "Aggregations"),
        ("stats", "Head statistics"), ("compare", "Compare"), ("export", "Export"), ("values", "Value-weighted"))],
    "why": [(name, segment(label)) for name, label in (
        ("importance", "Head importance"), ("patching", "Activation patching"), ("attribution", "Token attribution"),
        ("attention", "Attention attribution"), ("circuits", "Weight circuits"))],
    "finetune": [(name, radio(label)) for name, label in (
        ("pairs", "Sentence-pair classification"), ("tokens", "Token classification"),
        ("qa", "Extractive question answering"))] + [("tiny", tab("Tiny Transformer from scratch"))],
    "corpus": [(name.lower(), tab(name)) for name in ("Relations", "Distributions", "Search", "Neurons")],
    "positional": [(name, lazy_tab(label)) for name, label in (
        ("alibi", "ALiBi"), ("relative", "Learned relative bias"))],  # rotary is the open tab
    "fill-mask": [(name, lazy_tab(label)) for name, label in (
        ("lens", "Layer by layer"), ("mask-attention", "Attention of the mask"), ("masking", "80/10/10 masking"))],
    "step-by-step": [(name, lazy_tab(label)) for name, label in (
        ("layer", "The layer, step by step"), ("sqrt-dk", "Why √d_k"), ("masks", "Masks"),
        ("word-order", "Word order"), ("neurons", "Neurons"))],
}


def sidebar_sentence(page) -> str:
    return page.locator('[data-testid="stSidebar"] textarea').first.input_value()


def chart_texts(page) -> str:
    """Plotly charts' text, and the client-side view's heatmap label (it names the tokens drawn)."""
    labels = [canvas.get_attribute("aria-label") or "" for canvas in page.locator(".ib-attention canvas").all()]
    return "\n".join(page.locator(".js-plotly-plot").all_inner_texts() + labels)


def check_query_parameters(page, name: str) -> None:
    """What a user sees of each link's parameters."""
    if name == "fill-mask":
        assert page.get_by_label("Sentence with [MASK] (or <mask>)").input_value() == MASKED
        assert "the dog [MASK] at the cat ." in page.get_by_text("Tokens:").first.inner_text()  # tokenised
        return
    assert sidebar_sentence(page) == SENTENCE
    if name == "lessons":  # the link's lesson and step
        marker = page.locator(".lesson-step").first
        assert (marker.get_attribute("data-lesson"), marker.get_attribute("data-step")) == ("heads", "2")
    if name == "why":  # the link's heads are ticked, and the picked word is the sentence's last
        assert "heads=6%3A4%2C6%3A6" in page.url or "heads=6:4,6:6" in page.url
        assert "The dog [MASK]." in page.get_by_text("Sentence:").first.inner_text()
    if name == "corpus":  # the search is on the link's relation and head
        assert "relation=dobj" in page.url and "layer=3" in page.url and "head=1" in page.url
    if name in {"home", "attention", "step-by-step"}:
        assert "barked" in chart_texts(page)  # the charts are of the link's sentence
    if name == "attention":
        assert "layer 2, head 3" in page.locator(".ib-attention .ib-title").first.inner_text()
        assert "layer=2" in page.url and "head=3" in page.url and "dog+barked" in page.url


FIRST = "attention"  # the fresh server's first request: a deep link with a layer, a head and a sentence


@pytest.fixture(scope="module")
def fresh_server():
    with streamlit_server(["streamlit", "run", "app.py"], "direct-links.log") as url:
        yield url


@pytest.mark.parametrize("name", [FIRST] + [name for name in CASES if name != FIRST])  # FIRST runs first
def test_a_direct_link_is_the_first_request_of_a_session_on_a_fresh_plain_streamlit_run(context, fresh_server,
                                                                                        name):
    path, params, nav_title, heading, drawn = CASES[name]
    page = context.new_page()  # a new session: its own websocket
    page.set_viewport_size(LAPTOP)  # a teacher's laptop (each page also fits it: issue 35 D)
    requests = []
    page.on("request", lambda request: requests.append(request.url))
    try:
        page.goto(f"{fresh_server}{path}?{urlencode(params)}")
        page.wait_for_selector(drawn, timeout=FIRST_RUN_MS)
        wait_until_idle(page, timeout_s=FIRST_RUN_MS / 1000)
        screenshot(page, f"direct-link-{name}")

        assert page.get_by_text("Page not found").count() == 0
        assert page.locator('[role="dialog"]').count() == 0
        links = page.locator('[data-testid="stSidebarNav"] a')
        assert [text.split("\n")[-1] for text in links.all_inner_texts()] == TITLES  # not app, attention, …
        assert links.filter(has_text=nav_title).get_attribute("aria-current") == "page"
        assert page.get_by_role("heading", name="Model and sentence").is_visible()  # the shared sidebar
        assert page.get_by_role("heading", name=heading, exact=True).first.is_visible()
        assert page.locator('[data-testid="stException"]').count() == 0
        check_query_parameters(page, name)
        assert external_requests(requests) == []
        assert_fits_the_laptop(page, name, restore_theme=False)  # the sweep goes on in the theme it is in
        sweep_views(page, name, VIEWS.get(name, []))
    finally:
        page.close()


def test_an_unknown_page_says_so_with_links_to_every_page(context, app_url):
    """Streamlit runs the default page in place of one it does not know: the app says 'Page not found' instead of
    showing Home as if it had been asked for, and lists its pages (issue 47 D)."""
    page = context.new_page()
    try:
        page.goto(f"{app_url}/no-such-page?text=hi")
        page.wait_for_selector('[data-testid="stMainBlockContainer"] h1:has-text("Page not found")',
                               timeout=FIRST_RUN_MS)
        wait_until_idle(page, timeout_s=120)
        page.keyboard.press("Escape")  # Streamlit's own notice
        main = page.locator("[data-testid=stMain]")
        assert "This app has no page '/no-such-page'" in main.inner_text()
        assert [main.get_by_role("link", name=title).count() for title in TITLES] == [1] * len(TITLES)
        main.get_by_role("link", name="Attention Explorer").click()
        page.wait_for_selector(VIEW, timeout=FIRST_RUN_MS)
        assert "/attention" in page.url
    finally:
        page.close()
