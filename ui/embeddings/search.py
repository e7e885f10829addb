"""The Embeddings page's semantic search: a query against the built-in collection or uploaded texts.

Computation: vizcore/embeddings/search.py, vectors.py · CLI: python -m vizcore embed (a file's vectors)
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from ui import url_state
from ui.embeddings import page as emb
from ui.feedback import or_none
from ui.state import get_model, selection
from vizcore.embeddings.search import Hit, Texts, builtin_collection, read_texts, search
from vizcore.embeddings.vectors import sentence_vectors
from vizcore.model.loading import LoadedModel

KEY_QUERY = "embeddings.search.query"
KEY_TOP_K = "embeddings.search.top_k"
KEY_COLLECTION = "embeddings.search.collection"
KEY_UPLOAD = "embeddings.search.upload"
KEY_COLUMN = "embeddings.search.column"
COLLECTIONS = {"builtin": "Built-in collection", "upload": "Your file"}
EXAMPLES = ("How do I save money for a house?", "It is freezing outside today.", "My dog loves to play fetch.",
            "Where can I see the stars at night?")
MAX_TOP_K = 50
URL_PARAMS = {"query": (KEY_QUERY, url_state.Text()), "top_k": (KEY_TOP_K, url_state.Integer(1, MAX_TOP_K)),
              "collection": (KEY_COLLECTION, url_state.OneOf(("builtin",)))}  # a file cannot be linked


@st.cache_data(show_spinner="Embedding the collection (once per model, pooling and layer)…", max_entries=8)
def collection_vectors(name: str, device: str, texts: tuple[str, ...], pooling: str, layer: str) -> np.ndarray:
    loaded = get_model(name, device)
    return sentence_vectors(loaded, texts, pooling, emb.layer_code(loaded, layer))


@st.cache_data(show_spinner=False, max_entries=64)
def ranked(name: str, device: str, query: str, texts: tuple[str, ...], pooling: str, layer: str,
           top_k: int) -> list[Hit]:
    loaded = get_model(name, device)
    vectors = collection_vectors(name, device, texts, pooling, layer)
    return search(loaded, query, texts, top_k, pooling, emb.layer_code(loaded, layer), vectors=vectors)


def use_example(text: str) -> None:
    st.session_state[KEY_QUERY] = text


@st.cache_data(show_spinner=False, max_entries=4)
def uploaded(data: bytes, name: str, column: str | None) -> Texts:
    return read_texts(data, name, column)


def builtin() -> Texts:
    texts = builtin_collection()
    return Texts(texts, tuple(range(1, len(texts) + 1)), 0, "the built-in collection")


def collection() -> Texts | None:
    """The texts searched: the built-in collection, or the uploaded file (None, after its message, when it
    cannot be read)."""
    st.session_state.setdefault(KEY_COLLECTION, "builtin")
    choice = st.radio("Search in", list(COLLECTIONS), key=KEY_COLLECTION, format_func=COLLECTIONS.get,
                      horizontal=True)
    if choice == "builtin":
        return builtin()
    left, right = st.columns([3, 1])
    file = left.file_uploader("A .txt file (one text per line) or a .csv file", type=["txt", "csv"], key=KEY_UPLOAD)
    column = right.text_input("CSV column (if several)", key=KEY_COLUMN).strip() or None
    if file is None:
        st.info("Upload a file to search it; the built-in collection is searched until then.")
        return builtin()
    return or_none(uploaded, file.getvalue(), file.name, column)


def hits_table(hits: list[Hit], texts: Texts) -> pd.DataFrame:
    return pd.DataFrame({"rank": [h.rank for h in hits], "cosine": [h.score for h in hits],
                         "text": [h.text for h in hits], "line": [texts.lines[h.index] for h in hits]})


def show(loaded: LoadedModel) -> dict:
    st.markdown("The query and every text become sentence vectors; the texts are ranked by their **cosine** with "
                "the query. Matches are by meaning, not by shared words: try a query that uses none of the "
                "collection's words.")
    st.session_state.setdefault(KEY_QUERY, EXAMPLES[0])
    st.session_state.setdefault(KEY_TOP_K, 10)
    with st.container(horizontal=True):
        for i, text in enumerate(EXAMPLES):
            st.button(text, key=f"embeddings.search.example{i}", on_click=use_example, args=(text,))
    query = st.text_input("Query", key=KEY_QUERY)
    left, right = st.columns([3, 2])
    with left:
        texts = collection()
    top_k = right.slider("Results", 1, MAX_TOP_K, key=KEY_TOP_K)
    pooling, layer = emb.vector_controls(loaded)
    params = {"query": query, "top_k": top_k, "pooling": pooling, "layer": layer,
              "collection": "builtin" if st.session_state[KEY_COLLECTION] == "builtin" else None}
    if texts is None:
        return params
    sel = selection()
    emb.warn_if_cut(loaded, [query], "The query")
    hits = or_none(ranked, sel.model, sel.device, query, texts.texts, pooling, layer, top_k)
    if hits is None:
        return params
    st.markdown(f"**Top {len(hits)} of {len(texts):,} texts** in {texts.source} for “{query.strip()[:200]}”")
    st.dataframe(hits_table(hits, texts), hide_index=True, key="embeddings.search.hits", width="stretch",
                 column_config={"cosine": st.column_config.ProgressColumn("cosine", format="%.4f", min_value=0.0,
                                                                         max_value=1.0, width="small"),
                                "rank": st.column_config.NumberColumn(width="small"),
                                "line": st.column_config.NumberColumn(width="small")})
    st.caption(emb.vector_caption(loaded, pooling, layer)
               + (f" {texts.skipped_blank:,} blank lines were skipped." if texts.skipped_blank else ""))
    return params

