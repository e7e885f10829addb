"""Streamlit side of the Attention Explorer: cached results, URL state, and the shared controls.

The page's state lives in the URL (``?text&pair&model&layer&head&view``, layer and head 1-based) so
a link reproduces the view: it is read once per session (``LINK``) and rewritten after every run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import streamlit as st

from ui import layer_head, url_state
from ui.state import Selection, get_model, get_run
from vizcore.attention.aggregate import attention_rollout, head_mean
from vizcore.attention.head_stats import head_statistics
from vizcore.model.record import Run

if TYPE_CHECKING:
    from vizcore.norms.value_norms import ValueNorms

KEY_LAYER, KEY_HEAD = layer_head.KEYS  # the session's layer and head (1-based), shared with the other pages
KEY_VIEW = "attention.view"
KEY_PAIR_FILTER = "attention.pair_filter"
KEY_HIDE = "attention.hide_special"
KEY_MERGE = "attention.merge_words"

VIEWS = {
    "heatmap": "Head heatmap",
    "grid": "All heads",
    "lines": "Head view",
    "bertviz": "bertviz views",
    "aggregate": "Aggregations",
    "values": "Value-weighted",
    "stats": "Head statistics",
    "compare": "Compare",
    "export": "Export",
}
# Views drawn by the client-side renderer, whose own controls choose the layer and head.
BROWSER_VIEWS = ("heatmap", "grid", "lines")


def attention_for(model: str, device: str, text: str, pair: str | None) -> Run:
    """Attention of any model/sentence through the server's one cache of runs; VizError for the caller."""
    return get_run(model, device, text, pair)


def result_key(sel: Selection) -> tuple[str, str, str, str | None]:
    return sel.model, sel.device, sel.text, sel.pair


@st.cache_data(max_entries=8, show_spinner="Computing head statistics…")
def statistics(key: tuple, _result: Run) -> dict[str, np.ndarray]:
    return head_statistics(_result.attention, _result.tokens, _result.special_mask)


@st.cache_data(max_entries=8, show_spinner="Aggregating heads…")
def aggregates(key: tuple, _result: Run) -> dict[str, np.ndarray]:
    """Head means and rollout per layer, ``[layer, query, key]`` float32."""
    return {"mean": head_mean(_result.attention).astype(np.float32),
            "rollout": attention_rollout(_result.attention).astype(np.float32)}


@st.cache_resource(show_spinner="Weighing each attention weight by what it moves…", max_entries=4)
def value_norms_for(model: str, device: str, text: str, pair: str | None) -> ValueNorms:
    """Value-weighted attention of a sentence (one more run, with the values): shared like the runs, read-only
    (cache_resource: at 512 tokens the weights alone are 75 MB, which cache_data would copy at every rerun)."""
    from vizcore.norms.value_norms import value_norms

    return value_norms(get_model(model, device), text, pair)


LINK = url_state.Link("attention", {**layer_head.URL_PARAMS, "view": (KEY_VIEW, url_state.OneOf(tuple(VIEWS)))})


# Choices drawn only in some views; Streamlit forgets a widget's value when a run does not draw it.
STICKY_KEYS = ("attention.aggregate", "attention.bertviz", "attention.compare_mode", "attention.compare_text",
               "attention.compare_model", "attention.image_format", "attention.stat_map", "attention.flow_query")


def keep_view_choices() -> None:
    for key in STICKY_KEYS:
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]


def open_head(layer: int, head: int) -> None:
    """Callback target: show head (1-based) as a heatmap. Runs before the widgets are drawn."""
    st.session_state[KEY_LAYER] = int(layer)
    st.session_state[KEY_HEAD] = int(head)
    st.session_state[KEY_VIEW] = "heatmap"


def write_url() -> None:
    """Rewrite the address bar so copying it reproduces this view."""
    url_state.write({"layer": st.session_state[KEY_LAYER], "head": st.session_state[KEY_HEAD],
                     "view": st.session_state.get(KEY_VIEW, "heatmap")})
