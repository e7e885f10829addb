"""Embeddings: sentence vectors and their similarity, semantic search, one word in many contexts, token maps,
and one head's queries and keys in one space (AttentionViz).

Computation: vizcore/embeddings/ (vectors, search, contexts, projection) · figures: vizcore/embeddings/figures.py ·
CLI: python -m vizcore similarity | embed · docs: docs/EMBEDDINGS.md
UI: ui/embeddings/ (page: the view on screen, shared controls, the link; similarity, search, contexts, tokens,
queries: one view each)
"""

import streamlit as st

from ui import url_state
from ui.embeddings import page as emb
from ui.embeddings import queries
from ui.embeddings.link import LINK, SECTIONS

queries.follow_click()
st.title("Embeddings: what the vectors say")
st.markdown(
    "Every token leaves each layer as a vector, and a sentence can be pooled into one. Compare sentences by the "
    "**cosine** of their vectors, **search** a collection by meaning, follow **one word** through the layers in "
    "different sentences, and see **many tokens at once** as points, down to one head's queries and keys.")
url_state.warn(url_state.read(LINK))
emb.keep_choices()
view = emb.choose_view()
loaded = emb.model()
params = SECTIONS[view].show(loaded) or {}
url_state.write({"view": view, **params})
