"""Figures for the "Attention, step by step" page (plotly, never displayed here).

Its matrices (X, Q, K, V, scores, weights) are drawn with ``vizcore.plot.matrix_heatmap``: a colour
bar, exact values on hover, large matrices thinned (the title says so).
"""

from __future__ import annotations

import html
from typing import Sequence

import numpy as np
import plotly.graph_objects as go

from vizcore.plot import TICK_FONT_SIZE, base_layout, display_tokens


def token_labels(tokens: Sequence[str]) -> list[str]:
    """Unique, readable tick labels: ``3: cat`` (position and token)."""
    return [f"{i}: {html.escape(t, quote=False)}" for i, t in enumerate(display_tokens(list(tokens)))]


def variance_figure(rows: list[dict], chosen: int) -> go.Figure:
    """Measured Var(q·k) and Var(q·k/√d_k) against d_k (log axes), with the theory line Var = d_k."""
    d_k = [r["d_k"] for r in rows]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=d_k, y=[r["theory"] for r in rows], mode="lines", name="theory: Var = d_k",
                             line={"dash": "dash", "color": "gray"},
                             hovertemplate="d_k %{x}<br>theory %{y:,.0f}<extra></extra>"))
    fig.add_trace(go.Scatter(x=d_k, y=[r["measured Var(q·k)"] for r in rows], mode="markers+lines",
                             name="measured Var(q·k)", marker={"size": 10},
                             hovertemplate="d_k %{x}<br>Var(q·k) %{y:,.2f}<extra></extra>"))
    fig.add_trace(go.Scatter(x=d_k, y=[r["measured Var(q·k/√d_k)"] for r in rows], mode="markers+lines",
                             name="measured Var(q·k / √d_k)", marker={"size": 10},
                             hovertemplate="d_k %{x}<br>Var(q·k/√d_k) %{y:.3f}<extra></extra>"))
    chosen_row = next((r for r in rows if r["d_k"] == chosen), None)
    if chosen_row is not None:  # a marker, not a vline: shapes on log axes need log coordinates
        fig.add_trace(go.Scatter(x=[chosen], y=[chosen_row["measured Var(q·k)"]], mode="markers",
                                 name=f"chosen d_k = {chosen}",
                                 marker={"size": 18, "symbol": "circle-open", "color": "firebrick",
                                         "line": {"width": 3}},
                                 hovertemplate="d_k %{x}<br>Var(q·k) %{y:,.2f}<extra>chosen</extra>"))
    fig.update_xaxes(type="log", title="d_k (log scale)", tickvals=d_k, tickfont={"size": TICK_FONT_SIZE})
    fig.update_yaxes(type="log", title="variance (log scale)", tickfont={"size": TICK_FONT_SIZE})
    fig.update_layout(legend={"orientation": "h", "y": -0.25})
    fig = base_layout(fig, "Variance of q·k for random unit-variance vectors", 460)
    fig.update_layout(margin={"t": 60})
    return fig


def softmax_bars(unscaled: np.ndarray, scaled: np.ndarray, unscaled_entropy: float, scaled_entropy: float,
                 d_k: int) -> go.Figure:
    """One query's softmax weights over random keys, without and with the 1/√d_k scaling."""
    keys = [f"key {i + 1}" for i in range(len(unscaled))]
    fig = go.Figure([
        go.Bar(x=keys, y=unscaled, name=f"softmax(q·k): entropy {unscaled_entropy:.2f} bits",
               hovertemplate="%{x}<br>weight %{y:.4f}<extra>unscaled</extra>"),
        go.Bar(x=keys, y=scaled, name=f"softmax(q·k / √{d_k}): entropy {scaled_entropy:.2f} bits",
               hovertemplate="%{x}<br>weight %{y:.4f}<extra>scaled</extra>"),
    ])
    fig.update_yaxes(title="attention weight", range=[0, 1.02], tickfont={"size": TICK_FONT_SIZE})
    fig.update_xaxes(tickfont={"size": TICK_FONT_SIZE})
    fig.update_layout(barmode="group", legend={"orientation": "h", "y": -0.2})
    fig = base_layout(fig, f"One query, {len(keys)} random keys, d_k = {d_k}", 440)
    fig.update_layout(margin={"t": 60})
    return fig


def change_bars(tokens: Sequence[str], without: np.ndarray, with_positions: np.ndarray) -> go.Figure:
    """Per shuffled slot: how far the encoder output is from the shuffled original output."""
    labels = token_labels(tokens)
    fig = go.Figure([
        go.Bar(x=labels, y=np.maximum(without, 1e-18), name="without position embeddings",
               hovertemplate="%{x}<br>‖change‖ %{y:.2e}<extra>no positions</extra>"),
        go.Bar(x=labels, y=with_positions, name="with position embeddings",
               hovertemplate="%{x}<br>‖change‖ %{y:.4f}<extra>with positions</extra>"),
    ])
    # Log scale: the no-position changes are rounding noise (~1e-15), invisible on a linear axis.
    fig.update_yaxes(title="‖change‖ (log scale)", type="log", exponentformat="power",
                     tickfont={"size": TICK_FONT_SIZE})
    fig.update_xaxes(title="slot in the shuffled sentence", tickangle=-60, tickfont={"size": TICK_FONT_SIZE})
    fig.update_layout(barmode="group", legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"})
    fig = base_layout(fig, "Change of each output vector when the words are shuffled", 480)
    fig.update_layout(margin={"t": 100})
    return fig
