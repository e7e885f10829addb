"""Presenter mode: the time from a key press to the next step drawn (issue 34 B; goal <= 1 s on 2 cores with the
default model), over every step of the course.

Run: ``.venv/bin/python -m bench.presenter_keys [--port 8607 | --url http://localhost:8501] [--no-write]``. Opens
``/lessons?present=1`` at 1024 x 768 in headless Chromium and presses Page Down through the whole course twice, from
the key event to the next step's marker drawn with every chart of the step (tests/e2e/test_presenter_browser.py's
``press``): the first walk on a fresh server computes each step's view on its key press (a class's first run through
the course), the second finds them in the server's caches (a presenter who rehearsed, or went back). Writes the
"presenter-keys" section of docs/BENCHMARKS.md with p50, p95 and the slowest step of each walk, and the machine's
load average before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics

from bench.attention_page import start_server
from bench.report import machine, markdown_table, write_section
from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, LAPTOP
from tests.e2e.test_presenter_browser import COURSE, at, press


def walk(page, url: str) -> dict[tuple[str, int], float]:
    """Seconds from Page Down to each step drawn (the course's first step is opened by its link, not a key)."""
    page.goto(f"{url}/lessons?present=1")
    assert at(page) == COURSE[0]
    return {step: press(page, "PageDown", step) for step in COURSE[1:]}


def percentile(values: list[float], share: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[round(share * 100) - 1]


def row(name: str, times: dict[tuple[str, int], float]) -> list[object]:
    values = list(times.values())
    slowest = max(times, key=times.get)
    return [name, len(values), f"{percentile(values, 0.5):.2f}", f"{percentile(values, 0.95):.2f}",
            f"{times[slowest]:.2f} ({slowest[0]} step {slowest[1]})"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8607)
    parser.add_argument("--url", help="a server already running (its caches as they are); else a fresh one")
    parser.add_argument("--no-write", action="store_true", help="print the table, leave docs/ alone")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    load_before = os.getloadavg()[0]
    server = None if args.url else start_server(args.port)
    url = args.url or f"http://localhost:{args.port}"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport=LAPTOP)
            first = walk(page, url)
            second = walk(page, url)
            browser.close()
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
    load_after = os.getloadavg()[0]
    table = markdown_table(["walk", "key presses", "p50 (s)", "p95 (s)", "slowest (s)"],
                           [row("first (views computed on the key press)" + ("" if server else ", server warm"),
                                first), row("second (views cached)", second)])
    body = (
        "## Presenter mode: key press to the next step drawn (bench/presenter_keys.py)\n\n"
        f"Headless Debian Chromium at 1024 x 768 against `python -m ui.launch`, the default model; {machine()}; "
        f"{os.cpu_count()} cores; 1-minute load average {load_before:.1f} before and {load_after:.1f} after (other "
        "work shares these cores: times are upper bounds). Page Down through every step of every lesson, twice, "
        "from the key to the next step's marker with each of its charts drawn. Goal (issue 34 B): <= 1 s.\n\n"
        f"{table}"
    )
    print(body)
    if not args.no_write:
        write_section("presenter-keys", body)


if __name__ == "__main__":
    main()
