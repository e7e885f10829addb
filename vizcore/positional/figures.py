"""Figures of the "Positional encoding" page (plotly, never displayed here); its tables are drawn
with ``vizcore.plot.matrix_heatmap``."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import plotly.graph_objects as go

from vizcore.colours import DARK_TEXT, SEQUENTIAL
from vizcore.plot import FONT_SIZE, SEGMENT_COLOURS, TICK_FONT_SIZE, base_layout, colour_bar

BAR, CHOSEN = "#9aa5b1", SEGMENT_COLOURS[0]  # every head's bar grey, the chosen head's the app's blue


def waves_figure(table: np.ndarray, dimensions: Sequence[int], title: str = "Chosen dimensions as waves") -> go.Figure:
    """One line per chosen dimension of a ``[position, dimension]`` table, against the position."""
    fig = go.Figure()
    positions = np.arange(table.shape[0])
    d = table.shape[1]
    for dim in dimensions:
        kind = "sin" if dim % 2 == 0 else "cos"
        wavelength = 2 * np.pi * 10_000 ** ((dim - dim % 2) / d)
        fig.add_trace(go.Scatter(
            x=positions, y=table[:, dim], mode="lines", name=f"{dim} · {kind} · {wavelength:,.1f}",
            hovertemplate=f"dim {dim}<br>position %{{x}}<br>PE %{{y:.5f}}<extra></extra>"))
    fig.update_xaxes(title="position", tickfont={"size": TICK_FONT_SIZE})
    # short: a projector's short chart cut "PE(position, dim)" at both ends; the legend names each dimension
    fig.update_yaxes(title="PE", range=[-1.1, 1.1], tickfont={"size": TICK_FONT_SIZE})
    # short entries under one title: a projector's column holds them two to a row ("dim 10 · sin · λ 26.5" did not)
    fig.update_layout(legend={"orientation": "h", "y": -0.2, "font": {"size": FONT_SIZE},
                              "title": {"text": "dim · wave · wavelength λ", "side": "top center"}})
    fig = base_layout(fig, title, 460)
    fig.update_layout(margin={"t": 70, "b": 10})
    return fig


def position_scatter(coordinates: np.ndarray, explained: np.ndarray, title: str, first: int = 0) -> go.Figure:
    """Positions first, first+1, ... on their first two principal components, coloured by position."""
    n = coordinates.shape[0]
    labels = [str(first + i) for i in range(n)]
    y = coordinates[:, 1] if coordinates.shape[1] > 1 else np.zeros(n)
    fig = go.Figure(go.Scatter(
        x=coordinates[:, 0], y=y, mode="markers+lines", text=labels,
        line={"color": "rgba(120,120,120,0.35)", "width": 1},
        marker={"size": 8, "color": np.arange(first, first + n), "colorscale": SEQUENTIAL.colorscale, "showscale": True,
                "colorbar": colour_bar("position")},
        hovertemplate="position %{text}<br>PC1 %{x:.4f}<br>PC2 %{y:.4f}<extra></extra>"))
    share = [f"{100 * e:.1f} %" for e in explained] + ["0 %"]
    fig.update_xaxes(title=f"PC1 ({share[0]} of variance)", tickfont={"size": TICK_FONT_SIZE})
    fig.update_yaxes(title=f"PC2 ({share[1]} of variance)", tickfont={"size": TICK_FONT_SIZE})
    fig = base_layout(fig, title, 480)
    fig.update_layout(margin={"t": 70})
    return fig


def rotary_offset_figure(offsets: np.ndarray, by_offset: np.ndarray, unrotated: float,
                         title: str = "Rotary: the score as a function of m − n") -> go.Figure:
    """The closed form g(m − n) of rotated scores, one line, with the score the same q, k get unrotated."""
    fig = go.Figure(go.Scatter(x=offsets, y=by_offset, mode="lines+markers", name="R(m)q · R(n)k",
                               marker={"size": 5},
                               hovertemplate="m − n = %{x}<br>score %{y:.5f}<extra></extra>"))
    fig.add_trace(go.Scatter(x=[offsets[0], offsets[-1]], y=[unrotated, unrotated], mode="lines",
                             name="q · k without positions", line={"dash": "dash", "color": DARK_TEXT},
                             hoverinfo="skip"))
    fig.update_xaxes(title="offset m − n (query position − key position)", tickfont={"size": TICK_FONT_SIZE})
    fig.update_yaxes(title="score", tickfont={"size": TICK_FONT_SIZE})
    fig.update_layout(legend={"orientation": "h", "y": -0.25, "font": {"size": FONT_SIZE}})
    fig = base_layout(fig, title, 420)
    fig.update_layout(margin={"t": 70, "b": 10})
    return fig


def alibi_slopes_figure(slopes: np.ndarray, chosen: int | None = None,
                        title: str = "ALiBi slope of each head") -> go.Figure:
    """One bar per head (1-based on the axis) on a log₂ axis, where the geometric sequence is a straight line;
    ``chosen`` (0-based) is drawn darker."""
    heads = np.arange(1, len(slopes) + 1)
    colours = [CHOSEN if h == chosen else BAR for h in range(len(slopes))]
    fig = go.Figure(go.Bar(x=heads, y=slopes, marker={"color": colours}, textposition="outside",
                           text=[f"2^{np.log2(s):.3g}" for s in slopes],
                           hovertemplate="head %{x}<br>slope %{y:.6g}<extra></extra>"))
    fig.update_xaxes(title="head", tickmode="array", tickvals=heads, tickfont={"size": TICK_FONT_SIZE})
    fig.update_yaxes(title="slope m (log scale)", type="log", dtick=np.log10(2) * 2, tickformat=".3g",
                     tickfont={"size": TICK_FONT_SIZE})
    fig = base_layout(fig, title, 380)
    fig.update_layout(margin={"t": 70, "b": 10})
    return fig


def relative_bias_figure(offsets: np.ndarray, per_offset: np.ndarray, heads: Sequence[int],
                         title: str = "Learned relative bias by offset") -> go.Figure:
    """One line per chosen head (0-based, named 1-based): the number added to a score at each offset."""
    fig = go.Figure()
    for head in heads:
        fig.add_trace(go.Scatter(x=offsets, y=per_offset[head], mode="lines", name=f"head {head + 1}",
                                 line={"shape": "hvh"}, hovertemplate=f"head {head + 1}<br>query − key = %{{x}}"
                                 "<br>bias %{y:.4f}<extra></extra>"))
    fig.update_xaxes(title="offset query − key (negative: the key comes after the query)",
                     tickfont={"size": TICK_FONT_SIZE})
    fig.update_yaxes(title="bias added to the score", tickfont={"size": TICK_FONT_SIZE})
    fig.update_layout(legend={"orientation": "h", "y": -0.25, "font": {"size": FONT_SIZE}})
    fig = base_layout(fig, title, 440)
    fig.update_layout(margin={"t": 70, "b": 10})
    return fig
