"""The lessons' own figure (plotly, never displayed here): the one view no other page draws."""

from __future__ import annotations

from typing import Mapping

import plotly.graph_objects as go

from vizcore.plot import TICK_FONT_SIZE, base_layout


def parameter_bars(counts: Mapping[str, int], title: str) -> go.Figure:
    """Parameters per component as horizontal bars, with the running total (top to bottom) on each bar."""
    names, values = list(counts), list(counts.values())
    running = [sum(values[: i + 1]) for i in range(len(values))]
    fig = go.Figure(go.Bar(x=values, y=names, orientation="h", text=[f"{v:,} (running total {r:,})"
                                                                     for v, r in zip(values, running)],
                           textposition="auto", hovertemplate="%{y}<br>%{x:,} parameters<extra></extra>"))
    fig.update_yaxes(autorange="reversed", tickfont={"size": TICK_FONT_SIZE})
    fig.update_xaxes(title="parameters", tickfont={"size": TICK_FONT_SIZE})
    fig = base_layout(fig, title, 380)
    fig.update_layout(margin={"t": 60})
    return fig
