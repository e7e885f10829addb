"""Time from `make run`'s server command (``python -m ui.launch``) to the Home heatmap in Chromium.

Run: ``.venv/bin/python bench/startup.py``. Writes its section of docs/BENCHMARKS.md.
Besides wall-clock seconds it records the CPU seconds the server spent (user + system, from /proc),
which do not grow when other programs compete for the cores, and the load average during the run.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.report import markdown_table, write_section  # noqa: E402
from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, _free_port, _wait_healthy  # noqa: E402

RUNS = 3


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_run(playwright) -> tuple[float, float, float]:
    port = _free_port()
    start = time.monotonic()
    server = subprocess.Popen(
        [sys.executable, "-m", "ui.launch", "--server.port", str(port), "--server.headless", "true"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://localhost:{port}"
        _wait_healthy(url, server)
        healthy = time.monotonic() - start
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url)
        page.wait_for_selector(".js-plotly-plot .heatmaplayer", timeout=180_000)
        visible = time.monotonic() - start
        cpu = cpu_seconds(server.pid)
        browser.close()
        return healthy, visible, cpu
    finally:
        server.terminate()
        server.wait(timeout=30)


def main() -> None:
    from playwright.sync_api import sync_playwright

    results = []
    with sync_playwright() as playwright:
        for _ in range(RUNS):
            results.append(one_run(playwright))
            print(results[-1], flush=True)
    load = os.getloadavg()[0]
    rows = [[i + 1, f"{h:.1f}", f"{v:.1f}", f"{c:.1f}"] for i, (h, v, c) in enumerate(results)]
    rows.append(["median", f"{statistics.median(r[0] for r in results):.1f}",
                 f"{statistics.median(r[1] for r in results):.1f}",
                 f"{statistics.median(r[2] for r in results):.1f}"])
    body = (
        "## Cold start: server start to Home heatmap (bench/startup.py)\n\n"
        f"{os.cpu_count()} cores; 1-minute load average at the end of the run: {load:.1f} (a load above "
        "the core count means other work competed for the CPU and the wall-clock times are inflated; "
        "the server's CPU seconds are not). Each run starts a fresh `python -m ui.launch` (what `make run` "
        "starts: `streamlit run app.py` plus a thread that loads the default model while the server "
        "boots), waits for "
        "/_stcore/health, opens Chromium and waits for the heatmap.\n\n"
        + markdown_table(["run", "health OK (s)", "heatmap visible (s)", "server CPU s until visible"], rows)
    )
    print(write_section("startup", body))


if __name__ == "__main__":
    main()
