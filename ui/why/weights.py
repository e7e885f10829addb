"""The Why? page's weight circuits: what each head is built to do, read from its weights before any sentence.

Computation: vizcore/circuits/circuits.py · figures: vizcore/circuits/figures.py · CLI: python -m vizcore circuits
"""

from __future__ import annotations

import streamlit as st

from ui import url_state
from ui.feedback import CHART, or_stop
from ui.layer_head import layer_head
from ui.layout import for_screen
from ui.state import get_model
from ui.why.page import WhyContext
from vizcore.circuits.circuits import FREQUENCY_SOURCE, Circuits, circuits, qk_top
from vizcore.circuits.figures import composition_heatmap, ov_copying_heatmap, pairs_table

# The masked-LM explained here may not be the sidebar's model: its own steppers (ui/layer_head.py)
KEYS = ("why.circuits.layer", "why.circuits.head")
URL_PARAMS = {"layer": (KEYS[0], url_state.Integer(1)), "head": (KEYS[1], url_state.Integer(1))}
TOP = 12


@st.cache_data(show_spinner="Multiplying weight matrices…", max_entries=4)
def get_circuits(name: str, device: str) -> Circuits:
    return circuits(get_model(name, device, "mlm"))


@st.cache_data(show_spinner=False, max_entries=64)
def get_pairs(name: str, device: str, layer: int, head: int, _result: Circuits) -> list[dict]:
    return qk_top(get_model(name, device, "mlm"), _result.token_ids, layer, head, TOP)


def hidden_size(ctx: WhyContext) -> int:
    return int(ctx.loaded.model.get_input_embeddings().weight.shape[1])


def show(ctx: WhyContext) -> dict:
    st.markdown(
        "No sentence: these numbers come from the weights alone (Elhage et al. 2021). A head's **QK circuit** "
        "scores how much a query token attends to a key token by their embeddings alone; its **OV circuit** "
        "says what attending to a token writes: a **copying** head (score near +1) raises the logit of the "
        "very token it looks at. **Composition** says how much a head reads what a head of the layer before "
        "wrote.")
    result = or_stop(get_circuits, ctx.model, ctx.device)
    layer, head = layer_head(ctx.loaded.num_layers, ctx.loaded.num_heads, KEYS)
    pairs = get_pairs(ctx.model, ctx.device, layer - 1, head - 1, result)
    left, right = st.columns([3, 2])
    left.dataframe(pairs_table(pairs), hide_index=True, key="why.circuits.pairs", height=35 * (TOP + 1) + 3,
                   column_config={"score": st.column_config.NumberColumn(format="%.4f")})
    left.caption(f"Layer {layer}, head {head}: the {TOP} (query, key) pairs its QK circuit scores highest, "
                 f"among the {len(result.token_ids)} most frequent tokens of `{FREQUENCY_SOURCE}`. Scores are "
                 "W_E W_Q W_Kᵀ W_Eᵀ / √d_head on the raw token embeddings: no position, no LayerNorm, no bias.")
    right.metric("OV copying score", f"{result.ov_copying[layer - 1, head - 1]:+.2f}",
                 help="Re(Σλ) / Σ|λ| over the eigenvalues of W_E W_V W_O W_Eᵀ on the same tokens: +1 copies, "
                      "−1 suppresses the token attended to.")
    st.plotly_chart(for_screen(ov_copying_heatmap(result.ov_copying, f"OV copying score of every head · {ctx.model}")),
                    key="why.circuits.ov", config=CHART)
    if layer > 1:
        scores = {kind: values[layer - 2, :, head - 1] for kind, values in result.composition.items()}
        baseline = hidden_size(ctx) ** -0.5
        st.plotly_chart(for_screen(composition_heatmap(scores, f"Layer {layer - 1}'s heads into head {layer}.{head}")),
                        key="why.circuits.composition", config=CHART)
        st.caption("‖W_A W_B‖_F / (‖W_A‖_F ‖W_B‖_F) with W_A a writer's W_V W_O and W_B this head's W_Q W_Kᵀ (Q), "
                   "its transpose (K) or W_V W_O (V). Matrices with unrelated directions score about 1/√d "
                   f"({baseline:.3f} here); LayerNorm and the feed-forward layer between them are left out. "
                   "See docs/WHY.md.")
    else:
        st.caption("Layer 1 reads the embeddings: no head before it to compose with.")
    return {"layer": layer, "head": head}
