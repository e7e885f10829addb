"""The Embeddings page's token map: every token of many sentences at one layer, projected to 2-D or 3-D.

Computation: vizcore/embeddings/projection.py · figures: vizcore/embeddings/figures.py
"""

from __future__ import annotations

import streamlit as st

from ui import url_state
from ui.embeddings import page as emb
from ui.feedback import CHART, or_none
from ui.layout import for_screen
from ui.state import get_model, selection
from vizcore.embeddings.contexts import state_label
from vizcore.embeddings.figures import point_colouring, point_hover, projection_scatter
from vizcore.embeddings.projection import MAX_TOKENS, METHODS, Projection, TokenCloud, project, token_vectors
from vizcore.model.loading import LoadedModel

KEY_STATE = "embeddings.tokens.state"  # 0 = embeddings, i = layer i
KEY_COLOUR = "embeddings.tokens.colour"
KEY_WORDS = "embeddings.tokens.words"
KEY_SPECIAL = "embeddings.tokens.special"
COLOURS = {"word": "word", "position": "position", "sentence": "sentence"}
SPINNERS = {"pca": "Projecting with PCA…",
            "umap": "Projecting with UMAP… (its first run in a server compiles numba code: tens of seconds)"}


# map_layer: 0 = the embeddings, then the model's layers (its top checked where the slider is drawn)
URL_PARAMS = {"map_layer": (KEY_STATE, url_state.Integer(0)), "colour": (KEY_COLOUR, url_state.OneOf(tuple(COLOURS))),
              "words": (KEY_WORDS, url_state.Words())}


@st.cache_data(show_spinner="Reading every token's vector…", max_entries=8)
def cloud(name: str, device: str, texts: tuple[str, ...], state: int, special: bool) -> TokenCloud:
    return token_vectors(get_model(name, device), texts, state, MAX_TOKENS, special)


@st.cache_data(show_spinner=False, max_entries=16)
def projected(name: str, device: str, texts: tuple[str, ...], state: int, special: bool, method: str,
              dims: int) -> Projection:
    return project(cloud(name, device, texts, state, special).vectors, method, dims)


def caption(data: TokenCloud, what: str, special: bool) -> str:
    points = data.points
    text = (f"{len(points):,} tokens of {what}" + ("" if special else ", [CLS] and [SEP] left out") + ".")
    if points.capped:
        text += (f" Only the first {len(points.texts):,} of {points.total_texts:,} sentences are drawn: at most "
                 f"{MAX_TOKENS:,} tokens ({points.total_tokens:,} in all) keep the projection and the browser quick.")
    return text + " Hover a point for its token, word, position and sentence."


def show(loaded: LoadedModel) -> dict:
    st.markdown("Every token of many sentences is a point: its vector at one layer, squeezed into 2 or 3 "
                "dimensions. At the **embeddings** a word is one point wherever it appears; move up the layers "
                "and watch the copies of one word spread out by meaning and mix with their neighbours.")
    sentences = emb.source_controls(loaded)
    texts, senses = sentences.texts, sentences.senses
    top = loaded.num_layers
    state = emb.state_slider(KEY_STATE, "Layer", top)
    method, dims = emb.projection_controls()
    st.session_state.setdefault(KEY_COLOUR, "word")
    left, right = st.columns([2, 1])  # a quarter of 1024 px cut the toggle's label to "[CLS] and [S…"
    colour = left.radio("Colour by", list(COLOURS), key=KEY_COLOUR, horizontal=True)
    special = right.toggle("[CLS] and [SEP]", key=KEY_SPECIAL, help="Special tokens sit far from the words.")
    params = {**sentences.params, "map_layer": state, "method": method, "dims": dims,
              "colour": colour}
    sel = selection()
    data = or_none(cloud, sel.model, sel.device, texts, state, special)
    if data is None:
        return params
    emb.settle_highlight(KEY_WORDS, data.points, senses is not None)
    words = emb.highlight(KEY_WORDS, data.points, senses is not None) if colour == "word" else []
    params["words"] = ",".join(words) if colour == "word" else None
    with st.spinner(SPINNERS[method]):
        projection = or_none(projected, sel.model, sel.device, texts, state, special, method, dims)
    if projection is None:
        return params
    title = f"{len(data.points):,} tokens at {state_label(state)} · {METHODS[method]} · {loaded.name}"
    figure = projection_scatter(projection, point_hover(data.points),
                                point_colouring(data.points, colour, words, senses), title)
    st.plotly_chart(for_screen(figure), key="embeddings.tokens.chart", config=CHART)
    split = (" An example's word is split by its sense: one colour, a symbol per sense."
             if senses and colour == "word" else "")
    st.caption(caption(data, sentences.what, special) + split)
    return params
