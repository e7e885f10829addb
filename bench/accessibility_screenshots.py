"""Screenshots of the projector setting at 1024 x 768, and of it as people with deuteranopia and protanopia see it
(Chromium's vision-deficiency emulation), for docs/images/ (looked at by a person; issue 30 C and D).

Run: ``.venv/bin/python -m bench.accessibility_screenshots [--port 8605]``. Starts ``python -m ui.launch`` and opens
each page by a link with ``?present=1``: the window as the room sees it (the page scrolls inside it). Offline.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from urllib.parse import quote

from bench.attention_page import start_server
from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, LAPTOP, wait_until_idle

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ROOT / "docs" / "images"
TEXT, PAIR = "The animal didn't cross the street because it was too tired.", "It was a long day."
PAGES = {  # name: the link's path and parameters, and what to scroll to (the page's main figure)
    "explorer": (f"attention?text={quote(TEXT)}&pair={quote(PAIR)}&layer=3&head=5", ".ib-attention"),
    "fill-mask": ("fill-mask", '[data-testid="stPlotlyChart"]'),
    "step-by-step": (f"step-by-step?text={quote(TEXT)}", '[data-testid="stPlotlyChart"]'),
    "why": ("why", '[data-testid="stPlotlyChart"]'),
}
VISION = ("deuteranopia", "protanopia")


def shoot(browser, url: str) -> list[Path]:
    written = []
    page = browser.new_page(viewport=LAPTOP)
    cdp = page.context.new_cdp_session(page)
    for name, (path, figure) in PAGES.items():
        page.goto(f"{url}/{path}{'&' if '?' in path else '?'}present=1")
        page.wait_for_selector(figure, timeout=300_000)
        wait_until_idle(page, timeout_s=300)
        page.locator(figure).first.evaluate("element => element.scrollIntoView({block: 'start'})")
        for vision in ("none", *VISION) if name == "explorer" else ("none",):
            cdp.send("Emulation.setEmulatedVisionDeficiency", {"type": vision})
            out = IMAGES / f"projector-{name}{'' if vision == 'none' else '-' + vision}.png"
            page.screenshot(path=str(out))
            written.append(out)
        cdp.send("Emulation.setEmulatedVisionDeficiency", {"type": "none"})
    page.close()
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8605)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    server = start_server(args.port)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            written = shoot(browser, f"http://localhost:{args.port}")
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    print("\n".join(str(p) for p in written))


if __name__ == "__main__":
    main()
