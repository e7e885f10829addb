"""The notebook widget in a real JupyterLab, in Chromium: examples/attention.ipynb is opened and run with
"Run All Cells", both views draw (the renderer through anywidget's JupyterLab extension), the first
switches head with an arrow key, the second opens on the grid. Nothing is requested outside localhost.
(Markup as text and the kernel's side of the messages: tests/e2e/test_notebook_widget_browser.py.)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.e2e.conftest import ROOT, _free_port, external_requests, screenshot

NOTEBOOK = ROOT / "examples" / "attention.ipynb"
VIEW = ".ib-attention[data-head]"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    folder, settings = tmp_path_factory.mktemp("lab"), tmp_path_factory.mktemp("lab-settings")
    shutil.copy(NOTEBOOK, folder / "attention.ipynb")
    port = _free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT), "JUPYTER_CONFIG_DIR": str(settings / "cfg"),
           "JUPYTER_RUNTIME_DIR": str(settings / "runtime")}
    with open(ROOT / "artifacts" / "jupyterlab.log", "w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ip=127.0.0.1", "--allow-root",
             f"--ServerApp.root_dir={folder}", "--IdentityProvider.token=", "--ServerApp.password=",
             "--ServerApp.disable_check_xsrf=True",
             "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
             ],
            cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"{url}/api", timeout=2)
                break
            except OSError:
                if process.poll() is not None:
                    raise RuntimeError("jupyter lab exited: see artifacts/jupyterlab.log") from None
                time.sleep(0.5)
        # The notebook's kernel is started here, so JupyterLab opens it attached and never asks which kernel.
        session = json.dumps({"path": "attention.ipynb", "type": "notebook", "name": "attention.ipynb",
                              "kernel": {"name": "python3"}}).encode()
        request = urllib.request.Request(f"{url}/api/sessions", data=session, method="POST",
                                         headers={"Content-Type": "application/json"})
        urllib.request.urlopen(request, timeout=60).close()
        try:
            yield url, folder
        finally:
            process.terminate()
            process.wait(timeout=30)


def test_the_example_notebook_draws_the_view_in_jupyterlab(lab, page):
    url, _ = lab
    page.goto(f"{url}/lab/tree/attention.ipynb")
    page.wait_for_selector(".jp-Notebook", timeout=120_000)
    page.wait_for_function("document.body.textContent.includes('Kernel status: Idle')", timeout=120_000)
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.get_by_text("Run All Cells", exact=True).click()
    select = page.locator(".jp-Dialog .jp-Dialog-button.jp-mod-accept")  # "Select" (the kernel)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not page.locator(VIEW).count():
        if select.count() and select.is_visible():  # JupyterLab may ask which kernel to start
            select.click()
        time.sleep(0.5)
    if not page.locator(VIEW).count():
        screenshot(page, "jupyterlab-not-drawn")
    page.wait_for_selector(VIEW, timeout=10_000)
    view = page.locator(VIEW).first
    assert (view.get_attribute("data-layer"), view.get_attribute("data-head")) == ("3", "1")
    view.click()
    view.press("ArrowRight")
    assert view.get_attribute("data-head") == "2"
    page.wait_for_selector(f"{VIEW} >> nth=1", timeout=120_000)  # the pair's grid
    assert page.locator(".ib-attention").nth(1).get_attribute("data-view") == "grid"
    screenshot(page, "jupyterlab-widget")
    assert external_requests(page.requests_made) == []
