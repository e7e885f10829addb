"""The Embeddings page's queries and keys: one head's query and key vectors over many sentences in one
projection (AttentionViz, Yeh et al. 2023). Clicking a point opens its sentence in the Attention Explorer.

Computation: vizcore/embeddings/projection.py · figures: vizcore/embeddings/figures.py
"""

from __future__ import annotations

import streamlit as st

from ui import layer_head, url_state
from ui.attention import page as ua
from ui.embeddings import page as emb
from ui.feedback import CHART, or_none
from ui.layout import for_screen
from ui.state import get_model, selection, set_sentence
from vizcore.embeddings.figures import projection_scatter, query_key_colouring, query_key_hover, query_key_symbols
from vizcore.embeddings.projection import (
    MAX_TOKENS,
    METHODS,
    JointProjection,
    QueryKeyCloud,
    TokenPoints,
    project_queries_keys,
    query_key_vectors,
)
from vizcore.model.loading import LoadedModel

KEY_LAYER, KEY_HEAD = layer_head.KEYS  # the session's layer and head, 1-based
KEY_COLOUR = "embeddings.qk.colour"
KEY_WORDS = "embeddings.qk.words"
KEY_NORMALISE = "embeddings.qk.normalise"
KEY_CHART = "embeddings.qk.chart"
KEY_OPEN = "embeddings.qk.open"  # set by a click: the Explorer link to follow on the next run
COLOURS = {"kind": "query / key", "position": "position", "token": "token"}
SPINNERS = {"pca": "Projecting queries and keys with PCA…",
            "umap": "Projecting queries and keys with UMAP… (its first run in a server compiles numba code: tens "
                    "of seconds)"}


def _switch(raw: str) -> bool:
    if raw not in ("0", "1"):
        raise ValueError("normalise is 1 (AttentionViz's translation and scaling) or 0.")
    return raw == "1"


# qk_layer and qk_head: the session's layer and head (ui/layer_head.py), checked where the steppers are drawn
URL_PARAMS = {"qk_layer": (KEY_LAYER, url_state.Integer(1)), "qk_head": (KEY_HEAD, url_state.Integer(1)),
              "qk_colour": (KEY_COLOUR, url_state.OneOf(tuple(COLOURS))), "qk_words": (KEY_WORDS, url_state.Words()),
              "normalise": (KEY_NORMALISE, _switch)}


@st.cache_data(show_spinner="Reading the head's queries and keys…", max_entries=8)
def cloud(name: str, device: str, texts: tuple[str, ...], layer: int, head: int) -> QueryKeyCloud:
    return query_key_vectors(get_model(name, device), texts, layer, head, MAX_TOKENS)


@st.cache_data(show_spinner=False, max_entries=16)
def projected(name: str, device: str, texts: tuple[str, ...], layer: int, head: int, method: str, dims: int,
              normalise: bool) -> JointProjection:
    return project_queries_keys(cloud(name, device, texts, layer, head), method, dims, normalise)


def follow_click() -> None:
    """Called at the top of the page: a click on the last run opens the Explorer (the sentence, layer, head)."""
    target = st.session_state.pop(KEY_OPEN, None)
    if target is not None:
        st.switch_page("pages/attention.py", query_params=target)


def clicked(points: TokenPoints, layer: int, head: int) -> None:
    """on_select: the clicked point's sentence becomes the sidebar's; the Explorer opens on this head."""
    chosen = (st.session_state.get(KEY_CHART) or {}).get("selection", {}).get("points", [])
    index = chosen[0].get("customdata") if chosen else None
    if index is None:
        return
    row = int(index[0] if isinstance(index, list) else index) % len(points)
    text = points.texts[int(points.sentence[row])]
    set_sentence(text)
    st.session_state.update({ua.KEY_LAYER: layer + 1, ua.KEY_HEAD: head + 1, ua.KEY_VIEW: "heatmap"})
    st.session_state[KEY_OPEN] = {"text": text, "layer": str(layer + 1), "head": str(head + 1), "view": "heatmap",
                                  "model": selection().model}


def agreement_caption(joint: JointProjection, dims: int, d_head: int) -> str:
    a = joint.agreement
    return (f"**Does distance stand for attention?** For each query, the correlation between its scores q·k and its "
            f"distances to the keys of its sentence, averaged over queries (−1 = the nearest key is always the most "
            f"attended): **{a['shown']:+.2f}** in this {dims}-D view; in the head's {d_head} dimensions "
            f"{a['normalised']:+.2f} with AttentionViz's translation and scaling, {a['raw']:+.2f} without.")


def show(loaded: LoadedModel) -> dict:
    st.markdown(
        "One head compares each **query** (what a token looks for) with every **key** (what a token offers): "
        "attention is softmax(q·k / √d) over a sentence's keys. AttentionViz (Yeh et al. 2023) puts the queries and "
        "keys of many sentences into **one** projection, so a query lies near the keys it attends to. "
        "**Click a point** to open its sentence in the Attention Explorer at this layer and head.")
    sentences = emb.source_controls(loaded)
    layer, head = layer_head.layer_head(loaded.num_layers, loaded.num_heads)
    method, dims = emb.projection_controls()
    st.session_state.setdefault(KEY_COLOUR, "kind")
    st.session_state.setdefault(KEY_NORMALISE, True)
    with st.container(horizontal=True, wrap=True):  # side by side where they fit, one above the other on a laptop
        colour = st.radio("Colour by", list(COLOURS), key=KEY_COLOUR, format_func=COLOURS.get, horizontal=True,
                          width="content")
        normalise = st.toggle("AttentionViz's key translation", key=KEY_NORMALISE,
                              help="Keys are moved so their mean is the queries' mean, then queries x c and keys / c "
                                   "so both have the same mean length. No attention weight changes.", width="content")
    params = {**sentences.params, "qk_layer": layer, "qk_head": head, "method": method, "dims": dims,
              "qk_colour": colour, "normalise": int(normalise)}
    sel = selection()
    data = or_none(cloud, sel.model, sel.device, sentences.texts, layer - 1, head - 1)
    if data is None:
        return params
    emb.settle_highlight(KEY_WORDS, data.points, sentences.senses is not None)
    words = emb.highlight(KEY_WORDS, data.points, sentences.senses is not None) if colour == "token" else []
    params["qk_words"] = ",".join(words) if colour == "token" else None
    with st.spinner(SPINNERS[method]):
        joint = or_none(projected, sel.model, sel.device, sentences.texts, layer - 1, head - 1, method, dims, normalise)
    if joint is None:
        return params
    points = data.points
    title = (f"Head {layer}.{head}: {len(points):,} queries and {len(points):,} keys · {METHODS[method]} · "
             f"{loaded.name}")
    figure = projection_scatter(joint.projection, query_key_hover(points), query_key_colouring(points, colour, words),
                                title, symbols=query_key_symbols(points))
    st.plotly_chart(for_screen(figure), key=KEY_CHART, config=CHART, on_select=lambda: clicked(points, layer - 1,
                                                                                               head - 1),
                    selection_mode="points")
    st.markdown(agreement_caption(joint, dims, data.queries.shape[1]))
    st.caption(f"Circles are queries, diamonds keys; {len(points):,} tokens of {sentences.what}"
               + (f" (the first {len(points.texts)} sentences: at most {MAX_TOKENS:,} tokens)" if points.capped else "")
               + ". The translation keeps every weight because adding one vector to all keys adds the same amount to "
                 "all of a query's scores; its price: distance then follows the part of the scores that differs "
                 "between queries, and no longer the part they share (e.g. every query looking at [SEP]).")
    return params
