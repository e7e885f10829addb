"""The "Positions in modern models" part of the Positional encoding page: rotary, ALiBi, learned relative bias.

One lazy tab each (ui/layout.py): only the open one computes. Rotary needs no model; ALiBi reads the sidebar
model's queries and keys for the sidebar sentence; the learned relative bias is read from the installed
all-mpnet-base-v2's weights file (or says how to install it).
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from ui import layer_head
from ui.feedback import CHART, or_stop
from ui.layout import for_screen, lazy_tabs
from ui.positional.page import get_alibi, get_relative, get_rotary
from ui.state import Selection
from vizcore.colours import ATTENTION
from vizcore.errors import VizError
from vizcore.model.catalog import BASE_MODEL
from vizcore.model.loading import LoadedModel
from vizcore.plot import attention_heatmap, matrix_heatmap
from vizcore.positional.figures import alibi_slopes_figure, relative_bias_figure, rotary_offset_figure
from vizcore.positional.modern import alibi_slopes

TABS = ("Rotary (RoPE)", "ALiBi", "Learned relative bias")
KEY_TAB = "positional.modern"
KEY_ROTARY_N, KEY_ROTARY_D = "positional.rotary_positions", "positional.rotary_dim"
KEY_RELATIVE_HEADS = "positional.relative_heads"
RELATIVE_SHOWN = 40  # offsets -40..40 in the line chart: the exact buckets and the first shared ones


def show_modern(sel: Selection, loaded: LoadedModel) -> None:
    st.header("Positions in modern models")
    st.markdown("Newer models put positions inside attention instead of adding a vector to each word: a query "
                "and a key then meet knowing only **how far apart** they are. Three ways, each from its paper:")
    tabs = lazy_tabs(TABS, KEY_TAB, keep={KEY_ROTARY_N: 32, KEY_ROTARY_D: 64, KEY_RELATIVE_HEADS: [0, 1, 2]})
    rotary_tab, alibi_tab, _ = tabs
    with next(tab for tab in tabs if tab.open):
        if rotary_tab.open:
            show_rotary()
        elif alibi_tab.open:
            show_alibi(sel, loaded)
        else:
            show_relative()


def show_rotary() -> None:
    st.markdown("**Rotary position embedding** (Su et al. 2021, *RoFormer*; used by LLaMA and most recent "
                "decoders). Each pair of coordinates (2i, 2i+1) of a query or key at position m is rotated by "
                "the angle m·θᵢ:")
    st.latex(r"\begin{pmatrix} q'_{2i} \\ q'_{2i+1} \end{pmatrix} = \begin{pmatrix} \cos m\theta_i & -\sin m\theta_i"
             r" \\ \sin m\theta_i & \cos m\theta_i \end{pmatrix} \begin{pmatrix} q_{2i} \\ q_{2i+1} \end{pmatrix},"
             r"\qquad \theta_i = 10000^{-2i/d}")
    st.markdown("Two rotations compose: turning the query by mθ and the key by nθ changes their dot product "
                "as turning the query alone by (m − n)θ would. Writing each pair as a complex number "
                "q̃ᵢ = q₂ᵢ + i·q₂ᵢ₊₁:")
    st.latex(r"R(m)\,q \cdot R(n)\,k = \sum_i \mathrm{Re}\left[\tilde q_i\,\overline{\tilde k_i}\;"
             r"e^{\,i(m-n)\theta_i}\right] = g(m-n)")
    left, right = st.columns(2)
    n = left.number_input("Positions", step=1, key=KEY_ROTARY_N, help="1 to 512")
    d = right.number_input("d_k (coordinates of one head, even)", step=2, key=KEY_ROTARY_D, help="2 to 1,024")
    check = or_stop(get_rotary, n, d)
    size = check.scores.shape[0]
    scores = matrix_heatmap(check.scores, f"Rotary scores R(m)q · R(n)k, one random q and k, d_k {check.dim}",
                            row_title="query position m", col_title="key position n", value_name="score")
    st.plotly_chart(for_screen(scores), key="positional.rotary_scores", config=CHART)
    left, right = st.columns(2)
    left.metric("Largest spread along a diagonal m − n = const", f"{check.max_diagonal_spread:.1e}")
    right.metric("Largest |score − g(m − n)| (the closed form)", f"{check.max_closed_form_error:.1e}")
    st.caption("The same query and key vectors sit at every pair of positions. Every diagonal of the map has "
               "one colour: the score depends on m − n only (what is left is float rounding).")
    st.plotly_chart(for_screen(rotary_offset_figure(np.arange(-(size - 1), size), check.by_offset, check.unrotated)),
                    key="positional.rotary_offsets", config=CHART)
    st.caption("Low pairs (θ near 1) turn fast and make the score wobble from one offset to the next; high "
               "pairs turn slowly and carry far offsets. At m = n the score is q · k, as without positions.")


def show_alibi(sel: Selection, loaded: LoadedModel) -> None:
    st.markdown("**ALiBi, attention with linear biases** (Press et al. 2022, *Train Short, Test Long*). No "
                "position vectors at all: head h subtracts a penalty growing linearly with the distance, "
                "with a fixed slope m_h, before the softmax. For n heads the slopes are the geometric sequence")
    st.latex(r"\text{score}_{ij} = \frac{q_i \cdot k_j}{\sqrt{d_k}} - m_h\,|i-j|")  # one line each: 1024 px
    st.latex(r"m_h = 2^{-8h/n}\;\; (2^{-8/n}, 2^{-16/n}, \dots, 2^{-8})")
    st.caption("The paper's model is a decoder, keys j ≤ i only, distance i − j. For an encoder the distance "
               "counts both ways, |i − j|, as here. For n not a power of two the paper's code takes the slopes "
               "of the power of two below n and every other slope of twice as many.")
    layer, head = layer_head.layer_head(loaded.num_layers, loaded.num_heads)
    slopes = alibi_slopes(loaded.num_heads)
    st.plotly_chart(for_screen(alibi_slopes_figure(slopes, head - 1, f"ALiBi slopes for {loaded.num_heads} heads")),
                    key="positional.alibi_slopes", config=CHART)
    result = or_stop(get_alibi, sel.model, sel.device, sel.text, sel.pair, layer - 1, head - 1)
    st.markdown(f"Below, head {layer}.{head} of **{loaded.name}** on the sidebar sentence: its own pre-softmax "
                f"scores (recomputed from its queries and keys: their softmax equals its attention to "
                f"{result.recompute_error:.0e}), then with ALiBi's bias for head {head} (slope "
                f"{result.slope:.4g}) added. This model was not trained with ALiBi: the right map shows what the "
                "penalty does to real scores, not what an ALiBi model would learn.")
    left, right = st.columns(2)
    left.plotly_chart(for_screen(attention_heatmap(result.weights, result.tokens, title="The model's attention")),
                      key="positional.alibi_before", config=CHART)
    biased = attention_heatmap(result.biased, result.tokens, title=f"With −{result.slope:.4g}·|i − j|", scale=ATTENTION)
    right.plotly_chart(for_screen(biased), key="positional.alibi_after", config=CHART)
    st.metric("Average distance from a query to what it attends to", f"{result.biased_mean_distance:.2f} tokens",
              f"{result.biased_mean_distance - result.mean_distance:+.2f} (was {result.mean_distance:.2f})",
              delta_color="off")


def show_relative() -> None:
    st.markdown("**Learned relative position bias** (Raffel et al. 2020, T5; MPNet, Song et al. 2020, uses the "
                "same). Each head learns one number per *bucket* of the signed offset i − j, added to its scores "
                "in every layer. 32 buckets: half for keys at or before the query, half for keys after it; "
                "offsets 0 to 7 each have their own bucket, longer ones share logarithmically wider buckets up "
                "to 128, and everything farther shares the last:")
    st.latex(r"\text{score}_{ij} = \frac{q_i \cdot k_j}{\sqrt{d_k}} + b_h\big[\text{bucket}(i-j)\big]")
    st.latex(r"\text{bucket}(\delta) = 16\,[\delta < 0] + \begin{cases} |\delta| & |\delta| < 8 \\ "
             r"\min\!\left(15,\ 8 + \left\lfloor 8\,\frac{\ln(|\delta|/8)}{\ln(128/8)} \right\rfloor\right)"
             r" & \text{otherwise} \end{cases}")
    try:
        bias = get_relative(BASE_MODEL)
    except VizError as error:
        st.info(f"Read from {BASE_MODEL}'s own weights, once it is installed. {error}")
        return
    heads = bias.per_bucket.shape[0]
    st.markdown(f"Read from **{bias.model}**'s weights: {heads} heads × {bias.per_bucket.shape[1]} buckets.")
    st.plotly_chart(for_screen(matrix_heatmap(bias.per_bucket, f"{bias.model}: bias per head and bucket",
                                              row_labels=[str(h + 1) for h in range(heads)], row_title="head",
                                              col_title="bucket", value_name="bias")),
                    key="positional.relative_buckets", config=CHART)
    st.caption("Buckets 0 to 15: keys at or before the query (bucket 0 is the token itself); 16 to 31: keys after "
               "it. Bucket 16 (a key after the query at distance 0) can never occur, so it kept its initial "
               "value near 0.")
    st.session_state[KEY_RELATIVE_HEADS] = [h for h in st.session_state.get(KEY_RELATIVE_HEADS, []) if h < heads]
    chosen = st.multiselect("Heads to plot", list(range(heads)), key=KEY_RELATIVE_HEADS, max_selections=6,
                            format_func=lambda h: f"head {h + 1}")
    shown = np.abs(bias.offsets) <= RELATIVE_SHOWN
    if chosen:
        offsets = relative_bias_figure(bias.offsets[shown], bias.per_offset[:, shown], chosen,
                                       f"{bias.model}: bias by offset, −{RELATIVE_SHOWN} to {RELATIVE_SHOWN}")
        st.plotly_chart(for_screen(offsets), key="positional.relative_offsets", config=CHART)
    else:
        st.info("Pick at least one head to plot.")
    st.caption("Steps: each bucket beyond offset 7 covers several offsets, so the bias is flat across them. "
               "The same numbers are added in all 12 layers (computed once per input).")
