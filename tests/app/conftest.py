"""AppTest helpers shared by every page's tests."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")
TIMEOUT = 180  # the first run loads a model; 2 shared cores can be slow


def _scan_installed_components_once() -> None:
    """AppTest scans every installed distribution's metadata for v2 component manifests on *every* run
    (``AppTest._run`` -> ``discover_and_register_components``); a real server scans once, at start. With
    the test venv's ~190 distributions that scan was about 0.5 s of a typical 0.3-0.8 s page run, so most of
    this tier's time. Nothing is installed while the tests run, so one scan per process gives every run the
    same manifests (the app's own components are inline: it has none)."""
    import functools

    from streamlit.components.v2 import manifest_scanner

    if not hasattr(manifest_scanner.scan_component_manifests, "cache_info"):
        manifest_scanner.scan_component_manifests = functools.cache(manifest_scanner.scan_component_manifests)


@pytest.fixture(scope="session", autouse=True)
def installed_components_scanned_once():
    """In a fixture, not at import: xdist's controller loads this file too and runs no test."""
    _scan_installed_components_once()


@pytest.fixture(autouse=True)
def no_job_left_behind():
    """Every AppTest session of this process shares the one job queue: each test leaves it empty."""
    yield
    from ui.jobs import job_queue

    queue = job_queue()
    for job in queue.running() + queue.line():
        queue.stop(job)
        job.join(60)


@pytest.fixture
def new_app():
    """``new_app(page=None, **query_params)`` -> an AppTest of app.py (not run yet), optionally on a page."""

    from streamlit.testing.v1 import AppTest

    def make(page: str | None = None, **query_params: str) -> AppTest:
        at = AppTest.from_file(APP, default_timeout=TIMEOUT)
        for name, value in query_params.items():
            at.query_params[name] = value
        if page:
            at.switch_page(page)
        return at

    return make


def decode_plotly(value):
    """Plotly sends numpy arrays as ``{"dtype", "bdata", "shape"}``; turn those back into arrays."""
    import base64

    import numpy as np

    if isinstance(value, dict) and "bdata" in value:
        array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = [int(n) for n in str(value.get("shape", len(array))).split(",")]
        return array.reshape(shape)
    return np.asarray(value)


def plotly_traces(at, index: int = 0) -> list[dict]:
    """The traces of the ``index``-th plotly chart on the page, as plain dicts."""
    import json

    return json.loads(at.get("plotly_chart")[index].proto.spec)["data"]


def set_shared(at: AppTest, **values: str) -> AppTest:
    """Set shared sidebar values (text, pair, model_choice, model_other, device) and rerun.

    AppTest drops sidebar widgets from its element tree after the first rerun of an app that uses
    st.navigation (the real browser keeps them), so tests set the sidebar through session state.
    """
    for name, value in values.items():
        at.session_state[f"shared.{name}"] = value
    return at.run()


def open_tab(at: AppTest, key: str, label: str) -> AppTest:
    """What a click on one of a page's lazy tabs does (ui/layout.py): the page reruns with it open."""
    at.session_state[key] = label
    return at.run()


def renderer_payload(at, index=0) -> dict:
    """The client-side attention view's data (``ui/attention_component.py``): the renderer's payload, sent in
    its binary form; layers as deflated bytes."""
    from vizcore.attention.payload import read_binary_payload

    return read_binary_payload(at.get("bidi_component")[index].proto.bytes)


def renderer_head(payload: dict):
    """The head the view opens on, ``[query, key]`` as the browser decodes it (8-bit weights)."""
    from vizcore.attention.payload import decode_layer

    initial = payload["initial"]
    layer = decode_layer(payload["layers"][str(initial["layer"])], payload["numHeads"], payload["n"])
    return layer[initial["head"]]
