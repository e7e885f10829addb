"""The notebook widget in a real JupyterLab and a real Jupyter Notebook 7, in Chromium, offline.

One ``jupyter lab`` server (it serves Notebook 7's pages too) runs on temporary folders: no settings,
workspace or kernel spec of this machine takes part, and ``python3`` is this interpreter. Each front end
gets its own copy of examples/attention.ipynb plus a cell that shows markup tokens, and what a user sees is
checked: "Run All Cells" from the menu draws the three views, the arrow keys switch head and layer, the
kernel's ``view.selection`` follows them, markup tokens are text, nothing is requested outside localhost.

The test dropped in 1fd5f72 ran the cells as soon as the page said "Kernel status: Idle", and on a crowded
machine JupyterLab asked which kernel to start, or started a fresh one. Here the kernel is started through
the REST API and has answered a second client before the page opens, so the page finds the session of its
notebook; and the cells run only once the page's notebook is attached to that very kernel, connected and
idle, read from ``window.jupyterapp`` (``expose_app_in_browser``, as JupyterLab's own UI tests, Galata, do).
"""

from __future__ import annotations

import ast
import json
import os
import secrets
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.conftest import ROOT, _free_port, _mkdir, external_requests, screenshot
from tests.support.synthetic import EVIL

NOTEBOOK = ROOT / "examples" / "attention.ipynb"
VIEW = ".ib-attention[data-head]"
MARKUP = "<b>x</b>"
MARKUP_CELL = f"""import dataclasses

from tests.support.synthetic import synthetic_run
from vizcore.notebook import attention_widget

run = synthetic_run(layers=2, heads=2, pair=False)
run = dataclasses.replace(run, tokens=[{MARKUP!r} if token == "cat" else token for token in run.tokens])
attention_widget(run, view="lines")"""
TIMEOUT_S = 180  # one step (page attached, all cells run, the kernel's answer) on a crowded machine


@dataclass(frozen=True)
class Jupyter:
    url: str
    token: str
    root: Path
    runtime: Path

    def api(self, method: str, path: str, body: dict | None = None) -> dict:
        request = urllib.request.Request(
            f"{self.url}{path}", method=method, data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            text = response.read()
        return json.loads(text) if text else {}


def _settings(folder: Path) -> None:
    """User settings of both front ends: no news or update check (a toast over the notebook)."""
    notification = folder / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    notification.parent.mkdir(parents=True)
    notification.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))


def _kernel_spec(data: Path) -> None:
    """``python3`` is this interpreter, whatever else the machine has installed."""
    spec = data / "kernels" / "python3"
    spec.mkdir(parents=True)
    spec.joinpath("kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (ipykernel)", "language": "python"}))


@pytest.fixture(scope="module")
def jupyter(tmp_path_factory):
    base = tmp_path_factory.mktemp("jupyter")
    root, settings, data, runtime = (base / name for name in ("root", "settings", "data", "runtime"))
    root.mkdir()
    _settings(settings)
    _kernel_spec(data)
    token, port = secrets.token_hex(16), _free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT), "JUPYTER_CONFIG_DIR": str(base / "config"),
           "JUPYTER_DATA_DIR": str(data), "JUPYTER_RUNTIME_DIR": str(runtime), "JUPYTER_PLATFORM_DIRS": "0",
           "JUPYTERLAB_SETTINGS_DIR": str(settings), "JUPYTERLAB_WORKSPACES_DIR": str(base / "workspaces")}
    _mkdir(ROOT / "artifacts")
    with open(ROOT / "artifacts" / "jupyter-server.log", "w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ip=127.0.0.1", f"--port={port}",
             "--ServerApp.port_retries=0", f"--ServerApp.root_dir={root}", f"--IdentityProvider.token={token}",
             "--ServerApp.terminals_enabled=False", "--LabApp.news_url=",
             "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
             "--LabApp.extension_manager=readonly",
             "--LabApp.expose_app_in_browser=True", "--JupyterNotebookApp.expose_app_in_browser=True",
             "--KernelSpecManager.allowed_kernelspecs=python3"],
            cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
        server = Jupyter(f"http://127.0.0.1:{port}", token, root, runtime)
        try:
            _wait_for(lambda: _answers(server, process), "the jupyter server to answer")
            yield server
        finally:
            _stop(server, process)


def _answers(server: Jupyter, process: subprocess.Popen) -> bool:
    if process.poll() is not None:
        raise RuntimeError(f"jupyter lab exited with code {process.returncode}: see artifacts/jupyter-server.log")
    try:
        server.api("GET", "/api/status")
        return True
    except OSError:
        return False


def _stop(server: Jupyter, process: subprocess.Popen) -> None:
    try:
        server.api("POST", "/api/shutdown")  # stops the kernels too
        process.wait(timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()


def _wait_for(condition, what: str, timeout_s: float = TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout_s} s for {what}")
        time.sleep(0.25)


def _notebook(server: Jupyter, name: str) -> str:
    """A copy of the example notebook with the markup cell, and a kernel started for it; the kernel's id."""
    notebook = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    notebook["cells"].append({"cell_type": "code", "execution_count": None, "id": "markup", "metadata": {},
                              "outputs": [], "source": MARKUP_CELL})
    server.root.joinpath(name).write_text(json.dumps(notebook), encoding="utf-8")
    session = server.api("POST", "/api/sessions", {"path": name, "name": name, "type": "notebook",
                                                   "kernel": {"name": "python3"}})
    return session["kernel"]["id"]


# The notebook's panel (JupyterLab's and Notebook 7's alike) is attached to the kernel started above, idle.
_ATTACHED = """([path, kernel]) => {
    const app = window.jupyterapp;
    if (!app || !app.shell) return false;
    for (const widget of app.shell.widgets("main")) {
        const context = widget.context, session = widget.sessionContext;
        if (!context || context.path !== path || !context.isReady || !session || !session.isReady) continue;
        const connection = session.session && session.session.kernel;
        return Boolean(connection && connection.id === kernel && connection.connectionStatus === "connected"
                       && session.kernelDisplayStatus === "idle");
    }
    return false;
}"""
PAGES = {"jupyterlab": "/lab/tree/{}", "notebook7": "/notebooks/{}"}


@contextmanager
def kernel_client(server: Jupyter, kernel: str):
    """A second client of the notebook's kernel, once the kernel answers: reads values silently (no cell,
    no execution count)."""
    from jupyter_client import BlockingKernelClient

    client = BlockingKernelClient(connection_file=str(server.runtime / f"kernel-{kernel}.json"))
    client.load_connection_file()
    # No heartbeat channel, and ready means a kernel_info reply: wait_for_ready() also declares the kernel
    # dead when its heartbeat misses one 1 s beat, which a busy machine caused ("Kernel died before replying
    # to kernel_info" while the kernel was alive and the server still used it). The server watches the kernel.
    client.start_channels(hb=False)
    client.kernel_info(reply=True, timeout=TIMEOUT_S)

    def value(expression: str):
        reply = client.execute("", silent=True, user_expressions={"value": expression}, reply=True, timeout=60)
        return ast.literal_eval(reply["content"]["user_expressions"]["value"]["data"]["text/plain"])
    try:
        yield value
    finally:
        client.stop_channels()


def _open_and_run_all(page, server: Jupyter, host: str, name: str, kernel: str) -> None:
    """Open the notebook in ``host``'s page, wait until it is attached to ``kernel`` and idle, run all cells
    from the menu and wait for the three views to draw."""
    page.goto(f"{server.url}{PAGES[host].format(name)}?token={server.token}")
    page.wait_for_function("() => window.jupyterapp", polling=250, timeout=TIMEOUT_S * 1000)
    page.evaluate("() => window.jupyterapp.restored.then(() => true)")  # the layout is in place
    page.wait_for_function(_ATTACHED, arg=[name, kernel], polling=250, timeout=TIMEOUT_S * 1000)
    page.locator(".lm-MenuBar-itemLabel").get_by_text("Run", exact=True).click()
    page.locator(".lm-Menu-itemLabel").get_by_text("Run All Cells", exact=True).click()  # waits until enabled
    page.wait_for_function(f"document.querySelectorAll({VIEW!r}).length === 3", polling=250,
                           timeout=TIMEOUT_S * 1000)


def _wait_drawn(view, layer: str, head: str) -> None:
    """Until ``view`` says it has drawn ``layer``/``head`` (1-based; a layer is drawn once inflated)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        view.page.wait_for_function("([element, layer, head]) => element.dataset.layer === layer"
                                    " && element.dataset.head === head", arg=[view.element_handle(), layer, head],
                                    polling=100, timeout=30_000)
    except PlaywrightTimeout:
        shown = view.get_attribute("data-layer"), view.get_attribute("data-head")
        raise AssertionError(f"the view shows layer, head {shown}, not {(layer, head)}") from None


@pytest.mark.parametrize("host", list(PAGES))
def test_the_example_notebook_draws_and_switches_the_view(jupyter, page, host):
    name = f"{host}.ipynb"
    kernel = _notebook(jupyter, name)
    page.dialogs = []
    page.on("dialog", lambda dialog: (page.dialogs.append(dialog.message), dialog.dismiss()))
    with kernel_client(jupyter, kernel) as kernel_value:
        assert kernel_value("__import__('sys').executable") == sys.executable
        try:
            _open_and_run_all(page, jupyter, host, name, kernel)
        except Exception:
            screenshot(page, f"{host}-not-drawn")
            raise
        view, grid, markup = (page.locator(VIEW).nth(i) for i in range(3))
        assert [view.get_attribute(a) for a in ("data-view", "data-layer", "data-head")] == ["heatmap", "3", "1"]
        assert grid.get_attribute("data-view") == "grid"
        view.focus()
        view.press("ArrowRight")
        _wait_drawn(view, layer="3", head="2")
        view.press("ArrowDown")  # in command mode the notebook's own key for "next cell"
        _wait_drawn(view, layer="4", head="2")
        assert view.evaluate("element => element === document.activeElement")
        _wait_for(lambda: kernel_value("view.selection") == {"layer": 3, "head": 1, "view": "heatmap"},
                  "the kernel's view.selection to follow the keys")
    labels = markup.locator(".ib-token").all_text_contents()
    assert MARKUP in labels and EVIL in labels
    assert markup.locator("b, img").count() == 0 and page.dialogs == []
    view.scroll_into_view_if_needed()
    screenshot(page, f"{host}-widget")
    assert external_requests(page.requests_made) == []
