"""Browser tests: a real ``streamlit run app.py`` on a free localhost port, driven by Debian Chromium."""

from __future__ import annotations

import functools
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlparse

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts" / "screenshots"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-quic",
                 "--no-first-run", "--disable-component-update", "--disable-sync"]
SERVER_START_TIMEOUT = 90
LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "[::1]"}
# The renderer's colour legend, right of its heatmap and grid (vizcore/static/attention_view.js, LEGEND_WIDTH)
LEGEND_PX = int(re.search(r"const LEGEND_WIDTH = (\d+);",
                          (ROOT / "vizcore" / "static" / "attention_view.js").read_text(encoding="utf-8")).group(1))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_healthy(url: str, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"streamlit exited with code {process.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.read().strip() == b"ok":
                    return
        except OSError:
            time.sleep(0.25)
    raise RuntimeError(f"streamlit did not answer /_stcore/health within {SERVER_START_TIMEOUT} s")


@contextmanager
def streamlit_server(command: list[str], log_name: str, kill: bool = False) -> Iterator[str]:
    """Start ``python -m <command>`` (a ``streamlit run``) on a free localhost port; yield its URL, then stop it
    (``kill``: with SIGKILL, as a crash or a pulled plug would, nothing of the server's own shutdown run)."""
    port = _free_port()
    _mkdir(ROOT / "artifacts")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    with open(ROOT / "artifacts" / log_name, "w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", *command, "--server.port", str(port), "--server.headless", "true",
             "--server.address", "localhost", "--browser.gatherUsageStats", "false"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )
        url = f"http://localhost:{port}"
        try:
            _wait_healthy(url, process)
            yield url
        finally:
            if kill:
                process.kill()
            else:
                process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()


@pytest.fixture(scope="session")
def app_url():
    """The URL of a real streamlit server running app.py for the whole e2e session."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")  # one log per test process: they run side by side
    with streamlit_server(["ui.launch"], f"e2e-server-{worker}.log") as url:  # what `make run` starts
        yield url


def _mkdir(path: Path) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    return True


@pytest.fixture(scope="session")
def browser():
    if not shutil.which(CHROMIUM) and not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}: run `make test` (it installs Debian chromium).")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def context(browser):
    """One browser context for a test process's pages, as one user's browser: its cache keeps Streamlit's
    scripts and plotly.js compiled from one test to the next (a fresh context per test cost Chromium 1.5-3
    CPU-s more a page). Each page is still a new Streamlit session: its own websocket, its own state."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.on("page", count_finished_runs)
    yield context
    context.close()


def count_finished_runs(page):
    """Count the runs the server says have finished on this page's websocket (its ``script_finished`` messages) in
    ``page.finished_runs``, for ``run_and_wait``, and of them the whole-app runs in ``page.full_runs`` (a fragment's
    run ends FINISHED_FRAGMENT_RUN_SUCCESSFULLY); returns ``page``. The page's own run state can miss a run: a fast
    run's 'running' and 'notRunning' may reach React in one task and be drawn as one render, so the attribute never
    changes (step by step's Masks tab, twice in clean clones once the models were frozen out of the per-run GC and
    runs got shorter)."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    page.finished_runs = page.full_runs = 0

    def on_frame(payload) -> None:
        if isinstance(payload, (bytes, bytearray)):
            try:
                message = ForwardMsg.FromString(bytes(payload))
            except Exception:  # not a ForwardMsg: not a run's end
                return
            if message.WhichOneof("type") == "script_finished":
                page.finished_runs += 1
                page.full_runs += message.script_finished == ForwardMsg.FINISHED_SUCCESSFULLY

    page.on("websocket", lambda socket: socket.on("framereceived", on_frame)
            if socket.url.endswith("/_stcore/stream") else None)
    return page


@pytest.fixture
def page(context):
    """A fresh page (1400x1000) that records every request it makes in ``page.requests_made``."""
    page = context.new_page()
    page.requests_made = []
    page.on("request", lambda request: page.requests_made.append(request.url))
    yield page
    page.close()


def external_requests(urls: list[str]) -> list[str]:
    """Requests that would leave this machine (anything not http(s)/ws on localhost, data: or blob:)."""
    leaving = []
    for url in urls:
        parsed = urlparse(url)
        if parsed.scheme in {"data", "blob", "about"}:
            continue
        if parsed.hostname not in LOCAL_HOSTS:
            leaving.append(url)
    return leaving


# Busy: a script run not finished (the data-test-script-state Streamlit's own e2e tests read),
# Streamlit's running/connecting indicator, an element still drawn as a grey placeholder (stSkeleton: React's
# Suspense fallback while the browser fetches and runs the element's lazily loaded component, e.g. plotly.js,
# 4.7 MB, for the first chart a browser shows), or a plotly chart whose SVG is not drawn yet. Quiet: the time
# since the page's DOM last changed, kept by a MutationObserver in the page (reading the whole body's
# innerHTML every 200 ms, as before, serialised every chart's SVG each time: Chromium's CPU on 2 cores).
_BUSY_AND_QUIET = """() => {
    if (!window.__quietSince) {
        window.__quietSince = performance.now();
        window.__runs = 0;  // script runs the page has seen start (run_and_wait)
        // A run is counted from the record of its state change, not from the attribute read when the observer is
        // called: on a starved renderer a short run's 'running' and 'notRunning' can both be applied before the
        // callback, which then read 'notRunning' twice and missed the run. Each record's new value is the next
        // record's old value (or the attribute now, for the last one).
        new MutationObserver(changes => {
            window.__quietSince = performance.now();
            const states = changes.filter(change => change.attributeName === 'data-test-script-state');
            states.forEach((change, i) => {
                const later = states.slice(i + 1).find(next => next.target === change.target);
                const value = later ? later.oldValue : change.target.getAttribute('data-test-script-state');
                if (value === 'running') window.__runs++;
            });
        }).observe(document.documentElement, {subtree: true, childList: true, attributes: true, characterData: true,
                                              attributeOldValue: true});
    }
    const app = document.querySelector('[data-testid=stApp]');
    const state = app ? app.getAttribute('data-test-script-state') : 'initial';
    const busy = !['notRunning', 'compilationError'].includes(state)
        || document.querySelector('[data-testid=stStatusWidget], [data-testid=stSkeleton]') !== null
        || [...document.querySelectorAll('[data-testid=stPlotlyChart]')]
            .some(chart => !chart.querySelector('.main-svg'));
    return [busy, performance.now() - window.__quietSince];
}"""


def wait_until_idle(page, quiet_ms: int = 1000, timeout_s: float = 120) -> None:
    """Wait until the app has finished its run, the browser has drawn every element of it (each chart's SVG
    too), and the page's DOM has not changed for ``quiet_ms``.

    Run state and DOM stillness alone are not enough: with ten fresh browsers on two cores the chart
    component arrived 40-60 s after the run ended, and the page sat unchanged on a grey placeholder.
    """
    wait_until_all_idle([page], quiet_ms, timeout_s)


def wait_until_all_idle(pages: list, quiet_ms: int = 1000, timeout_s: float = 120) -> None:
    """``wait_until_idle`` for several pages at once: every one idle and unchanged over the same ``quiet_ms``
    (ten pages waited for one after another each spent its own quiet time: 15 s of nothing)."""
    for page in pages:
        page.wait_for_selector('[data-testid="stApp"]', timeout=timeout_s * 1000)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        now = [page.evaluate(_BUSY_AND_QUIET) for page in pages]
        if not any(busy for busy, _ in now) and min(quiet for _, quiet in now) >= quiet_ms:
            return
        time.sleep(0.1)
    raise TimeoutError("the app kept running or changing, or an element never finished loading")


def run_and_wait(page, act, timeout_s: float = 120) -> None:
    """``act()`` (a click, a key) that starts a script run, then wait for that run to have started and the page to
    be idle: a run seen to start needs only half a second of stillness after it, not the wait that covers a run
    that has not started yet."""
    before = page.evaluate(_BUSY_AND_QUIET) and page.evaluate("window.__runs")
    finished = getattr(page, "finished_runs", None)  # the server's word, where the page's socket is watched
    act()
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(f"window.__runs > {before}"):
        if finished is not None and page.finished_runs > finished:
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"no run started in {timeout_s:g} s (runs seen {page.evaluate('window.__runs')}, "
                               f"finished on the socket {getattr(page, 'finished_runs', 'not watched')})")
        page.wait_for_timeout(50)  # Playwright delivers the socket's frames while it waits
    wait_until_idle(page, quiet_ms=500, timeout_s=timeout_s)


def screenshot(page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


# ---- a teacher's laptop: 1024 x 768 (issue 35 D) ---------------------------------------------------------
# What the browser measures, not what the CSS says: an element cut by ``text-overflow: ellipsis`` is wider
# inside than out (scrollWidth > clientWidth); a word broken inside itself has its letters on two line boxes
# (a DOM Range over the word has client rectangles at two heights); a hidden sideways scroll is an element
# that scrolls on x with more content than room. Tables (st.dataframe's grid) are the one allowed sideways
# scroll: the grid draws its own scroll bar and moves with the arrow keys.
LAPTOP = {"width": 1024, "height": 768}
ALLOWED_SCROLL = ("stDataFrameGlideDataEditor", "dvn-scroller")

MEASURE = """() => {
  const visible = el => el.offsetParent !== null && el.getClientRects().length > 0;
  const name = el => (el.innerText || el.getAttribute('aria-label') || el.tagName).trim().slice(0, 80);
  const labels = 'label, button, [role=tab], [data-testid=stMetricLabel], [data-testid=stMetricValue], '
               + '[data-testid=stSidebarNav] a, [data-baseweb=select]';  // a select box's chosen value too
  const cut = [], broken = [], scrolls = [];
  for (const el of document.querySelectorAll(labels + ', ' + labels.split(', ').map(s => s + ' *').join(', '))) {
    if (!visible(el) || !el.innerText || !el.innerText.trim()) continue;
    const style = getComputedStyle(el);
    if (style.textOverflow === 'ellipsis' && el.scrollWidth > el.clientWidth + 1) cut.push(name(el));
  }
  for (const el of document.querySelectorAll(labels)) {
    if (!visible(el)) continue;
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const match of node.data.matchAll(/\\S+/g)) {
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const tops = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
        if (tops.size > 1) broken.push(match[0]);
      }
    }
  }
  for (const el of document.querySelectorAll('[data-testid=stMain] *')) {
    const style = getComputedStyle(el);
    if (!['auto', 'scroll'].includes(style.overflowX) || el.clientWidth === 0) continue;
    if (el.scrollWidth > el.clientWidth + 2) {
      const id = `${el.getAttribute('data-testid') || ''} ${el.className || ''}`;
      scrolls.push(id.trim().slice(0, 80) || el.tagName);
    }
  }
  // a chart's title or axis title wider than its chart: plotly draws SVG text on one line and the SVG clips it
  const clipped = [];
  for (const plot of document.querySelectorAll('.js-plotly-plot')) {
    const box = plot.getBoundingClientRect();
    if (!box.width) continue;
    for (const text of plot.querySelectorAll('.gtitle, .xtitle, .ytitle, .cbtitle text')) {
      const r = text.getBoundingClientRect();
      if (r.width && (r.left < box.left - 2 || r.right > box.right + 2)) clipped.push(text.textContent.slice(0, 80));
    }
  }
  return {cut, broken, scrolls, clipped};
}"""


# ---- charts that fit their labels (issue 47 A) ------------------------------------------------------------
# Every chart's SVG text (plotly's every layer but the hover's, vega's), each label as the quadrilateral it covers
# on screen: its text box (getBBox: the advance width and the font's em height, less 12 % of the font size above and
# below, the line's air) through the element's screen transform, so a label at 60 or 90 degrees is its slanted box,
# not the box around it. Two labels overlap when they cover each other by more than 1 px along every separating
# axis (the separating-axis test of two convex quadrilaterals); a label is cut when a corner lies outside its
# chart's drawing (plotly's first main-svg, vega's svg) or the window; small when its size on screen (the font size
# times the transform's scale) is below ``min_px``. What it returns: per chart with a problem, its name and lists.
CHART_LABELS = """(minPx) => {
  // One chart's visible SVG text: plotly's (every main-svg layer but the hover's) and vega's
  const charts = [...document.querySelectorAll('.js-plotly-plot, .vega-embed')]
    .filter(c => c.getBoundingClientRect().width > 0);
  const quadOf = el => {
    const b = el.getBBox(), m = el.getScreenCTM(), px = parseFloat(getComputedStyle(el).fontSize);
    const scale = Math.sqrt(Math.abs(m.a * m.d - m.b * m.c));
    const inset = Math.min(0.12 * px / scale, b.height / 4);
    const pts = [[b.x, b.y + inset], [b.x + b.width, b.y + inset], [b.x + b.width, b.y + b.height - inset],
                 [b.x, b.y + b.height - inset]];
    return {pts: pts.map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]), px: px * scale};
  };
  const project = (pts, [ax, ay]) => { const d = pts.map(([x, y]) => x * ax + y * ay);
    return [Math.min(...d), Math.max(...d)]; };
  const axes = pts => [0, 1].map(i => { const [x0, y0] = pts[i], [x1, y1] = pts[i + 1];
    const n = Math.hypot(x1 - x0, y1 - y0) || 1; return [-(y1 - y0) / n, (x1 - x0) / n]; });
  const depth = (p, q) => Math.min(...[...axes(p), ...axes(q)].map(ax => {
    const [a0, a1] = project(p, ax), [b0, b1] = project(q, ax); return Math.min(a1, b1) - Math.max(a0, b0); }));
  const out = [];
  charts.forEach((chart, index) => {
    const svg = chart.querySelector('svg');
    const frame = (chart.querySelector('.main-svg') || svg || chart).getBoundingClientRect();
    const texts = [...chart.querySelectorAll('svg text')]
      .filter(t => !t.closest('.hoverlayer') && t.textContent.trim() && t.getClientRects().length
                   && getComputedStyle(t).visibility !== 'hidden' && parseFloat(getComputedStyle(t).opacity) > 0
                   && !t.closest('[opacity="0"]'))
      .map(t => ({t, label: t.textContent.trim().slice(0, 30), ...quadOf(t)}))
      .filter(x => x.pts.every(([a, b]) => isFinite(a) && isFinite(b)));
    const name = `${chart.classList.contains('vega-embed') ? 'vega' : 'plotly'} ${index + 1}`
               + ` "${(chart.querySelector('.gtitle, .role-title-text')?.textContent || '').slice(0, 30)}"`;
    const small = texts.filter(x => x.px < minPx - 0.01).map(x => `${x.label} (${x.px.toFixed(1)} px)`);
    const cut = texts.filter(x => x.pts.some(([a, b]) => a < frame.left - 1 || a > frame.right + 1
        || b < frame.top - 1 || b > frame.bottom + 1 || a < -1 || a > innerWidth + 1)).map(x => x.label);
    const over = [];
    for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++)
      if (depth(texts[i].pts, texts[j].pts) > 1) over.push(`${texts[i].label} / ${texts[j].label}`);
    if (small.length || cut.length || over.length) out.push({chart: name, texts: texts.length, small, cut, over});
  });
  return out;
}"""


def chart_label_problems(page, min_px: float = 0) -> list[str]:
    """Every overlap, cut label and (with ``min_px``) label smaller than ``min_px`` in the page's charts, as
    ``chart: overlap a / b`` lines; [] when every chart fits its labels."""
    def measured() -> list[str]:
        return [f"{chart['chart']}: {kind} {item}" for chart in page.evaluate(CHART_LABELS, min_px)
                for kind, key in (("overlap", "over"), ("cut", "cut"), ("small", "small")) for item in chart[key]]

    # plotly lays a chart out again once it has measured its labels (automargin), on a timer: the page's DOM still for
    # 600 ms first (on a loaded machine two equal readings 300 ms apart came before the second layout had begun),
    # then the same answer twice, 300 ms apart
    wait_until_idle(page, quiet_ms=600)
    last = measured()
    for _ in range(10):
        page.wait_for_timeout(300)
        now = measured()
        if now == last:
            return now
        last = now
    return last


def assert_fits_the_laptop(page, name: str, restore_theme: bool = True) -> None:
    """At 1024 x 768: no control label, metric or chosen value cut to "…", no label word broken across lines ("Learnin g
    rate"), no sideways scroll hidden in the page, no chart title wider than its chart (plotly's SVG clips it), no
    chart label overlapping another or cut (``chart_label_problems``);
    and no WCAG 2.2 AA violation axe-core finds, in the light theme or the dark one
    (``assert_accessible_in_both_themes``).
    Screenshot: artifacts/screenshots/laptop-<name>.png."""
    assert page.viewport_size == LAPTOP, page.viewport_size
    screenshot(page, f"laptop-{name}")
    found = page.evaluate(MEASURE)
    scrolls = [s for s in found["scrolls"] if not any(allowed in s for allowed in ALLOWED_SCROLL)]
    shown = (found["cut"], found["broken"], scrolls, found["clipped"])
    assert shown == ([], [], [], []), f"{name} at 1024 x 768: {found}"
    problems = chart_label_problems(page)
    assert problems == [], f"{name} at 1024 x 768, a chart's labels overlap or are cut: {problems[:8]}"
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), f"{name}: the page scrolls"
    assert_accessible_in_both_themes(page, name, restore=restore_theme)


# ---- WCAG 2.2 AA as axe-core measures it in the page (issue 30 A) ------------------------------------------
# axe-core from the PyPI package axe-playwright-python (its axe.min.js; no CDN), run on the whole document with
# the rules tagged for WCAG 2.0, 2.1 and 2.2 levels A and AA. Called at every page and main view the laptop
# sweeps open (assert_fits_the_laptop), so every page and view is checked in the light and the dark theme.
WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]


@functools.cache
def _axe_source() -> str:
    import axe_playwright_python

    return (Path(axe_playwright_python.__file__).parent / "axe.min.js").read_text(encoding="utf-8")


# Only the violations come back to Python: axe's whole result (every passing rule with every element it passed, as
# HTML) was 0.25-0.8 MB a page, serialised by the page and sent over the DevTools protocol at each of the sweeps'
# axe runs; ``resultTypes`` keeps axe from collecting the passing elements at all (the rules run the same).
AXE_RUN = """([kind, values]) => axe.run(document, {runOnly: {type: kind, values}, resultTypes: ['violations']})
    .then(result => result.violations)"""


def axe_run(page, kind: str, values: list[str]) -> list[dict]:
    """axe-core's violations of the rules of ``kind`` ``"tag"`` or ``"rule"`` named in ``values``, on the whole page."""
    if not page.evaluate("typeof window.axe === 'object'"):
        page.evaluate(_axe_source())
    return page.evaluate(AXE_RUN, [kind, values])


# The rules of WCAG_TAGS whose outcome depends on colours: a theme switched in place changes colours only (CSS
# variables: the same DOM, roles, names and focus order), so the other rules' outcome cannot change with it.
COLOUR_RULES = ["color-contrast", "link-in-text-block"]


def axe_violations(page, rules: list[str] | None = None) -> list[str]:
    """One line per rule axe-core finds broken: its id, impact, help, and its first element with the reason.
    ``rules``: these rules only (default: every rule of WCAG 2.2 AA)."""
    lines = []
    for rule in axe_run(page, "tag", WCAG_TAGS) if rules is None else axe_run(page, "rule", rules):
        node = rule["nodes"][0]
        reason = " ".join(node.get("failureSummary", "").split())[:240]
        lines.append(f"{rule['id']} ({rule['impact']}, {len(rule['nodes'])} elements): {rule['help']}; "
                     f"e.g. {node['html'][:160]}: {reason}")
    return lines


def assert_accessible(page, name: str, rules: list[str] | None = None) -> None:
    violations = axe_violations(page, rules)
    assert violations == [], f"{name}: WCAG 2.2 AA (axe-core)\n" + "\n".join(violations)


APP_BACKGROUND = "getComputedStyle(document.querySelector('[data-testid=stApp]')).backgroundColor"
WHITE = "rgb(255, 255, 255)"


def in_theme(page, scheme: str) -> None:
    """The computer's colour scheme (``"dark"`` or ``"light"``), as its dark mode switches it: Streamlit's default
    theme choice follows it in place, with no rerun (the app's CSS follows too: ui/layout.py); wait until the
    page has re-drawn (its charts in the theme's colours)."""
    page.emulate_media(color_scheme=scheme)
    page.wait_for_function(f"({APP_BACKGROUND} === '{WHITE}') === {str(scheme == 'light').lower()}", timeout=30_000)
    wait_until_idle(page, quiet_ms=300)


def assert_accessible_in_both_themes(page, name: str, restore: bool = True) -> None:
    """axe-core on what the page shows in the theme it is in, then in the other one (switched in place, as a user's
    dark mode does, so the same session, run and view are checked in both: issue 30 A), then back (``restore``), or
    left there: a sweep's next view starts in it, one switch a view (``sweep_views`` ends in the light theme)."""
    dark = page.evaluate(f"{APP_BACKGROUND} !== '{WHITE}'")
    assert_accessible(page, f"{name} ({'dark' if dark else 'light'})")
    in_theme(page, "light" if dark else "dark")
    # In the other theme, the rules that read colours (the rest saw the same DOM a moment ago): about half of
    # each view's axe time in the sweeps, which run axe about a hundred times.
    assert_accessible(page, f"{name} ({'light' if dark else 'dark'})", COLOUR_RULES)
    if restore:
        in_theme(page, "dark" if dark else "light")


# ---- every main view at 1024 x 768 (issue 35 D): a click per view where a test already has the page open -----

def radio(label: str):
    """A radio option (the Explorer's views, the fine-tuning tasks): a click reruns the page."""
    return ("run", lambda page: page.locator('[data-testid="stRadio"] label').filter(has_text=label).first)


def segment(label: str):
    """A segmented control's button (Why?'s questions, the Embeddings views): a click reruns the page."""
    return ("run", lambda page: page.locator('[data-testid="stButtonGroup"] button').filter(has_text=label).first)


def tab(label: str):
    """A tab: drawn in the browser with the page, so a click shows it without a run."""
    return ("tab", lambda page: page.get_by_role("tab", name=label, exact=True))


def lazy_tab(label: str):
    """A tab that runs only when open (ui/layout.py, lazy_tabs): a click reruns the page."""
    return ("run", lambda page: page.get_by_role("tab", name=label, exact=True))


def sweep_views(page, name: str, views: list[tuple[str, tuple]]) -> None:
    """Open each ``(view, radio(...) | segment(...) | tab(...) | lazy_tab(...))`` as a user does and check that it fits
    the laptop (``assert_fits_the_laptop``: screenshot artifacts/screenshots/laptop-<name>-<view>.png).
    A plain tab runs nothing on the server, so half a second without change is enough there; a run is waited for
    until it has started and finished (``run_and_wait``). Each screenshot starts
    at the view's control (the window scrolled to it): the view is what it shows."""
    assert page.viewport_size == LAPTOP, page.viewport_size
    for view, (kind, control) in views:
        open_view(page, f"{name} {view}", kind, control)
        # the view's control at the top of the window, so that the screenshot shows the view, not the heading
        control(page).evaluate("element => element.scrollIntoView({block: 'start'})")
        assert_fits_the_laptop(page, f"{name}-{view}", restore_theme=False)
    if page.evaluate(f"{APP_BACKGROUND} !== '{WHITE}'"):
        in_theme(page, "light")


def open_view(page, name: str, kind: str, control) -> None:
    """Click a view's control as a user does and wait until it is drawn, with no exception on the page."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        if kind == "tab":
            control(page).click()
            wait_until_idle(page, quiet_ms=500)
        else:
            run_and_wait(page, control(page).click)
    except (PlaywrightTimeout, TimeoutError) as error:
        screenshot(page, f"timeout-{name.replace(' ', '-')}")
        raise AssertionError(f"{name}: {str(error).splitlines()[0]} (artifacts/screenshots/timeout-*.png); "
                             f"{_what_the_page_shows(page, control)}") from error
    assert page.locator('[data-testid="stException"]').count() == 0, name


# What a view's control and the app were at a timeout: whether the control took the click (its radio chosen, its tab
# or segment selected), what is drawn at its centre (where the click went), the runs counted and the run state.
_AT_CONTROL = """element => {
  const r = element.getBoundingClientRect();
  const hit = document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2);
  const input = element.querySelector('input');
  const app = document.querySelector('[data-testid=stApp]');
  return {selected: input ? input.checked : ['aria-selected', 'aria-pressed', 'aria-checked', 'data-selected']
            .map(name => element.getAttribute(name)).find(value => value !== null) ?? null,
          box: [r.x, r.y, r.width, r.height].map(Math.round),
          atCentre: hit && (hit.getAttribute('data-testid') || hit.tagName)
            + (element.contains(hit) ? ' (the control)' : ''),
          runs: window.__runs, state: app && app.getAttribute('data-test-script-state')};
}"""


def _what_the_page_shows(page, control) -> str:
    try:
        return f"the control and the app: {control(page).evaluate(_AT_CONTROL, timeout=5_000)}"
    except Exception as error:  # a diagnosis, never the failure itself
        return f"the control could not be read ({str(error).splitlines()[0]})"
