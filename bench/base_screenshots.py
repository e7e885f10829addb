"""Screenshots of the base-size model in the app (issue 32: "the base-size Explorer, grid and step-by-step pages
are checked in Chromium with screenshots"), for docs/images/ (looked at by a person).

Run: ``.venv/bin/python -m bench.base_screenshots [--port 8605]`` once all-mpnet-base-v2 is installed
(``make models``). Starts ``python -m ui.launch``, opens each page by its link with ``model=all-mpnet-base-v2``,
checks what a user should see there (12 layers, 12 heads, d_k = 64, the scores divided by 8, no exception) and
writes docs/images/base-*.png. Exits 1 with what was wrong if a check fails.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from urllib.parse import urlencode

from bench.attention_page import start_server
from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, run_and_wait, wait_until_idle

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ROOT / "docs" / "images"
MODEL = "all-mpnet-base-v2"
TEXT = "The animal didn't cross the street because it was too tired."
VIEW = ".ib-attention[data-head]"
HEATMAP = ".js-plotly-plot .heatmaplayer"

# name: (path, link parameters, element to wait for, texts the page must show)
SHOTS = {
    "explorer": ("/attention", {"layer": "12", "head": "12"}, VIEW, ["layer 12, head 12"]),
    "grid": ("/attention", {"view": "grid", "layer": "6", "head": "1"}, VIEW, []),
    "step-by-step": ("/step-by-step", {"layer": "1", "head": "1"}, HEATMAP, ["≤ 1e-05"]),
}


def shoot(browser, url: str, name: str, problems: list[str]) -> None:
    path, params, drawn, expected = SHOTS[name]
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    page.goto(f"{url}{path}?{urlencode({'text': TEXT, 'model': MODEL, **params})}")
    page.wait_for_selector(drawn, timeout=600_000)
    wait_until_idle(page, timeout_s=600)
    if name == "step-by-step":  # the layer's own tab: the scores divided by sqrt(d_k) = sqrt(64) = 8
        run_and_wait(page, page.get_by_role("tab", name="The layer, step by step", exact=True).click, timeout_s=600)
        expected = [*expected, "√64"]
    body = page.locator("body").inner_text()
    if page.locator('[data-testid="stException"]').count():
        problems.append(f"{name}: an exception on the page")
    if MODEL not in body:
        problems.append(f"{name}: the sidebar does not name {MODEL}")
    problems.extend(f"{name}: '{text}' not shown" for text in expected if text not in body)
    if name == "grid":
        label = page.locator(".ib-attention canvas[role=img]").first.get_attribute("aria-label") or ""
        if not label.startswith("all 12 layers by 12 heads"):
            problems.append(f"grid: the view says '{label[:60]}', not 12 x 12")
    page.screenshot(path=str(IMAGES / f"base-{name}.png"), full_page=name != "step-by-step")
    page.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8605)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    from vizcore.model.install import installed_folder

    if installed_folder() is None:
        sys.exit(f"{MODEL} is not installed: run `make models` first.")
    server = start_server(args.port)
    problems: list[str] = []
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for name in SHOTS:
                shoot(browser, f"http://localhost:{args.port}", name, problems)
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    print("\n".join(str(p) for p in sorted(IMAGES.glob("base-*.png"))))
    if problems:
        sys.exit("\n".join(problems))


if __name__ == "__main__":
    main()
