"""The client-side attention renderer as a Streamlit component (``st.components.v2``), for Home and the Explorer.

Head and layer switches, hovers and focus happen in the browser. The component reports a switch or a
grid click with ``setStateValue("selection", {layer, head, view})`` (0-based); the callback writes it to
the page's session keys (1-based; Home and the Explorer pass the session's ``shared.layer``/``shared.head``,
ui/layer_head.py), and the page's run rewrites the URL.

Bytes: the component's data is the renderer's payload in its binary form (``payload.binary_payload``:
deflated codes with no base64, a quarter fewer bytes than the JSON form). It opens on ``initial``; when
the browser itself made the switch, the next run keeps the same ``initial`` (the view already shows it), so
the data is unchanged and Streamlit sends a reference to the message the browser already has instead of
the weights again. Above ``FULL_MAX_TOKENS`` tokens the payload carries the selected layer, so choosing
another layer is one run that sends that layer.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, MutableMapping
from functools import partial

import streamlit as st

from ui.state import presenting
from vizcore.attention.aggregate import ViewOptions
from vizcore.attention.payload import (
    RENDERER_FONT,
    attention_payload,
    binary_payload,
    deflate_layer,
    grid_codes,
    loaded_layers,
)
from vizcore.attention.renderer import streamlit_module_js
from vizcore.model.record import Run
from vizcore.plot import PROJECTOR_MIN_SIZE

NAME = "inside_bert.attention"


@st.cache_resource(show_spinner=False)
def _mount() -> Callable:
    return st.components.v2.component(NAME, js=streamlit_module_js(), isolate_styles=False)


class _Encodings:
    """Each run's encoded layers and grid, kept while the run itself is alive (runs live in the server's
    cache of runs). Keyed by identity, not by (model, text): a run recomputed for the same text gets fresh
    encodings."""

    def __init__(self) -> None:
        self._lock = threading.RLock()  # the weakref callback may run in a collection inside `of`
        self._items: dict[int, tuple[weakref.ref, dict]] = {}

    def of(self, result: Run) -> dict:
        with self._lock:
            item = self._items.get(id(result))
            if item is None or item[0]() is not result:
                item = (weakref.ref(result, partial(self._forget, id(result))), {})
                self._items[id(result)] = item
            return item[1]

    def _forget(self, key: int, _dead: weakref.ref) -> None:
        with self._lock:
            item = self._items.get(key)
            if item is not None and item[0]() is None:
                del self._items[key]


_ENCODINGS = _Encodings()


def _payload(result: Run, layers: list[int], initial: tuple[int, int, str], options: ViewOptions,
             controls: dict, font: int) -> bytes:
    stored = _ENCODINGS.of(result)

    def encode(layer: int) -> bytes:
        if layer not in stored:
            stored[layer] = deflate_layer(result.attention[layer])
        return stored[layer]

    if "grid" not in stored:
        stored["grid"] = grid_codes(result.attention)
    layer, head, view = initial
    payload = attention_payload(result, layer, head, view, options, layers=layers, controls=controls, encode=encode,
                                grid=stored["grid"], font=font)
    return binary_payload(payload)


def store_selection(state: MutableMapping, key: str, keys: dict[str, str], chosen: dict) -> None:
    """A switch made in the browser (``chosen``: 0-based layer, head, view) into the page's session keys,
    1-based, and marked as already on screen (the next run keeps the component's data as it is)."""
    if "layer" in chosen and "head" in chosen:
        state[keys["layer"]] = int(chosen["layer"]) + 1
        state[keys["head"]] = int(chosen["head"]) + 1
        if "view" in keys and chosen.get("view") in ("heatmap", "grid"):
            state[keys["view"]] = chosen["view"]
        state[f"{key}.from_view"] = True


def _selected(key: str, keys: dict[str, str]) -> None:
    store_selection(st.session_state, key, keys, (st.session_state.get(key) or {}).get("selection") or {})


def attention_view(result: Run, key: str, keys: dict[str, str], layer: int, head: int,
                   view: str = "heatmap", options: ViewOptions = ViewOptions(), controls: dict | None = None) -> None:
    """Draw ``result`` in the renderer on ``layer``/``head`` (1-based) and ``view``.

    ``keys`` names the page's session keys for ``layer``, ``head`` (and ``view``) that a switch in the
    browser updates. ``controls`` picks the renderer's own controls (see ``attention_payload``).
    """
    current = (layer - 1, head - 1, view)
    origin_key = f"{key}.origin"
    if not st.session_state.pop(f"{key}.from_view", False) or origin_key not in st.session_state:
        st.session_state[origin_key] = current
    origin = st.session_state[origin_key]
    shown = {"views": False, "filters": False, "layerHead": True} | (controls or {})
    # 20 px, not the body's 24: a 21-token pair keeps every token's label in a 1024-px window (a label needs its
    # font size + 2 px of cell)
    font = PROJECTOR_MIN_SIZE if presenting() else RENDERER_FONT
    data = _payload(result, loaded_layers(result, layer - 1), origin, options, shown, font)
    _mount()(key=key, data=data, on_selection_change=lambda: _selected(key, keys), width="stretch")
