"""The Attention Explorer with long inputs, measured in Chromium: bytes over the wire and time per switch.

Run: ``.venv/bin/python -m bench.attention_page [--port 8603]``. Writes its section of docs/BENCHMARKS.md.

For each case (model, n tokens) it starts ``python -m ui.launch`` (what ``make run`` starts), opens
``/attention?text=...&model=...`` in headless Debian Chromium and measures:

* load: bytes the page receives (HTTP + WebSocket) until the first heatmap is drawn;
* switch: median over ``SWITCHES`` head changes (slider key press) of the WebSocket bytes received
  and the wall time until the new head is drawn and the app is idle;
* grid: bytes received when opening the layers x heads grid;
* bertviz: the size of bertviz ``head_view`` HTML for the same tokens and weights (every weight of
  every head is embedded in it), built in the same run.

The 12 x 12 case is a random-weight BERT (hidden 192, 12 layers, 12 heads: the attention tensors
have bert-base's shape, 12 x 12 x 512 x 512) saved to a temporary folder with the embedded model's
tokenizer, so no download is needed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

from bench.attention import text_of_length
from bench.report import machine, markdown_table, write_section
from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, _wait_healthy, wait_until_idle

ROOT = Path(__file__).resolve().parents[1]

SWITCHES = 5
MB = 1e6


def random_bert_12x12(folder: Path) -> str:
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from vizcore.model.loading import BUILTIN_MODELS, DEFAULT_MODEL

    tokenizer = AutoTokenizer.from_pretrained(str(BUILTIN_MODELS[DEFAULT_MODEL].source()))
    torch.manual_seed(0)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=192, num_hidden_layers=12,
                        num_attention_heads=12, intermediate_size=768, max_position_embeddings=512)
    BertModel(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def bertviz_size(model: str, text: str) -> float:
    """MB of bertviz head_view HTML for the same input (built from the same weights we show)."""
    import torch
    from bertviz import head_view

    from vizcore.attention.extract import extract_attention
    from vizcore.model.loading import load_model

    result = extract_attention(load_model(model, device="cpu"), text)
    attention = [torch.from_numpy(layer[None]) for layer in result.attention]
    return len(head_view(attention, result.tokens, html_action="return").data.encode()) / MB


class Wire:
    """Bytes received by the page: HTTP response bodies and WebSocket frames."""

    def __init__(self, page):
        self.bytes = 0
        page.on("websocket", lambda ws: ws.on("framereceived", self._frame))
        page.on("requestfinished", self._request)

    def _frame(self, payload) -> None:
        self.bytes += len(payload if isinstance(payload, (bytes, bytearray)) else payload.encode())

    def _request(self, request) -> None:
        sizes = request.sizes()
        self.bytes += sizes.get("responseBodySize", 0) + sizes.get("responseHeadersSize", 0)


def measure_case(browser, url: str, model: str, text: str) -> dict:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    wire = Wire(page)
    base = f"{url}/attention?model={quote(model)}&text={quote(text)}"
    page.goto(base + "&layer=1&head=1&view=heatmap")
    page.wait_for_selector(".js-plotly-plot .heatmaplayer", timeout=600_000)
    wait_until_idle(page, timeout_s=600)
    load = wire.bytes
    slider = page.get_by_role("slider").nth(1)
    times, sizes = [], []
    for head in range(2, 2 + SWITCHES):
        before, start = wire.bytes, time.perf_counter()
        slider.focus()
        slider.press("ArrowRight")
        page.wait_for_function(
            f"document.querySelector('.js-plotly-plot')?.innerText.includes('head {head} ·')", timeout=120_000)
        wait_until_idle(page, quiet_ms=300)
        times.append(time.perf_counter() - start - 0.3)  # the quiet period is waiting, not work
        sizes.append(wire.bytes - before)
    before = wire.bytes
    page.get_by_text("All heads", exact=True).click()
    page.wait_for_function("document.querySelectorAll('.js-plotly-plot .heatmaplayer .hm').length > 1",
                           timeout=120_000)
    wait_until_idle(page, quiet_ms=300)
    grid = wire.bytes - before
    page.close()
    return {"load": load / MB, "switch_s": statistics.median(times), "switch_mb": statistics.median(sizes) / MB,
            "grid": grid / MB}


def start_server(port: int) -> subprocess.Popen:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "ui.launch", "--server.port", str(port), "--server.headless", "true",
         "--server.address", "localhost", "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_healthy(f"http://localhost:{port}", process)
    return process


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8603)
    parser.add_argument("--no-write", action="store_true", help="print the table, leave docs/ alone")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    from vizcore.model.loading import DEFAULT_MODEL, load_model

    tokenizer = load_model(DEFAULT_MODEL, device="cpu").tokenizer
    with tempfile.TemporaryDirectory() as folder:
        big = random_bert_12x12(Path(folder))
        cases = [(DEFAULT_MODEL, "6 x 12", 64), (DEFAULT_MODEL, "6 x 12", 512), (big, "12 x 12 (random)", 64),
                 (big, "12 x 12 (random)", 512)]
        server = start_server(args.port)
        rows = []
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                for model, shape, n in cases:
                    text = text_of_length(tokenizer, n)
                    got = measure_case(browser, f"http://localhost:{args.port}", model, text)
                    size = bertviz_size(model, text)
                    rows.append([shape, n, f"{got['load']:.2f}", f"{got['switch_mb']:.3f}", f"{got['switch_s']:.2f}",
                                 f"{got['grid']:.3f}", f"{size:.1f}", f"{size / max(got['switch_mb'], 1e-9):,.0f}x"])
                    print(rows[-1], flush=True)
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=30)
    body = "\n\n".join([
        "## Attention Explorer with long inputs (bench/attention_page.py)",
        f"Headless Debian Chromium against `python -m ui.launch`; {machine()}; 1-minute load average at the "
        f"end: {os.getloadavg()[0]:.1f} (other work shares these cores, so wall times are upper bounds). "
        f"Switch = one head change with the slider, median of {SWITCHES}; bytes are what the browser receives "
        "(WebSocket frames and HTTP bodies). The page sends one head's float32 matrix (n² x 4 bytes, "
        "base64) and each grid head as at most 24 x 24 block means; bertviz's head view embeds every "
        "weight of every layer and head as JSON text. First load includes Streamlit's own JavaScript and "
        "CSS (about 7.7 MB, cached by the browser after the first visit).",
        markdown_table(["model (layers x heads)", "tokens", "first load (MB)", "per switch (MB)",
                        "per switch (s)", "open grid (MB)", "bertviz head_view HTML (MB)",
                        "bertviz ÷ one switch"], rows),
    ])
    if args.no_write:
        print(body)
    else:
        print(f"wrote {write_section('attention-page', body)}")


if __name__ == "__main__":
    main()
