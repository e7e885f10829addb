"""Positional encoding: the sinusoidal table, its waves, similarities, the offset map, learned positions, and
the positions modern models use (rotary, ALiBi, learned relative bias).

Computation: vizcore/positional/encoding.py, vizcore/positional/modern.py ·
figures: vizcore/positional/figures.py, vizcore/plot.py · CLI: python -m vizcore positional (vizcore/positional/cli.py)
UI: ui/positional/ (page: the cached sinusoidal and learned tables; modern: rotary, ALiBi, relative bias)
"""

import math

import streamlit as st

from ui import url_state
from ui.feedback import CHART, or_stop
from ui.layout import for_screen
from ui.positional.modern import show_modern
from ui.positional.page import LINK, get_learned, get_sinusoidal
from ui.state import model_or_stop, selection
from vizcore.plot import matrix_heatmap
from vizcore.positional.encoding import (
    check_offset,
    check_size,
    offset_map,
    offset_spread,
    principal_components,
    similarity,
    worked_example,
)
from vizcore.positional.figures import position_scatter, waves_figure

st.title("Positional encoding")
st.markdown(
    "Self-attention alone cannot tell word order: shuffle the words and each one gets the same "
    "output, only shuffled (see *Attention, step by step*). The Transformer (Vaswani et al. 2017) "
    "adds a vector for each position to each word vector. Its fixed **sinusoidal** version:")
st.latex(r"PE_{(pos,\,2i)} = \sin\!\left(\frac{pos}{10000^{2i/d_{model}}}\right)")  # one per line: the pair did
st.latex(r"PE_{(pos,\,2i+1)} = \cos\!\left(\frac{pos}{10000^{2i/d_{model}}}\right)")  # not fit a 1024 px screen

url_state.warn(url_state.read(LINK))
left, right = st.columns(2)
st.session_state.setdefault("positional.length", 64)
st.session_state.setdefault("positional.d_model", 128)
length = left.number_input("Length (positions 0 … length − 1)", step=1, key="positional.length",
                           help="1 to 2,048 positions")
d_model = right.number_input("d_model (dimensions, even)", step=2, key="positional.d_model",
                             help="An even number from 2 to 1,024")
n, d = or_stop(check_size, length, d_model)
url_state.write({"length": n, "d_model": d})
table = get_sinusoidal(n, d)

st.header("The table: positions × dimensions")
st.plotly_chart(for_screen(matrix_heatmap(table, f"Sinusoidal encoding, {n} positions × d_model {d}",
                                          row_title="position", col_title="dimension", value_name="PE")),
                key="positional.table", config=CHART)
st.caption("Left columns (low dimensions) change fast from row to row; right columns change slowly. "
           "Every value lies between −1 and 1. Hover a cell for its exact value.")

st.subheader("Worked example (as in the tutorials)")
rows = worked_example()
for row in rows:
    row["value from the table"] = f"{row.pop('value'):.6f}"
rows[0]["math library"] = f"{math.sin(5):.6f}"
rows[1]["math library"] = f"{math.cos(5):.6f}"
st.table(rows)
st.markdown(f"PE(5, 0) = sin 5 ≈ **{math.sin(5):.3f}** and PE(5, 1) = cos 5 ≈ **{math.cos(5):.3f}**: "
            "for the first pair the frequency is 1/10000⁰ = 1, whatever d_model is.")

st.header("Dimensions as waves")
dim_key = "positional.dims"
# Set through session state, not default=, so that a smaller d_model can drop dimensions that are gone.
st.session_state[dim_key] = [i for i in st.session_state.get(dim_key, (0, 1, 6, 7)) if i < d]
dims = st.multiselect("Dimensions to plot", list(range(d)), key=dim_key, max_selections=8)
if dims:
    st.plotly_chart(for_screen(waves_figure(table, dims)), key="positional.waves", config=CHART)
else:
    st.info("Pick at least one dimension to plot.")
st.caption("Dimension pair i has wavelength 2π·10000^(2i/d_model): from 2π ≈ 6.3 positions up to "
           "about 62,832. Each position gets a unique mix, like the hands of a clock.")

st.header("Similarity between positions")
kind = st.radio("Similarity", ["cosine", "dot"], horizontal=True, key="positional.similarity",
                format_func=lambda k: {"cosine": "cosine (angle only)", "dot": "dot product"}[k])
matrix = similarity(table, kind)
st.plotly_chart(for_screen(matrix_heatmap(matrix, f"{kind.capitalize()} similarity of sinusoidal positions",
                                          row_title="position", col_title="position", value_name=kind)),
                key="positional.similarity_map", config=CHART)
spread = offset_spread(similarity(table, "dot"))
st.markdown(f"Nearby positions are most alike. The dot product PE(p)·PE(q) = Σᵢ cos(wᵢ(p − q)) depends only "
            f"on the offset p − q: every diagonal is constant (largest spread along a diagonal: "
            f"**{spread:.1e}**, rounding only).")

st.header("The relative-offset property")
st.markdown("For any offset k there is one matrix M_k, the same for every position, with "
            "PE(pos + k) = M_k · PE(pos): a 2×2 rotation by the angle wᵢ·k for each (sin, cos) pair.")
if n < 2:
    st.info("Use a length of at least 2 to check an offset.")
else:
    k = st.slider("Offset k", 1, n - 1, min(3, n - 1), key="positional.offset")
    check = or_stop(check_offset, table, k)
    shown = min(d, 8)
    st.plotly_chart(for_screen(matrix_heatmap(offset_map(k, d)[:shown, :shown],
                                              f"M_{k}, top-left {shown} × {shown} of {d} × {d}",
                                              row_title="output dim", col_title="input dim",
                                              value_name="M_k", zrange=(-1.0, 1.0))),
                    key="positional.offset_map", config=CHART)
    st.caption(f"Only the top-left corner is drawn; the rest of M_{k} is zero off its 2×2 blocks.")
    st.metric(f"Reconstruction error max |M_{k}·PE(pos) − PE(pos+{k})| over {check.pairs} positions",
              f"{check.max_abs_error:.1e}")

st.header("Learned positions of the loaded model")
sel = selection()
loaded = model_or_stop(sel)  # an unloadable model gets its clear message here
learned = or_stop(get_learned, sel.model, sel.device, n)
shown_n = learned.table.shape[0]
st.markdown(f"BERT does not use sinusoids: **{learned.model}** learned one vector per position "
            f"({learned.available:,} positions × {learned.table.shape[1]} dimensions). Below: its first "
            f"{shown_n} positions beside the sinusoidal table above ({n} × {d}). Each map: the cosine similarity "
            "of every pair of positions.")
if shown_n < n:
    st.warning(f"The model has only {learned.available:,} positions; showing those.")
left, right = st.columns(2)
left.plotly_chart(for_screen(matrix_heatmap(similarity(learned.table, "cosine"), "Learned",
                                            row_title="position", col_title="position", value_name="cosine")),
                  key="positional.learned_similarity", config=CHART)
right.plotly_chart(for_screen(matrix_heatmap(similarity(table, "cosine"), "Sinusoidal",
                                             row_title="position", col_title="position", value_name="cosine")),
                   key="positional.sin_similarity", config=CHART)
skip_first = st.checkbox("Leave position 0 out of the PCA", key="positional.skip_first",
                         help="In BERT, position 0 always holds [CLS]; its vector is often far from all others "
                              "and then takes the whole first principal component.")
start = 1 if skip_first and min(shown_n, n) > 2 else 0
learned_pca, sin_pca = principal_components(learned.table[start:]), principal_components(table[start:])
left.plotly_chart(for_screen(position_scatter(learned_pca.coordinates, learned_pca.explained,
                                              "Learned: PCA of positions",
                                              first=start)),
                  key="positional.learned_pca", config=CHART)
right.plotly_chart(for_screen(position_scatter(sin_pca.coordinates, sin_pca.explained, "Sinusoidal: PCA of positions",
                                               first=start)),
                   key="positional.sin_pca", config=CHART)
st.caption("Both tables make nearby positions similar. Each dot is a position (colour = position); "
           "PCA keeps the two directions of largest variance, with their share in the axis titles.")

show_modern(sel, loaded)
