"""The Why? page's attention attribution: integrated gradients over every head's attention probabilities.

Computation: vizcore/why/attention_attribution.py · figures: vizcore/why/figures.py (attention attribution
section) · CLI: python -m vizcore attention-attribution. Explains the masked-LM's answer, or the class of
the session's fine-tuned classifier when there is one (kept in the session: the classifier is this session's).
"""

from __future__ import annotations

import json

import numpy as np
import streamlit as st

from ui import url_state
from ui.feedback import CHART, or_stop
from ui.layout import for_screen
from ui.state import get_model
from ui.why import page as why
from ui.why.page import Classifier, WhyContext
from vizcore.plot import attention_heatmap
from vizcore.why.attention_attribution import (
    DEFAULT_STEPS,
    DEFAULT_THRESHOLD,
    AttentionAttribution,
    attention_attribution,
    class_attention_attribution,
)
from vizcore.why.attribution import MAX_STEPS
from vizcore.why.figures import attribution_tree_figure, head_attribution_heatmap, importance_heatmap

KEY_ANSWER = "why.attention.answer"
KEY_STEPS = "why.attention.steps"
KEY_THRESHOLD = "why.attention.threshold"  # percent of each layer's largest edge
KEY_HEAD = "why.attention.head"  # "layer.head", 1-based, as shown
KEY_EXPLAIN = "why.attention.explain"  # "answer" | "class"
KEY_CLASS = "why.attention.class"
KEY_LAST_CLASS = "why.attention.last_class"  # (classifier, key, result) of the session's classifier
# Names of their own: the other parts read answer, output and steps.
URL_PARAMS = {"attention_answer": (KEY_ANSWER, url_state.Text()),
              "attention_steps": (KEY_STEPS, url_state.Integer(1, MAX_STEPS)),
              "threshold": (KEY_THRESHOLD, url_state.Integer(5, 100))}


@st.cache_data(show_spinner="Integrating gradients over every layer's attention…", max_entries=16)
def get_attribution(name: str, device: str, masked: str, answer: str | None, steps: int) -> AttentionAttribution:
    return attention_attribution(get_model(name, device, "mlm"), masked, answer, steps)


def show(ctx: WhyContext) -> dict:
    """Draw the part; returns its URL parameters."""
    st.markdown(
        "Which **attention edges** does the answer depend on? Scale one layer's attention probabilities from "
        "0 to their real values and add up how fast the answer's probability changes on the way: each edge "
        "(query → key, in one head) gets its share of the change, and a layer's shares sum to what removing "
        "all its attention costs (Hao et al., *Self-Attention Attribution*, AAAI 2021). Unlike the weights, "
        "an attribution can be large for a small weight and negative.")
    explain = why.choose_explain(ctx, KEY_EXPLAIN)
    answer = None
    if explain == "answer":
        answer = why.followed_word(ctx, KEY_ANSWER, "Answer (one token; empty = the model's top prediction)",
                                   help="Default: the model's own answer at the mask. Type another word to "
                                        "explain it.")
    left, right = st.columns(2)
    url_state.settle(KEY_STEPS, DEFAULT_STEPS, 1, MAX_STEPS)
    steps = left.number_input("Steps per layer", 1, MAX_STEPS, key=KEY_STEPS,
                              help=f"Points of the Riemann sum (midpoints). {DEFAULT_STEPS} keep every layer's "
                                   "completeness gap under 1 % on the example sentences; raise them when the gap "
                                   "below is larger. Each step is one pass with gradients per layer.")
    url_state.settle(KEY_THRESHOLD, round(100 * DEFAULT_THRESHOLD), 5, 100)
    threshold = right.slider("Tree: keep edges above (% of the layer's largest)", 5, 100, key=KEY_THRESHOLD,
                             help="The paper keeps edges at or above 40 % of their layer's largest attribution.")
    if explain == "class":
        label = why.choose_class(ctx.classifier, ctx.sentence, KEY_CLASS)
        result = or_stop(_class_attribution, ctx.classifier, ctx.sentence, label, int(steps))
        where = "for the unmasked sentence"
    else:
        result = or_stop(get_attribution, ctx.model, ctx.device, ctx.masked, answer, int(steps))
        where = f"at the [MASK] (token {result.mask_index})"
    st.markdown(f"**F = P({result.answer}) {where} = {result.f_input:.4f}**")
    _show_heads(result)
    _show_tree(result, threshold / 100)
    _show_completeness(result)
    st.download_button("Download the numbers (JSON)", json.dumps(result.to_dict(threshold / 100)),
                       file_name="attention-attribution.json", mime="application/json",
                       key="why.attention.download")
    return {"attention_answer": answer, "attention_steps": int(steps), "threshold": threshold}


def _class_attribution(classifier: Classifier, sentence: str, label: int, steps: int) -> AttentionAttribution:
    key = (sentence, label, steps)
    kept = st.session_state.get(KEY_LAST_CLASS)  # (classifier, key, result): the object, not its id()
    if kept is None or kept[0] is not classifier.result.classifier or kept[1] != key:
        with st.spinner("Integrating gradients over every layer's attention…"):
            kept = (classifier.result.classifier, key,
                    class_attention_attribution(classifier.result, sentence, label, steps))
        st.session_state[KEY_LAST_CLASS] = kept
    return kept[2]


def _show_heads(result: AttentionAttribution) -> None:
    st.subheader("Heads ranked by their largest attribution")
    st.plotly_chart(for_screen(importance_heatmap(result.head_scores, "Each head's largest attribution (max over "
                                                  "query and key)", "max attribution", diverging=True)),
                    key="why.attention.heads", config=CHART)
    st.caption("A head's score is the maximum of its attributions over all query → key edges, the paper's "
               "importance I_h (the sum would let many small edges outweigh one that carries the answer).")
    ranked = result.ranked_heads()
    labels = [f"{layer + 1}.{head + 1}" for layer, head, _ in ranked]
    url_state.settle_choice(KEY_HEAD, labels, labels[0])
    chosen = st.selectbox("Head (layer.head, strongest first)", labels, key=KEY_HEAD,
                          format_func=lambda label: f"{label} · {ranked[labels.index(label)][2]:.4g}")
    layer, head, _ = ranked[labels.index(chosen)]
    attribution, weights = st.tabs(["Attribution", "Attention weights"])
    with attribution:
        st.plotly_chart(for_screen(head_attribution_heatmap(result.attributions[layer, head], result.tokens,
                                                            f"Head {chosen}: attribution of each edge")),
                        key="why.attention.head_map", config=CHART)
    with weights:
        st.plotly_chart(for_screen(attention_heatmap(result.attention[layer, head], result.tokens,
                                                     title=f"Head {chosen}: attention weights")),
                        key="why.attention.weights_map", config=CHART)


def _show_tree(result: AttentionAttribution, threshold: float) -> None:
    st.subheader("Attribution tree")
    edges = result.tree(threshold)
    st.plotly_chart(for_screen(attribution_tree_figure(edges, result.tokens, result.attention.shape[0],
                                                       result.roots)),
                    key="why.attention.tree", config=CHART)
    start = "the [MASK]" if result.mask_index is not None else (
        "[CLS]" if result.roots == (0,) else "every token the classifier pools")
    st.caption(f"From {start} at the top, layer by layer down: an edge is kept when its attribution, summed "
               f"over heads, is at least {threshold:.0%} of that layer's largest and its query is already in the "
               "tree; its key joins the tree (a token stays in the tree below: the residual stream carries it). "
               f"{len(edges)} edges. Thicker = a larger share of the layer's largest.")


def _show_completeness(result: AttentionAttribution) -> None:
    gaps = result.gaps
    with st.expander(f"Completeness per layer (largest gap {np.nanmax(gaps):.2%} at {result.steps} steps)"):
        delta = result.f_input - result.f_zero
        st.dataframe({"layer": [layer + 1 for layer in result.layers],
                      "sum of the attributions": result.layer_sums[result.layers],
                      "F(A) − F(0)": delta[result.layers], "F(0)": result.f_zero[result.layers],
                      "gap": [f"{g:.3%}" for g in gaps[result.layers]]}, hide_index=True)
        st.caption("F(0): the answer's probability with that layer's attention all 0 (its heads add nothing "
                   "but W_O's bias); the other layers compute their own attention as usual.")
    if np.nanmax(gaps) > 0.01:
        st.warning(f"A layer's gap is {np.nanmax(gaps):.1%} at {result.steps} steps: the Riemann sum is not yet "
                   "accurate. Raise the steps.")
