"""Presenter mode at 1024 x 768, every step of every lesson, for a person to look at (issue 34 B): the window as
the room sees it after each Page Down, in artifacts/screenshots/lesson-<id>-<step>.png, and one step per lesson
(``SHOWN``: its first step with a question) in docs/images/lesson-<id>.png.

Run: ``.venv/bin/python -m bench.lesson_screenshots [--port 8606] [--size 1024x768]``. Starts ``python -m ui.launch``,
opens ``/lessons?present=1`` and walks the course with the keyboard (tests/e2e/test_presenter_browser.py's ``press``).
Offline.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.attention_page import start_server
from tests.e2e.conftest import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS
from tests.e2e.test_presenter_browser import COURSE, at, press
from vizcore.lessons.lesson import load_lessons

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ROOT / "docs" / "images"


def shown_step(lesson) -> int:
    """The step a lesson is shown by in docs/images: its first with a question (the claim, view and question)."""
    return next((i for i, step in enumerate(lesson.steps, 1) if step.question is not None), 1)


def shoot(browser, url: str, size: tuple[int, int], docs: bool) -> list[Path]:
    shown = {(lesson.id, shown_step(lesson)) for lesson in load_lessons()}
    page = browser.new_page(viewport={"width": size[0], "height": size[1]})
    page.goto(f"{url}/lessons?present=1")
    assert at(page) == COURSE[0]
    written = []
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for i, (lesson, step) in enumerate(COURSE):
        if i:
            press(page, "PageDown", (lesson, step))
        page.wait_for_timeout(300)  # plotly's last relayout after its SVG appears
        out = ARTIFACTS / f"lesson-{lesson}-{step}{'' if size == (1024, 768) else f'-{size[0]}x{size[1]}'}.png"
        page.screenshot(path=str(out))
        written.append(out)
        if docs and size == (1024, 768) and (lesson, step) in shown:
            page.screenshot(path=str(IMAGES / f"lesson-{lesson}.png"))
            written.append(IMAGES / f"lesson-{lesson}.png")
    page.close()
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8606)
    parser.add_argument("--size", default="1024x768", help="the window, WIDTHxHEIGHT (1024x768, 1280x720)")
    parser.add_argument("--no-docs", action="store_true", help="leave docs/images alone")
    parser.add_argument("--url", help="a server already running (else one is started on --port)")
    args = parser.parse_args()
    size = tuple(int(n) for n in args.size.lower().split("x"))
    from playwright.sync_api import sync_playwright

    server = None if args.url else start_server(args.port)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            written = shoot(browser, args.url or f"http://localhost:{args.port}", size, not args.no_docs)
            browser.close()
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
    print("\n".join(str(p) for p in written))


if __name__ == "__main__":
    main()
