"""Every page's main views on a teacher's laptop, 1024 x 768 (issue 35 D): each Explorer view, each Why?
question, each Embeddings view, each fine-tuning task, and every tab of the pages that have tabs, opened
as a user does (a click on the view's control or tab) and measured by ``conftest.assert_fits_the_laptop``:
no control label, metric or chosen value cut to "…", no label word broken across lines, no hidden sideways
scroll. The pages' first views are measured by test_direct_links_browser.py (Generate, Translate and
Embeddings by their own tests too). Screenshots: artifacts/screenshots/laptop-<page>-<view>.png.

One browser page per app page: a view is one click and one run of the server's cached model, not a new
session (about 2 s each, where a link per view took 4 to 5).
"""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from tests.e2e.conftest import LAPTOP, assert_fits_the_laptop, wait_until_idle

SENTENCE = "The dog chased the cat."
FIRST_RUN_MS = 180_000  # the first page of a worker's server loads a model on 2 shared cores


def radio(label: str):
    """A radio option (Explorer views, fine-tuning tasks): its text is in the label Streamlit draws."""
    return lambda page: page.locator('[data-testid="stRadio"] label').filter(has_text=label).first


def segment(label: str):
    """A segmented control's button (Why? questions, Embeddings views)."""
    return lambda page: page.locator('[data-testid="stButtonGroup"] button').filter(has_text=label).first


def tab(label: str):
    return lambda page: page.get_by_role("tab", name=label, exact=True)


# page: (path, query parameters, [(view name, how to reach it)]); the first view of each is already drawn
PAGES = {
    "attention": ("/attention", {"text": SENTENCE}, [
        (name, radio(label)) for name, label in (
            ("grid", "All heads"), ("lines", "Head view"), ("bertviz", "bertviz views"), ("aggregate", "Aggregations"),
            ("stats", "Head statistics"), ("compare", "Compare"), ("export", "Export"))]),
    "why": ("/why", {"text": SENTENCE}, [
        (name, segment(label)) for name, label in (
            ("importance", "Head importance"), ("patching", "Activation patching"),
            ("attribution", "Token attribution"))]),
    "embeddings": ("/embeddings", {}, [
        (name, segment(label)) for name, label in (
            ("search", "Semantic search"), ("contexts", "One word, many contexts"), ("tokens", "Token map"),
            ("queries", "Queries and keys"))]),
    "finetune": ("/finetune", {}, [(name, radio(label)) for name, label in (
        ("pairs", "Sentence-pair classification"), ("tokens", "Token classification"),
        ("qa", "Extractive question answering"))] + [("tiny", tab("Tiny Transformer from scratch"))]),
    "corpus": ("/corpus", {}, [(name.lower(), tab(name)) for name in ("Relations", "Distributions", "Search")]),
    "fill-mask": ("/fill-mask", {}, [(name, tab(label)) for name, label in (
        ("lens", "Layer by layer"), ("mask-attention", "Attention of the mask"), ("masking", "80/10/10 masking"))]),
    "generate": ("/generate", {}, [(name, tab(label)) for name, label in (
        ("attention", "Attention and the causal mask"), ("lens", "Layer by layer"), ("beams", "Beams"))]),
    "step-by-step": ("/step-by-step", {"text": SENTENCE}, [(name, tab(label)) for name, label in (
        ("layer", "The layer, step by step"), ("sqrt-dk", "Why √d_k"), ("masks", "Masks"),
        ("word-order", "Word order"))]),
    "translate": ("/translate", {}, [(name, tab(label)) for name, label in (
        ("attentions", "The three attentions"), ("alignment", "Alignment per head"), ("train", "Train from scratch"))]),
}


@pytest.mark.parametrize("name", list(PAGES))
def test_each_main_view_fits_a_1024_by_768_laptop(app_url, browser, name):
    path, params, views = PAGES[name]
    context = browser.new_context(viewport=LAPTOP)
    page = context.new_page()
    try:
        page.goto(f"{app_url}{path}" + (f"?{urlencode(params)}" if params else ""))
        page.wait_for_selector('[data-testid="stMainBlockContainer"] h1', timeout=FIRST_RUN_MS)
        wait_until_idle(page, timeout_s=FIRST_RUN_MS / 1000)
        for view, control in views:
            control(page).click()
            wait_until_idle(page)
            assert page.locator('[data-testid="stException"]').count() == 0, f"{name} {view}"
            assert_fits_the_laptop(page, f"{name}-{view}")
    finally:
        context.close()
