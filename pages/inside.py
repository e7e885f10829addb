"""Attention, step by step: one layer of the real model recomputed from its weights, three demos, and the layer's
feed-forward neurons on the sentence.

Computation: vizcore/inside/steps.py, vizcore/inside/demos.py, vizcore/neurons/ · figures: vizcore/inside/figures.py,
vizcore/neurons/figures.py, vizcore/plot.py · CLI: python -m vizcore neurons (the recomputation has none; it is
checked in tests/unit/test_steps.py) · docs: docs/NEURONS.md
UI: ui/inside/ (page: the cached recomputation and demos, the matrix and check displays; feedforward: the neurons
tab). URL: /step-by-step
"""

import pandas as pd
import streamlit as st

from ui import url_state
from ui.feedback import CHART, or_none, or_stop
from ui.inside import feedforward
from ui.inside.page import (
    LINK,
    get_embedding_parts,
    get_padding,
    get_permutation,
    get_run,
    get_scaling,
    get_steps,
    get_variance_curve,
    show_check,
    show_matrix,
)
from ui.layer_head import layer_head
from ui.layout import for_screen, lazy_tabs
from ui.state import attention_or_stop, model_or_stop, selection, warn_if_truncated
from vizcore.colours import ATTENTION
from vizcore.inside.demos import D_K_CHOICES, causal_weights, weight_above_diagonal
from vizcore.inside.figures import change_bars, softmax_bars, token_labels, variance_figure
from vizcore.inside.steps import MASKED, architecture
from vizcore.plot import display_tokens

PAGE = "step_by_step"

st.title("Attention, step by step")
sel = selection()
loaded = model_or_stop(sel)
url_state.warn(url_state.read(LINK))

if loaded.is_decoder:  # no recomputation for decoders, but their own causal pattern is worth seeing
    st.warning("This model is a decoder. The step-by-step recomputation supports BERT-family encoders; "
               "below is the model's own causal (look-ahead) pattern.")
    result = attention_or_stop(sel)
    warn_if_truncated(result)
    layer, head = layer_head(result.num_layers, result.num_heads)
    weights = result.attention[layer - 1, head - 1]
    labels = token_labels(result.tokens)
    show_matrix(weights, f"{result.model}: its own causal weights, layer {layer}, head {head}", f"{PAGE}.decoder",
                rows=labels, cols=labels, row_title="query", col_title="key", value_name="weight",
                scale=ATTENTION)
    st.metric("Largest weight on a later key (0 = causal)", f"{weight_above_diagonal(weights):.1e}")
    url_state.write({"layer": layer, "head": head})
    st.stop()

or_stop(architecture, loaded)
run = or_stop(get_run, sel.model, sel.device, sel.text, sel.pair)
warn_if_truncated(run)
labels = token_labels(run.tokens)
st.markdown(f"**{sel.model}** on the sentence in the sidebar ({len(run.tokens)} tokens). Each step below is "
            "computed here from the model's weights, then compared with what the model itself computes. "
            "Supported: BERT-family encoders (BERT, RoBERTa, MiniLM: `encoder.layer`), MPNet (with its relative "
            "position bias) and DistilBERT.")

layer, head = layer_head(loaded.num_layers, loaded.num_heads)
url_state.write({"layer": layer, "head": head})
steps = or_stop(get_steps, sel.model, sel.device, sel.text, sel.pair, layer - 1, head - 1)
d, d_k, t = steps.x.shape[1], steps.d_k, len(run.tokens)

checks = st.columns(3)
show_check(f"max |Δ| attention, layer {layer} head {head}", steps.attention_diff, checks[0])
show_check(f"max |Δ| attention, all {steps.num_heads} heads", steps.all_heads_diff, checks[1])
show_check(f"max |Δ| layer {layer} output", steps.output_diff, checks[2])

# Six tabs fit one line of a 1024 x 768 window's page beside the sidebar with "Neurons" (the feed-forward layer's);
# "Feed-forward neurons" made the tab list scroll sideways (the laptop sweep).
tabs = lazy_tabs(["Input embeddings", "The layer, step by step", "Why √d_k", "Masks", "Word order", "Neurons"],
                 f"{PAGE}.tab",
                 keep={f"{PAGE}.dk": 64, f"{PAGE}.pad_other": "It was tired.", f"{PAGE}.seed": 0, **feedforward.KEEP})

def show_embeddings() -> None:
    parts = or_stop(get_embedding_parts, sel.model, sel.device, sel.text, sel.pair)
    st.markdown("BERT's input for each token is the sum of three learned vectors, then a LayerNorm: "
                "**token** (which word piece) + **position** (where it is) + **segment** (sentence A or B).")
    ids = pd.DataFrame({"token": display_tokens(run.tokens), "token id": parts.token_ids,
                        "position id": parts.position_ids})
    if parts.segment_ids is not None:
        ids["segment id"] = parts.segment_ids
    st.dataframe(ids.astype(str).T, key=f"{PAGE}.ids")
    pieces = [("Token embeddings", parts.word), ("Position embeddings", parts.position)]
    if parts.segment is not None:
        pieces.append(("Segment embeddings", parts.segment))
    pieces += [("Sum", parts.summed), ("LayerNorm(sum): input to layer 1", parts.normed)]
    for i, (title, matrix) in enumerate(pieces):
        show_matrix(matrix, title, f"{PAGE}.emb{i}", rows=labels)
    show_check("max |Δ| vs the model's own layer-1 input", parts.max_abs_diff)

def show_layer() -> None:
    hd = f"head {head}"
    st.subheader(f"1. The input X of layer {layer}")
    st.caption("For layer 1 these are the embeddings; for layer l, the output of layer l − 1. "
               f"Shape T × d = {t} × {d}.")
    show_matrix(steps.x, f"X, input of layer {layer}", f"{PAGE}.x", rows=labels)
    st.subheader(f"2. Q = XW_Q + b_Q, K = XW_K + b_K, V = XW_V + b_V ({hd}'s {d_k} columns)")
    st.caption(f"Each head uses its own slice of d_k = d / heads = {d} / {steps.num_heads} = {d_k} columns.")
    for name, matrix in (("Q", steps.q), ("K", steps.k), ("V", steps.v)):
        show_matrix(matrix, f"{name}, {hd}", f"{PAGE}.{name.lower()}", rows=labels)
    st.subheader("3. Scores QKᵀ")
    show_matrix(steps.scores, f"QKᵀ, {hd}", f"{PAGE}.scores", rows=labels, cols=labels, row_title="query",
                col_title="key", value_name="score")
    st.subheader(f"4. Scaled by 1/√d_k = 1/√{d_k}")
    show_matrix(steps.scaled, f"QKᵀ / √{d_k}", f"{PAGE}.scaled", rows=labels, cols=labels, row_title="query",
                col_title="key", value_name="score")
    if steps.bias is not None:
        st.subheader("4b. Relative position bias B added")
        show_matrix(steps.bias, f"B, {hd}: one learned number per bucket of query − key", f"{PAGE}.bias",
                    rows=labels, cols=labels, row_title="query", col_title="key", value_name="bias")
        st.caption(f"{sel.model} adds this to the scaled scores of every layer: it is computed once per sentence "
                   "from a table of 32 buckets × heads (exact offsets near the diagonal, logarithmic further away, "
                   "one half for keys before the query, one for keys after). The Positional page shows the table.")
    st.subheader("5. Mask added")
    masked = steps.mask <= MASKED / 2
    st.dataframe(pd.DataFrame({"key": display_tokens(run.tokens),
                               "added to every row": ["−∞" if m else "0" for m in masked]}).T,
                 key=f"{PAGE}.mask")
    st.caption("A padded key gets −∞ (in practice the most negative float32, −3.4e38) so its weight becomes 0. "
               "One sentence alone has no padding, so here every entry is 0; see the Masks tab for padding.")
    st.subheader("6. Row softmax: the attention weights A")
    formula = f"QKᵀ/√{d_k} + B + mask" if steps.bias is not None else f"QKᵀ/√{d_k} + mask"
    show_matrix(steps.weights, f"A = softmax({formula}), {hd}", f"{PAGE}.weights", rows=labels,
                cols=labels, row_title="query", col_title="key", value_name="weight", scale=ATTENTION)
    show_check("max |A − model's own weights|", steps.attention_diff)
    st.subheader("7. Head output A·V")
    show_matrix(steps.head_output, f"A·V, {hd}", f"{PAGE}.av", rows=labels)
    st.subheader(f"8. All {steps.num_heads} heads concatenated")
    st.caption(f"Head h fills columns (h − 1)·{d_k} … h·{d_k} − 1.")
    show_matrix(steps.concat, "Concat(head 1 … head H)", f"{PAGE}.concat", rows=labels)
    st.subheader("9. Output projection: Concat · W_O + b_O")
    show_matrix(steps.projected, "Concat · W_O + b_O", f"{PAGE}.proj", rows=labels)
    st.subheader("10. Residual + LayerNorm")
    show_matrix(steps.attn_norm, "LayerNorm(X + attention output)", f"{PAGE}.norm1", rows=labels)
    st.subheader("11. Feed-forward")
    show_matrix(steps.ffn_hidden, f"activation(· W_1 + b_1): {steps.ffn_hidden.shape[1]} hidden units",
                f"{PAGE}.ffn1", rows=labels, col_title="hidden unit")
    show_matrix(steps.ffn_out, "· W_2 + b_2", f"{PAGE}.ffn2", rows=labels)
    st.subheader(f"12. Residual + LayerNorm = output of layer {layer}")
    show_matrix(steps.output, f"Output of layer {layer}", f"{PAGE}.out", rows=labels)
    show_check("max |output − model's own hidden state|", steps.output_diff)

def show_scaling() -> None:
    st.markdown("If q and k have d_k independent entries of variance 1, q·k is a sum of d_k products of "
                "variance 1, so **Var(q·k) = d_k**. Large scores push the softmax to one key (saturation), "
                "where gradients vanish; dividing by √d_k brings the variance back to 1.")
    d_k_choice = st.select_slider("d_k", D_K_CHOICES, key=f"{PAGE}.dk")
    demo = get_scaling(d_k_choice)
    cols = st.columns(3)
    cols[0].metric(f"Var(q·k), {demo.samples:,} random pairs", f"{demo.variance_unscaled:,.2f}",
                   help="theory: d_k")
    cols[1].metric("theory: d_k", f"{d_k_choice:,}")
    cols[2].metric("Var(q·k / √d_k)", f"{demo.variance_scaled:.3f}", help="theory: 1")
    st.plotly_chart(for_screen(variance_figure(get_variance_curve(), d_k_choice)), key=f"{PAGE}.variance", config=CHART)
    st.plotly_chart(for_screen(softmax_bars(demo.unscaled_weights, demo.scaled_weights, demo.unscaled_entropy,
                                            demo.scaled_entropy, d_k_choice)), key=f"{PAGE}.softmax", config=CHART)
    st.markdown(f"Entropy of the weights: **{demo.unscaled_entropy:.2f} bits** unscaled, "
                f"**{demo.scaled_entropy:.2f} bits** scaled (all keys equal: {demo.max_entropy:.2f} bits). "
                f"This model's heads use d_k = {d_k}.")

def show_masks() -> None:
    st.subheader("Padding mask: two sentences in one batch")
    other = st.text_input("Second sentence of the batch", key=f"{PAGE}.pad_other",
                          help="Batched with the sidebar sentence; the shorter one is padded with [PAD].")
    padding = or_none(get_padding, sel.model, sel.device, sel.text, other, layer - 1, head - 1)
    if padding is not None:
        short = padding.tokens[padding.short]
        short_labels = token_labels(short)
        show_matrix(padding.weights, f"The shorter sentence in the batch, layer {layer}, head {head}",
                    f"{PAGE}.padded", rows=short_labels, cols=short_labels, row_title="query", col_title="key",
                    value_name="weight", scale=ATTENTION)
        n_pad = int((padding.attention_mask[padding.short] == 0).sum())
        cols = st.columns(2)
        cols[0].metric(f"Largest weight on the {n_pad} [PAD] keys (all layers, heads)",
                       f"{padding.max_on_padding:.1e}")
        show_check("max |Δ| vs the sentence run alone (real tokens)", padding.max_diff_vs_alone, cols[1])
        st.caption("Padded keys get −∞ before the softmax, so their columns are 0 and the real tokens' weights are "
                   "the same as without padding. (The [PAD] rows are computed but ignored.)")
    st.subheader("Causal (look-ahead) mask: what if BERT were a decoder")
    causal = causal_weights(steps.scaled if steps.bias is None else steps.scaled + steps.bias)
    left, right = st.columns(2)
    show_matrix(steps.weights, "Bidirectional, as BERT is", f"{PAGE}.bidir",
                rows=labels, cols=labels, row_title="query", col_title="key", value_name="weight",
                scale=ATTENTION, container=left)
    show_matrix(causal, "Causal: later keys masked", f"{PAGE}.causal", rows=labels, cols=labels,
                row_title="query", col_title="key", value_name="weight", scale=ATTENTION,
                container=right)
    left.metric("Weight on later keys (largest)", f"{weight_above_diagonal(steps.weights):.3f}")
    right.metric("Weight on later keys (largest), masked", f"{weight_above_diagonal(causal):.1e}")
    st.caption("A decoder (GPT-style) adds −∞ above the diagonal: each token sees only itself and earlier "
               "tokens, and the remaining weights are renormalised. Pick a decoder model to see its own pattern.")

def show_word_order() -> None:
    st.markdown("Self-attention treats its input as a set. Shuffle the words (here: the whole encoder, "
                "recomputed) and, **without** position embeddings, the outputs are the same vectors, shuffled. "
                "**With** them, each word's output changes.")
    seed = st.number_input("Shuffle number (changes the order)", 0, 1000, key=f"{PAGE}.seed")
    perm = or_none(get_permutation, sel.model, sel.device, sel.text, sel.pair, int(seed))
    if perm is not None:
        shuffled = [run.tokens[i] for i in perm.order]
        st.text("Shuffled: " + " ".join(display_tokens(shuffled)))  # plain text: tokens may hold ` or *
        cols = st.columns(2)
        cols[0].metric("max |f(shuffled) − shuffled f(original)|, no positions",
                       f"{perm.diff_without_positions:.1e}")
        cols[1].metric("the same, with position embeddings", f"{perm.diff_with_positions:.3f}")
        st.plotly_chart(for_screen(change_bars(shuffled, perm.change_without, perm.change_with)), key=f"{PAGE}.perm",
                        config=CHART)
        st.caption("Without positions the differences are float64 rounding (about 1e-15): the same vectors, "
                   "in the shuffled order. The encoder here is the recomputation checked against the model above.")


# only the open tab runs (ui/layout.py)
def show_neurons() -> None:
    feedforward.show(sel, layer)


for tab, show in zip(tabs, (show_embeddings, show_layer, show_scaling, show_masks, show_word_order, show_neurons)):
    if tab.open:
        with tab:
            show()
