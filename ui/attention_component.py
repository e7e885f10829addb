"""The client-side attention renderer as a Streamlit component (``st.components.v2``), for Home and the Explorer.

Head and layer switches, hovers and focus happen in the browser. The component reports a switch or a
grid click with ``setStateValue("selection", {layer, head, view})`` (0-based); the callback writes it to
the page's session keys (1-based; Home and the Explorer pass the session's ``shared.layer``/``shared.head``,
ui/layer_head.py), and the page's run rewrites the URL.

Bytes: the component's data is the renderer's payload in its binary form (``payload.binary_payload``:
deflated codes with no base64, a quarter fewer bytes than the JSON form). It opens on ``initial``; when
the browser itself made the switch, the next run keeps the same ``initial`` (the view already shows it), so
the data is unchanged and Streamlit sends a reference to the message the browser already has instead of
the weights again. Above ``FULL_MAX_TOKENS`` tokens the payload carries the layer it opens on and the URL of the
run's other layers (``vizcore/attention/shelf.py``): the view fetches the layer it switches to, and the next one
ahead, with no page run; a layer it cannot fetch it asks the page for (``missing``), which sends it.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from functools import partial

import streamlit as st

from ui.state import presenting
from vizcore.attention.aggregate import ViewOptions
from vizcore.attention.payload import FULL_MAX_TOKENS, RENDERER_FONT, attention_payload, binary_payload, loaded_layers
from vizcore.attention.renderer import streamlit_module_js
from vizcore.attention.shelf import layer_url, server_shelf
from vizcore.model.record import Run
from vizcore.plot import PROJECTOR_MIN_SIZE

NAME = "inside_bert.attention"


@st.cache_resource(show_spinner=False)
def _mount() -> Callable:
    return st.components.v2.component(NAME, js=streamlit_module_js(), isolate_styles=False)


def _payload(result: Run, layers: list[int], initial: tuple[int, int, str], options: ViewOptions,
             controls: dict, font: int) -> bytes:
    shelf = server_shelf()
    layer, head, view = initial
    fetched = len(result.tokens) > FULL_MAX_TOKENS  # the other layers come from the shelf's URL
    if fetched:
        shelf.encode_all_soon(result)
    payload = attention_payload(result, layer, head, view, options, layers=layers, controls=controls,
                                encode=partial(shelf.encoded, result), grid=shelf.grid(result), font=font,
                                layer_url=layer_url(shelf.token(result)) if fetched else None)
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


def _missing(key: str) -> None:
    """The view could not fetch a layer (the server lost the run, or a proxy sent the request elsewhere): the next
    run sends it in the payload, as before the shelf."""
    wanted = (st.session_state.get(key) or {}).get("missing")
    if isinstance(wanted, int):
        st.session_state[f"{key}.missing"] = wanted


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
    # The layers the view opens with: the origin's (a switch made in the browser fetched its layer itself, so this
    # run's data stays the same and Streamlit sends none of it again), and one the view could not fetch.
    layers = loaded_layers(result, origin[0])
    missing = st.session_state.pop(f"{key}.missing", None)
    if isinstance(missing, int) and 0 <= missing < result.num_layers:
        layers = sorted({*layers, missing})
    data = _payload(result, layers, origin, options, shown, font)
    _mount()(key=key, data=data, on_selection_change=lambda: _selected(key, keys),
             on_missing_change=lambda: _missing(key), width="stretch")
