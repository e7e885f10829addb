"""The Embeddings page's sentence similarity: a list of sentences -> the cosine of every two sentence vectors.

Computation: vizcore/embeddings/vectors.py · figure: vizcore/embeddings/figures.py · CLI: python -m vizcore similarity
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from ui import url_state
from ui.embeddings import page as emb
from ui.feedback import CHART, or_none
from ui.layout import for_screen
from ui.state import get_model, selection
from vizcore.embeddings.figures import cosine_heatmap
from vizcore.embeddings.vectors import cosine_matrix, sentence_vectors
from vizcore.errors import VizError
from vizcore.model.loading import LoadedModel

KEY_SENTENCES = "embeddings.sim.sentences"
MAX_SENTENCES = 40
EXAMPLE = (
    "A man is playing a guitar on the stage.",
    "Someone performs a song with an instrument.",
    "The cat is sleeping on the sofa.",
    "A kitten naps on the couch.",
    "The bank raised its interest rates.",
    "Borrowing money has become more expensive.",
    "We walked along the bank of the river.",
)
URL_PARAMS = {"sentences": (KEY_SENTENCES, url_state.Text())}


@st.cache_data(show_spinner="Computing sentence vectors…", max_entries=32)
def cosines(name: str, device: str, texts: tuple[str, ...], pooling: str, layer: str) -> np.ndarray:
    """(N, N) cosine matrix of the texts' sentence vectors."""
    loaded = get_model(name, device)
    return cosine_matrix(sentence_vectors(loaded, texts, pooling, emb.layer_code(loaded, layer)))


def sentences() -> tuple[str, ...]:
    st.session_state.setdefault(KEY_SENTENCES, "\n".join(EXAMPLE))
    text = st.text_area(f"Sentences, one per line (2 to {MAX_SENTENCES})", key=KEY_SENTENCES, height=215)
    return tuple(line.strip() for line in text.splitlines() if line.strip())


def check_count(texts: tuple[str, ...]) -> tuple[str, ...]:
    if not 2 <= len(texts) <= MAX_SENTENCES:
        raise VizError(f"Give 2 to {MAX_SENTENCES} sentences, one per line; there are {len(texts)}.")
    return texts


def nearest_table(texts: tuple[str, ...], matrix: np.ndarray) -> pd.DataFrame:
    """Each sentence, its most similar other sentence and their cosine."""
    others = np.where(np.eye(len(texts), dtype=bool), -np.inf, matrix)
    best = others.argmax(1)
    return pd.DataFrame({"#": range(1, len(texts) + 1), "sentence": texts,
                         "most similar": [f"{j + 1}. {texts[j]}" for j in best],
                         "cosine": [float(matrix[i, j]) for i, j in enumerate(best)]})


def show(loaded: LoadedModel) -> dict:
    st.markdown("Each sentence becomes **one vector** (its token vectors pooled); two sentences are as similar "
                "as the **cosine** of their vectors: 1 = same direction, 0 = unrelated directions.")
    texts = sentences()
    pooling, layer = emb.vector_controls(loaded)
    params = {"sentences": "\n".join(texts), "pooling": pooling, "layer": layer}
    if or_none(check_count, texts) is None:
        return params
    emb.warn_if_cut(loaded, texts, "the sentences")
    sel = selection()
    matrix = or_none(cosines, sel.model, sel.device, texts, pooling, layer)
    if matrix is None:
        return params
    off = np.where(np.eye(len(texts), dtype=bool), -np.inf, matrix)
    i, j = np.unravel_index(off.argmax(), off.shape)
    st.metric("Most similar pair", f"{i + 1} and {j + 1}: cosine {matrix[i, j]:.3f}")
    title = f"Cosine similarity of {len(texts)} sentences · {loaded.name}"
    numbered = [f"{n}. {t}" for n, t in enumerate(texts, 1)]
    st.plotly_chart(for_screen(cosine_heatmap(matrix, [str(n) for n in range(1, len(texts) + 1)], title, hover=numbered,
                                              row_labels=numbered)),
                    key="embeddings.sim.heatmap", config=CHART)
    st.caption(emb.vector_caption(loaded, pooling, layer) + " Columns are the rows' sentences by number; hover a "
               "cell for both sentences and the exact cosine.")
    st.dataframe(nearest_table(texts, matrix), hide_index=True, key="embeddings.sim.table",
                 column_config={"cosine": st.column_config.NumberColumn(format="%.4f")})
    return params
