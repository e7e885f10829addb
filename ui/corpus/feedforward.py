"""The Corpus page's Neurons tab: each feed-forward neuron's top-activating tokens over the run (``neurons.parquet``),
and the neurons found by the token they fire on."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from ui.feedback import or_none
from ui.layer_head import layer_head
from vizcore.neurons.corpus import CONTEXT, load_neurons, neuron_top, search_token, shape_of
from vizcore.neurons.figures import examples_table, neurons_table

KEY_TOKEN, KEY_LAYER, KEY_NEURON = "corpus.neuron_token", "corpus.neuron_layer", "corpus.neuron"
DEFAULT_TOKEN = "dog"


@st.cache_resource(show_spinner="Reading the neurons' examples…", max_entries=2)
def neuron_table(folder: str, stamp: float) -> pd.DataFrame:
    """``neurons.parquet`` (read-only, shared: 184,320 rows for the demo, too many to copy on every rerun)."""
    return load_neurons(folder)


def has_neurons(folder: str) -> bool:
    return (Path(folder).expanduser() / "neurons.parquet").is_file()


def show_neurons(folder: str, stamp: float) -> None:
    """The tab: the search by token, then one neuron's examples (the search's first neuron to begin with)."""
    if not has_neurons(folder):
        st.info("This run kept no neuron examples: rerun it with python -m vizcore corpus ... --neurons 20 "
                "(or tick the neurons box for your sentences).")
        return
    table = neuron_table(folder, stamp)
    layers, width, k = shape_of(table)
    st.markdown(f"A feed-forward **neuron** is one of the {width:,} hidden units of a layer's feed-forward part "
                "(after the GELU). Geva et al. (2021) read each as a *key* that fires on a pattern of its input; "
                f"here are, per neuron, the **{k} tokens of the corpus where it fires most** (as Neuronpedia shows).")
    st.session_state.setdefault(KEY_TOKEN, DEFAULT_TOKEN)
    token = st.text_input("Find neurons by the token they fire on", key=KEY_TOKEN,
                          help="a word or a word piece (## and case are ignored)")
    found = or_none(search_token, table, token, 20) if token.strip() else None
    default = None
    if found is not None and len(found):
        default = (int(found["layer"].iloc[0]) + 1, int(found["neuron"].iloc[0]) + 1)
        st.dataframe(neurons_table(found), hide_index=True, key="corpus.neuron_search", column_config={
            "hits": st.column_config.NumberColumn("hits", help=f"how many of the neuron's {k} top examples are it"),
            "share": st.column_config.NumberColumn("share", format="percent"),
            "max_activation": st.column_config.NumberColumn("largest", format="%.3f"),
            "mean_activation": st.column_config.NumberColumn("mean", format="%.3f")})
    elif found is not None:
        st.info(f"No neuron has '{token.strip()}' among its {k} top examples in this run.")
    layer, neuron = layer_head(layers, width, (KEY_LAYER, KEY_NEURON), ("Layer", "Neuron"), default=default)
    records = neuron_top(table, layer - 1, neuron - 1)
    st.dataframe(examples_table(records), hide_index=True, key="corpus.neuron_examples", column_config={
        "activation": st.column_config.NumberColumn(format="%.3f"),
        "line": st.column_config.NumberColumn("line", help="0-based line of the input")})
    st.caption(f"Neuron {neuron} of layer {layer} (counted from 1): its {k} largest activations over the corpus, "
               f"each with {CONTEXT} tokens either side. [CLS] and [SEP] are not candidates. Top examples show what "
               "makes a neuron fire most, not everything it does: see docs/NEURONS.md.")
