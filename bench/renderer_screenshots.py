"""Screenshots of the attention renderer in its three hosts, for docs/images/ (looked at by a person).

Run: ``.venv/bin/python -m bench.renderer_screenshots [--port 8604]``. Starts ``python -m ui.launch`` for the
Streamlit component (Home, the Explorer's grid), writes the standalone HTML file of a sentence pair and opens
it from disk, and shows the notebook widget's module in the minimal anywidget host of
tests/e2e/test_notebook_widget_browser.py. Everything offline.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from urllib.parse import quote

from bench.attention_page import start_server
from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, wait_until_idle
from tests.e2e.test_notebook_widget_browser import HOST

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ROOT / "docs" / "images"
TEXT, PAIR = "The animal didn't cross the street because it was too tired.", "It was a long day."
VIEW = ".ib-attention[data-head]"


def shoot_streamlit(browser, url: str) -> None:
    page = browser.new_page(viewport={"width": 1400, "height": 1100})
    page.goto(f"{url}/?text={quote(TEXT)}&layer=3&head=5")
    page.wait_for_selector(VIEW, timeout=300_000)
    wait_until_idle(page)
    page.locator(".ib-attention").first.screenshot(path=str(IMAGES / "renderer-streamlit-home.png"))
    page.goto(f"{url}/attention?text={quote(TEXT)}&pair={quote(PAIR)}&view=grid&layer=4&head=7")
    page.wait_for_selector(VIEW, timeout=300_000)
    wait_until_idle(page)
    page.locator(".ib-attention").first.screenshot(path=str(IMAGES / "renderer-streamlit-grid.png"))
    page.close()


def shoot_file_and_widget(browser, tmp: Path) -> None:
    from vizcore.attention.aggregate import ViewOptions
    from vizcore.attention.extract import extract_attention
    from vizcore.attention.renderer import attention_view_html, script_json
    from vizcore.model.loading import DEFAULT_MODEL, load_model
    from vizcore.notebook import attention_widget

    run = extract_attention(load_model(DEFAULT_MODEL, device="cpu"), TEXT, PAIR)
    path = tmp / "attention-view.html"
    path.write_text(attention_view_html(run, 2, 4, "lines", ViewOptions(merge_words=True)), encoding="utf-8")
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    page.goto(path.as_uri())
    page.wait_for_selector(VIEW)
    page.locator(".ib-token").nth(11).click()  # the query "was" (words merged): its lines only
    page.screenshot(path=str(IMAGES / "renderer-html-export.png"), full_page=True)
    page.close()
    widget = attention_widget(run, 5, 3)
    page = browser.new_page(viewport={"width": 1300, "height": 1000})  # about:blank: a file page cannot import blobs
    page.set_content(HOST % (script_json(widget._esm), script_json(widget.payload)))
    page.wait_for_selector(VIEW)
    canvas = page.locator(".ib-attention canvas").first
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.45, box["y"] + box["height"] * 0.6)  # a hover tooltip
    page.screenshot(path=str(IMAGES / "renderer-notebook-widget.png"), full_page=True)
    page.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8604)
    args = parser.parse_args()
    import tempfile

    from playwright.sync_api import sync_playwright

    IMAGES.mkdir(parents=True, exist_ok=True)
    server = start_server(args.port)
    try:
        with sync_playwright() as playwright, tempfile.TemporaryDirectory() as tmp:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            shoot_streamlit(browser, f"http://localhost:{args.port}")
            shoot_file_and_widget(browser, Path(tmp))
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    print("\n".join(str(p) for p in sorted(IMAGES.glob("renderer-*.png"))))


if __name__ == "__main__":
    main()
