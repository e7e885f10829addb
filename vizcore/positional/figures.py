"""Figures of the "Positional encoding" page (plotly, never displayed here); its tables are drawn
with ``vizcore.plot.matrix_heatmap``."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import plotly.graph_objects as go

from vizcore.colours import SEQUENTIAL
from vizcore.plot import FONT_SIZE, TICK_FONT_SIZE, base_layout, colour_bar


def waves_figure(table: np.ndarray, dimensions: Sequence[int], title: str = "Chosen dimensions as waves") -> go.Figure:
    """One line per chosen dimension of a ``[position, dimension]`` table, against the position."""
    fig = go.Figure()
    positions = np.arange(table.shape[0])
    d = table.shape[1]
    for dim in dimensions:
        kind = "sin" if dim % 2 == 0 else "cos"
        wavelength = 2 * np.pi * 10_000 ** ((dim - dim % 2) / d)
        fig.add_trace(go.Scatter(
            x=positions, y=table[:, dim], mode="lines", name=f"dim {dim} ({kind}, wavelength {wavelength:,.1f})",
            hovertemplate=f"dim {dim}<br>position %{{x}}<br>PE %{{y:.5f}}<extra></extra>"))
    fig.update_xaxes(title="position", tickfont={"size": TICK_FONT_SIZE})
    fig.update_yaxes(title="PE(position, dim)", range=[-1.1, 1.1], tickfont={"size": TICK_FONT_SIZE})
    fig.update_layout(legend={"orientation": "h", "y": -0.2, "font": {"size": FONT_SIZE}})
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
