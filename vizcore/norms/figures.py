"""Figures of value-weighted attention (plotly objects, never displayed here).

One head's norms use the raw view's heatmap (``vizcore.plot.attention_heatmap``) and its colour scale
(``ATTENTION``, fixed 0..1) as shares of their row, so a colour means the same share in both maps.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from vizcore.colours import ATTENTION, SEQUENTIAL
from vizcore.norms.value_norms import SINK_LABELS, SINKS
from vizcore.plot import (
    SEGMENT_COLOURS,
    TICK_FONT_SIZE,
    attention_heatmap,
    axis_labels,
    base_layout,
    matrix_heatmap,
    per_layer_layout,
)

SHARE_NAME = "share of ‖αf(x)‖"
# One colour and one marker per kind of sink token (told apart without colour by the marker and the legend).
_SINK_STYLE = {"cls": (SEGMENT_COLOURS[0], "circle"), "sep": (SEGMENT_COLOURS[1], "diamond"),
               "punctuation": ("#4d4d4d", "square")}


def norm_share_heatmap(shares: np.ndarray, query_tokens: list[str], key_tokens: list[str], title: str,
                       query_segments: np.ndarray | None = None,
                       key_segments: np.ndarray | None = None) -> go.Figure:
    """One head's ``||alpha_ij f(x_j)||`` as shares of each row's total, ``[query, key]``, on the weights' scale."""
    return attention_heatmap(shares, query_tokens, key_tokens, title, query_segments, key_segments,
                             scale=ATTENTION, value_name=SHARE_NAME)


def value_size_bars(sizes: np.ndarray, tokens: list[str], title: str) -> go.Figure:
    """``||f(x_j)||`` per key token ``[T]``: how long a vector each token sends through this head."""
    fig = go.Figure(go.Bar(x=axis_labels(tokens), y=np.asarray(sizes, dtype=np.float64), marker_color="#1f5fa8",
                           hovertemplate="key %{x}<br>‖f(x)‖ %{y:.4f}<extra></extra>"))
    fig.update_xaxes(type="category", tickangle=-60, tickfont={"size": TICK_FONT_SIZE}, title="key token")
    fig.update_yaxes(title="‖f(x)‖ (value through W_O)")
    base_layout(fig, title, 400)
    fig.update_layout(margin={"t": 80})
    return fig


def sink_chart(shares: dict[str, dict[str, np.ndarray]], title: str) -> go.Figure:
    """Per layer, the share on [CLS], [SEP] and punctuation: weights (solid) and norms (dashed)."""
    fig = go.Figure()
    for name, dash, what in (("weights", "solid", "weights α"), ("norms", "dash", "norms ‖αf(x)‖")):
        for sink in SINKS:
            values = shares[name][sink]
            colour, symbol = _SINK_STYLE[sink]
            fig.add_trace(go.Scatter(
                x=np.arange(1, len(values) + 1), y=values, mode="lines+markers",
                name=f"{SINK_LABELS[sink]}: {what}", line={"color": colour, "width": 3, "dash": dash},
                marker={"symbol": symbol, "size": 9},
                hovertemplate=f"layer %{{x}}<br>{what} on {SINK_LABELS[sink]}: %{{y:.3f}}<extra></extra>"))
    per_layer_layout(fig, title, "share (mean over heads and queries)", 520)
    return fig


def residual_norm_heatmap(norms: np.ndarray, tokens: list[str], title: str) -> go.Figure:
    """``||h||`` per hidden state and token, ``[L + 1, T]``: row 0 the embeddings, row l layer l's output."""
    rows = ["embeddings", *(f"layer {layer}" for layer in range(1, norms.shape[0]))]
    return matrix_heatmap(norms, title, rows, axis_labels(tokens), row_title="hidden state",
                          col_title="token", value_name="‖h‖", scale=SEQUENTIAL)
