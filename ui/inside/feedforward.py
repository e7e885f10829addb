"""Step by step's Feed-forward neurons tab: the sentence's strongest neurons in the layer, one neuron over the
tokens (with its top examples over the demo corpus), and the non-negative factors of the activations as Ecco
draws them. The run is the server's queue's (``ui.state``), with the feed-forward activations captured."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ui import state
from ui.feedback import CHART, or_none
from ui.layout import for_screen
from ui.state import segmented_choice
from vizcore.corpus.results import DEMO_DIR
from vizcore.neurons.corpus import neuron_top
from vizcore.neurons.figures import activation_bars, examples_table, factor_heatmap, factor_text, neurons_table
from vizcore.neurons.nmf import MAX_FACTORS
from vizcore.neurons.sentence import (
    SentenceFactors,
    SentenceNeurons,
    from_run,
    neuron_over_tokens,
    sentence_factors,
    strongest,
)

PAGE = "step_by_step"
KEY_NEURON, KEY_FACTORS, KEY_SCOPE = f"{PAGE}.neuron", f"{PAGE}.factors", f"{PAGE}.nmf_scope"
SCOPES = {"layer": "this layer", "all": "every layer"}
KEEP = {KEY_FACTORS: 5, KEY_SCOPE: "layer"}  # pinned across tab visits (ui/layout.lazy_tabs)


@st.cache_resource(show_spinner="Running the model…", max_entries=4)
def get_neurons(name: str, device: str, text: str, pair: str | None) -> SentenceNeurons:
    """Every layer's feed-forward activations of the sentence (read-only: 6 x T x 1,536 floats for MiniLM)."""
    from vizcore.model.run import Capture

    return from_run(state.get_queue(name, device).submit(text, pair, capture=Capture(hidden=False, neurons=True)))


@st.cache_data(show_spinner="Factorising the activations…", max_entries=16)
def get_factors(name: str, device: str, text: str, pair: str | None, factors: int,
                layer: int | None) -> SentenceFactors:
    return sentence_factors(get_neurons(name, device, text, pair), factors, layer)


@st.cache_resource(show_spinner=False, max_entries=1)
def demo_neurons() -> pd.DataFrame | None:
    """The built-in demo's neuron examples (read-only), or None when it has none."""
    from vizcore.neurons.corpus import load_neurons

    return load_neurons(DEMO_DIR) if (DEMO_DIR / "neurons.parquet").is_file() else None


def _demo_model() -> str | None:
    import json

    path = DEMO_DIR / "summary.json"
    return json.loads(path.read_text(encoding="utf-8")).get("model") if path.is_file() else None


def show(sel: state.Selection, layer: int) -> None:
    """The tab, for the sidebar's sentence and the page's layer (1-based)."""
    s = or_none(get_neurons, sel.model, sel.device, sel.text, sel.pair)
    if s is None:
        return
    st.markdown(f"Each layer's feed-forward part widens every token's vector to **{s.width:,} neurons**, applies "
                "GELU, and narrows it back (step 11 of *The layer, step by step*). Geva et al. (2021) read each "
                "neuron as a *key*: it fires on a pattern of the input, and its row of W₂ is what it then adds.")
    st.subheader(f"The strongest neurons of layer {layer} on this sentence")
    best = strongest(s, 10, layer - 1)
    if best:
        st.dataframe(neurons_table(pd.DataFrame(best)), hide_index=True, key=f"{PAGE}.strongest",
                     column_config={"activation": st.column_config.NumberColumn(format="%.3f"),
                                    "position": st.column_config.NumberColumn(help="0-based token position")})
    if KEY_NEURON not in st.session_state or not 1 <= st.session_state[KEY_NEURON] <= s.width:
        st.session_state[KEY_NEURON] = best[0]["neuron"] + 1 if best else 1
    neuron = int(st.number_input(f"Neuron of layer {layer}", 1, s.width, step=1, key=KEY_NEURON,
                                 help=f"1 to {s.width:,}; the table above lists the strongest"))
    values = neuron_over_tokens(s, layer - 1, neuron - 1)
    st.plotly_chart(for_screen(activation_bars(s.tokens, values, f"Neuron {neuron} of layer {layer} at each token")),
                    key=f"{PAGE}.neuron_bars", config=CHART)
    _show_demo_examples(sel.model, layer, neuron)
    _show_factors(sel, s, layer)


def _show_demo_examples(model: str, layer: int, neuron: int) -> None:
    table = demo_neurons()
    if table is None or model != _demo_model():
        st.caption("Top examples over a corpus: on the Corpus page (Neurons tab) for a run of this model.")
        return
    records = neuron_top(table, layer - 1, neuron - 1, 5)
    st.markdown(f"**Where neuron {neuron} of layer {layer} fires most in the demo corpus** (its 5 largest "
                "activations of 1,119 sentences; all 20 on the Corpus page's Neurons tab):")
    st.dataframe(examples_table(records), hide_index=True, key=f"{PAGE}.neuron_examples",
                 column_config={"activation": st.column_config.NumberColumn(format="%.3f")})


def _show_factors(sel: state.Selection, s: SentenceNeurons, layer: int) -> None:
    st.subheader("Non-negative factors of the activations (NMF), as Ecco draws them")
    words = int((~s.special).sum())
    if words < 1:
        st.info("The sentence has no tokens besides [CLS] and [SEP].")
        return
    top = min(MAX_FACTORS, words)
    if not 1 <= st.session_state.get(KEY_FACTORS, 5) <= top:
        st.session_state[KEY_FACTORS] = min(5, top)
    left, right = st.columns(2)
    factors = int(left.number_input("Factors", 1, top, step=1, key=KEY_FACTORS, help=f"1 to {top}: one per word "
                                    "piece at most"))
    with right:
        st.caption("Neurons factorised")
        scope = segmented_choice("Neurons factorised", SCOPES, KEY_SCOPE, "layer")
    found = or_none(get_factors, sel.model, sel.device, sel.text, sel.pair, factors,
                    layer - 1 if scope == "layer" else None)
    if found is None:
        return
    where = (f"layer {layer}'s {s.width:,}" if scope == "layer"
             else f"all {s.num_layers} layers' {s.num_layers * s.width:,}")
    st.html(factor_text(found.tokens, found.strengths))
    st.plotly_chart(for_screen(factor_heatmap(found.tokens, found.strengths, f"{factors} factors of {where} neurons")),
                    key=f"{PAGE}.factors_heatmap", config=CHART)
    st.dataframe(pd.DataFrame({
        "factor": range(1, factors + 1),
        "its strongest neurons (layer-neuron, from 1)": [", ".join(f"{n['layer'] + 1}-{n['neuron'] + 1}"
                                                                  for n in top_neurons)
                                                        for top_neurons in found.top_neurons]}),
        hide_index=True, key=f"{PAGE}.factor_neurons")
    st.caption(f"The tokens x neurons matrix of {where} neurons, negative values (GELU's dip, down to -0.17) set "
               "to 0 as Ecco does, [CLS] and [SEP] left out, factorised as W H with W, H ≥ 0 (Lee & Seung's "
               f"updates, 500 of them, seed 0): each token is coloured by its strongest factor, paler where that "
               f"factor is weaker, its number beside it. Relative error ‖A − WH‖/‖A‖ = {found.relative_error:.2f}: "
               "the factors are a summary, not the whole. See docs/NEURONS.md.")
