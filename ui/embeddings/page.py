"""Streamlit side of the Embeddings page: the view on screen, the sidebar's model, the controls several views
share (pooling and layer of a sentence vector; the sentences of the projections), the link.

Each view lives in its own module beside this one (``ui/embeddings/<view>.py``) with ``URL_PARAMS`` and
``show(loaded) -> params``.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from ui import url_state
from ui.feedback import or_stop
from ui.state import get_model, segmented_choice, selection, warn_if_longer
from vizcore.embeddings.contexts import CONTEXT_SETS, state_label
from vizcore.embeddings.figures import common_words
from vizcore.embeddings.projection import TokenPoints, spread
from vizcore.embeddings.search import builtin_collection
from vizcore.embeddings.vectors import LAST4, POOLING_NAMES, POOLINGS, parse_layer, sequence_limit
from vizcore.model.loading import LoadedModel

VIEWS = {
    "similarity": "Sentence similarity",
    "search": "Semantic search",
    "contexts": "One word, many contexts",
    "tokens": "Token map",
    "queries": "Queries and keys",
}
KEY_VIEW = "embeddings.view"
KEY_POOLING = "embeddings.pooling"
KEY_LAYER = "embeddings.layer"  # "1".."L" or "last4"; empty: the last layer
SHORT_POOLINGS = {"mean": "mean", "cls": "[CLS]", "max": "max"}
KEY_SOURCE = "embeddings.source"
KEY_COUNT = "embeddings.count"
KEY_OWN = "embeddings.own"
KEY_METHOD = "embeddings.method"
KEY_DIMS = "embeddings.dims"
SOURCES = {"senses": "Word-in-context examples", "collection": "Built-in collection", "own": "Your sentences"}
SENSE_TEXTS = tuple(c.sentence for s in CONTEXT_SETS.values() for c in s.contexts)
SENSES = tuple((s.word, c.sense) for s in CONTEXT_SETS.values() for c in s.contexts)  # (word, sense) per sentence
DEFAULT_COUNT, MAX_COUNT = 60, 200  # sentences taken from the collection for a projection
# Drawn by some views only: Streamlit forgets a widget's value in a run that does not draw it.
STICKY = (KEY_POOLING, KEY_LAYER, KEY_SOURCE, KEY_COUNT, KEY_OWN, KEY_METHOD, KEY_DIMS)


def layer_text(raw: str) -> str:
    value = raw.strip().lower()
    if value != LAST4 and not value.isdigit():
        raise ValueError("layer is a layer number (1-based) or last4.")
    return value


def dims_number(raw: str) -> int:
    return int(url_state.OneOf(("2", "3"))(raw))


# The controls several views share; each view adds its own (ui/embeddings/link.py puts them together).
URL_PARAMS = {
    "view": (KEY_VIEW, url_state.OneOf(tuple(VIEWS))),
    "pooling": (KEY_POOLING, url_state.OneOf(tuple(POOLINGS))),
    "layer": (KEY_LAYER, layer_text),
    "source": (KEY_SOURCE, url_state.OneOf(tuple(SOURCES))),
    "count": (KEY_COUNT, url_state.Integer(2, MAX_COUNT)),
    "own": (KEY_OWN, url_state.Text()),
    "method": (KEY_METHOD, url_state.OneOf(("pca", "umap"))),
    "dims": (KEY_DIMS, dims_number),
}


def keep_choices() -> None:
    state = st.session_state
    for key in STICKY:
        if key in state:
            state[key] = state[key]


def choose_view() -> str:
    return segmented_choice("View", VIEWS, KEY_VIEW, "similarity")


def model() -> LoadedModel:
    """The sidebar's model (shared, read-only), or a clear message and the page stops."""
    sel = selection()
    return or_stop(get_model, sel.model, sel.device)


# ---- a sentence vector: pooling and layer (similarity and search) --------------------------------------

def vector_controls(loaded: LoadedModel) -> tuple[str, str]:
    """Pooling and layer radios; returns (pooling, layer as the link writes it: "1".."L" or "last4")."""
    top = loaded.num_layers
    options = [str(i) for i in range(1, top + 1)] + ([LAST4] if top >= 4 else [])
    state = st.session_state
    state[KEY_LAYER] = str(state.get(KEY_LAYER) or top)
    url_state.settle_choice(KEY_LAYER, options, str(top))
    state.setdefault(KEY_POOLING, "mean")
    left, right = st.columns([2, 3])
    pooling = left.radio("Pooling", POOLINGS, key=KEY_POOLING, horizontal=True, format_func=SHORT_POOLINGS.get,
                         help="How the token vectors of a sentence become one vector: their mean ([CLS] and [SEP] "
                              "included, padding not), the first token's vector ([CLS]), or each dimension's "
                              "largest value.")
    layer = right.select_slider(
        "Layer", options, key=KEY_LAYER,
        format_func=lambda o: "last four" if o == LAST4 else (f"{o} (last)" if o == str(top) else o),
        help="Which layer's token vectors are pooled; 'last four' puts the last four layers' pooled vectors "
             "side by side (BERT's feature-based recipe).")
    return pooling, layer


def warn_if_cut(loaded: LoadedModel, texts: tuple[str, ...] | list[str], what: str,
                limit: int | None = None) -> None:
    """Say when only the first ``limit`` tokens of some texts are read (sentence vectors: ``sequence_limit``;
    the token maps read up to the model's maximum)."""
    from vizcore.model.run import input_length

    limit = sequence_limit(loaded) if limit is None else limit
    if len(texts) == 1:
        warn_if_longer(input_length(loaded, texts[0]), limit, what)
        return
    cut = sum(input_length(loaded, text) > limit for text in texts if text.strip())
    if cut:
        st.warning(f"{cut:,} of {what} {'has' if cut == 1 else 'have'} more than {limit:,} tokens, all that is read "
                   f"of a text here: only the first {limit:,} of each are used.")


def layer_code(loaded: LoadedModel, layer: str):
    """The layer as vizcore takes it (0-based int or "last4")."""
    return parse_layer(layer, loaded.num_layers)


def vector_caption(loaded: LoadedModel, pooling: str, layer: str) -> str:
    where = "the last four layers, side by side" if layer == LAST4 else f"layer {layer} of {loaded.num_layers}"
    default = pooling == "mean" and layer == str(loaded.num_layers)
    return (f"Sentence vectors: {POOLING_NAMES[pooling]} of {where}."
            + (" With these defaults the vectors are what sentence-transformers gives for this model "
               "(equal to 1e-5 for the embedded all-MiniLM-L6-v2)." if default else ""))


# ---- the sentences of the projections ----------------------------------------------------------------

@dataclass(frozen=True)
class Sentences:
    texts: tuple[str, ...]
    senses: tuple[tuple[str, str], ...] | None  # per sentence: the word it shows and its sense (the examples)
    what: str  # for captions
    params: dict  # for the link


def source_controls(loaded: LoadedModel) -> Sentences:
    """The sentences to project: the word-in-context examples, some of the collection, or the user's."""
    state = st.session_state
    state.setdefault(KEY_SOURCE, "senses")
    state.setdefault(KEY_COUNT, DEFAULT_COUNT)
    state.setdefault(KEY_OWN, "\n".join(SENSE_TEXTS[:6]))
    source = st.radio("Sentences", list(SOURCES), key=KEY_SOURCE, format_func=SOURCES.get, horizontal=True)
    if source == "senses":
        return Sentences(SENSE_TEXTS, SENSES, f"the {len(SENSE_TEXTS)} word-in-context sentences "
                         f"({', '.join(CONTEXT_SETS)}, two senses each)", {"source": source})
    if source == "collection":
        collection = builtin_collection()
        count = st.slider("Sentences from the collection (spread evenly over its topics)", 2, MAX_COUNT, key=KEY_COUNT)
        return Sentences(spread(collection, count), None, f"{count} of the {len(collection)} sentences of the "
                         "built-in collection", {"source": source, "count": count})
    text = st.text_area("Your sentences, one per line", key=KEY_OWN, height=160)
    texts = tuple(line.strip() for line in text.splitlines() if line.strip())
    warn_if_cut(loaded, texts, "your sentences" if len(texts) > 1 else "Your sentence", loaded.max_length)
    return Sentences(texts, None, f"your {len(texts)} sentences", {"source": source, "own": "\n".join(texts)})


def state_slider(key: str, label: str, top: int) -> int:
    """A slider over the hidden states, 0 (embeddings) to ``top``, starting at the last; a state the model
    does not have is reported when a link asked for it (url_state.settle)."""
    url_state.settle(key, top, 0, top)
    return int(st.select_slider(label, list(range(top + 1)), key=key, format_func=state_label))


def settle_highlight(key: str, points: TokenPoints, examples: bool) -> list[str]:
    """The words to colour, before the multiselect is drawn (called whichever the colouring, so a link's words
    are checked): the examples' words (``examples``) or the most frequent uncommon words to start with."""
    default = list(CONTEXT_SETS) if examples else common_words(points)
    return url_state.settle_words(key, common_words(points, count=10_000), default)


def highlight(key: str, points: TokenPoints, examples: bool) -> list[str]:
    """The words to colour (the rest grey): a multiselect over the words of the sentences, most frequent
    first (see ``settle_highlight``)."""
    options = common_words(points, count=10_000)
    settle_highlight(key, points, examples)
    return st.multiselect("Words to colour (most frequent first; the rest are grey)", options, key=key)


def projection_controls(*, dims_help: str = "") -> tuple[str, int]:
    """Method (PCA / UMAP) and 2-D / 3-D."""
    state = st.session_state
    state.setdefault(KEY_METHOD, "pca")
    state.setdefault(KEY_DIMS, 2)
    left, right = st.columns(2)
    method = left.radio("Projection", ["pca", "umap"], key=KEY_METHOD, horizontal=True,
                        format_func={"pca": "PCA (linear, exact)", "umap": "UMAP (neighbourhoods)"}.get,
                        help="PCA keeps the directions of largest spread; UMAP keeps who is near whom. UMAP's first "
                             "run in a server compiles its code (numba): tens of seconds; later ones take seconds.")
    dims = right.radio("Dimensions", [2, 3], key=KEY_DIMS, horizontal=True, format_func=lambda d: f"{d}-D",
                       help=dims_help or "3-D: drag to turn the cloud.")
    return method, int(dims)

