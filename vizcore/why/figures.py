"""The Why? page's figures: matrix -> tidy table -> chart object (never displayed here).

Sections: ablation, importance, patching, attribution. Diverging scales are centred on 0 and carry
a legend; every cell and bar has its value in the hover text.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import plotly.graph_objects as go

from vizcore.mlm.figures import compact_layout, percent, percent_axis_format, plain
from vizcore.plot import DIVERGING, FONT_SIZE, TICK_FONT_SIZE, axis_labels, base_layout

BEFORE_COLOUR, AFTER_COLOUR = "#1f5fa8", "#c2410c"  # plain model blue, intervention orange


def layer_head_heatmap(values: np.ndarray, title: str, value_name: str, diverging: bool = True,
                       marked: Sequence[tuple[int, int]] = (), zrange: tuple[float, float] | None = None,
                       colorscale: str | None = None) -> go.Figure:
    """A ``[layer, head]`` map, 1-based labels ("layer 3", "head 5"); ``marked`` heads carry an ✕.

    Hover: layer, head and the exact value. Diverging scales are centred on 0.
    """
    values = np.asarray(values, dtype=np.float64)
    layers, heads = values.shape
    if zrange is None:
        bound = float(np.nanmax(np.abs(values), initial=0.0)) or 1.0
        zrange = (-bound, bound) if diverging else (0.0, float(np.nanmax(values, initial=0.0)) or 1.0)
    text = np.full(values.shape, "", dtype=object)
    for layer, head in marked:
        text[layer, head] = "✕"
    fig = go.Figure(go.Heatmap(
        z=values, x=[f"head {h + 1}" for h in range(heads)], y=[f"layer {layer + 1}" for layer in range(layers)],
        zmin=zrange[0], zmax=zrange[1], colorscale=colorscale or (DIVERGING if diverging else "Oranges"),
        text=text, texttemplate="%{text}", textfont={"size": FONT_SIZE + 4},
        hovertemplate=f"%{{y}}, %{{x}}<br>{value_name} %{{z:.4f}}<extra></extra>", xgap=2, ygap=2,
        colorbar={"title": {"text": value_name}, "tickfont": {"size": TICK_FONT_SIZE}},
    ))
    fig.update_xaxes(side="top", tickfont={"size": TICK_FONT_SIZE})
    fig.update_yaxes(autorange="reversed", tickfont={"size": TICK_FONT_SIZE})
    compact_layout(fig, title, height=int(np.clip(46 * layers + 180, 300, 760)), top=110)
    return fig

# ---- ablation ----------------------------------------------------------------------------------

def before_after_bars(compared: Sequence[tuple[str, float, float]], title: str) -> go.Figure:
    """Each word's probability with every head (blue) and with the chosen heads off (orange)."""
    words = [plain(w) for w, _, _ in compared]
    positions = list(range(len(words)))
    fig = go.Figure()
    for name, index, colour in (("all heads", 1, BEFORE_COLOUR), ("heads off", 2, AFTER_COLOUR)):
        values = [row[index] for row in compared]
        fig.add_trace(go.Bar(
            x=values, y=positions, orientation="h", name=name, marker_color=colour,
            text=[percent(v) for v in values], textposition="outside", cliponaxis=False,
            textfont={"size": TICK_FONT_SIZE}, customdata=words,
            hovertemplate=f"%{{customdata}}<br>{name}: %{{x:.4f}}<extra></extra>"))
    top = max((max(b, a) for _, b, a in compared), default=1.0)
    fig.update_layout(barmode="group", legend={"orientation": "h", "y": -0.08, "font": {"size": FONT_SIZE}})
    fig.update_xaxes(title="probability", range=[0, min(1.0, top * 1.3) or 1.0], tickformat=percent_axis_format(top),
                     tickfont={"size": TICK_FONT_SIZE})
    fig.update_yaxes(tickmode="array", tickvals=positions, ticktext=words, autorange="reversed",
                     tickfont={"size": FONT_SIZE})
    return compact_layout(fig, title, height=int(np.clip(52 * len(words) + 150, 300, 1000)))


def class_bars(labels: Sequence[str], before: np.ndarray, after: np.ndarray, title: str) -> go.Figure:
    """A classifier's class probabilities with every head and with the chosen heads off."""
    names = [plain(str(label)) for label in labels]
    fig = go.Figure()
    for name, values, colour in (("all heads", before, BEFORE_COLOUR), ("heads off", after, AFTER_COLOUR)):
        fig.add_trace(go.Bar(x=names, y=values, name=name, marker_color=colour, text=[percent(v) for v in values],
                             textposition="outside", cliponaxis=False, textfont={"size": FONT_SIZE},
                             hovertemplate=f"%{{x}}<br>{name}: %{{y:.4f}}<extra></extra>"))
    fig.update_layout(barmode="group", legend={"orientation": "h", "y": -0.15, "font": {"size": FONT_SIZE}})
    fig.update_yaxes(title="probability", range=[0, 1.1], tickformat=".0%", tickfont={"size": TICK_FONT_SIZE})
    fig.update_xaxes(tickfont={"size": FONT_SIZE})
    return compact_layout(fig, title, height=380)


# ---- importance --------------------------------------------------------------------------------


# ---- patching ----------------------------------------------------------------------------------

def _two_decimals(value: float) -> str:
    text = f"{value:.2f}"
    return "0.00" if text == "-0.00" else text


def state_labels(layers: int) -> list[str]:
    """Rows of the state x position map: hidden state 0 is the embedding output, state l layer l's output."""
    return ["embeddings", *(f"layer {layer}" for layer in range(1, layers + 1))]


def patching_heatmap(recovered: np.ndarray, clean_tokens: Sequence[str], corrupt_tokens: Sequence[str],
                     title: str) -> go.Figure:
    """``[state, position]`` recovered shares, 1 = the clean answer back, 0 = no change; red positive, blue
    negative, centred on 0. Columns are the corrupted tokens; where the clean one differs, ``italy → france``."""
    labels = [c if c == x else f"{x} → {c}" for c, x in zip(clean_tokens, corrupt_tokens)]
    columns = axis_labels(labels)
    rows = state_labels(recovered.shape[0] - 1)
    bound = max(1.0, float(np.nanmax(np.abs(recovered), initial=0.0)))
    fig = go.Figure(go.Heatmap(
        z=np.asarray(recovered, dtype=np.float32), x=columns, y=rows, zmin=-bound, zmax=bound, colorscale=DIVERGING,
        text=np.vectorize(_two_decimals)(recovered), texttemplate="%{text}", textfont={"size": TICK_FONT_SIZE},
        hovertemplate="patched: %{y} at %{x}<br>recovered %{z:.4f}<extra></extra>", xgap=1, ygap=1,
        colorbar={"title": {"text": "recovered"}, "tickfont": {"size": TICK_FONT_SIZE}}))
    fig.update_xaxes(type="category", side="top", tickangle=-45, tickfont={"size": FONT_SIZE})
    fig.update_yaxes(type="category", autorange="reversed", tickfont={"size": FONT_SIZE})
    return base_layout(fig, title, height=int(np.clip(48 * len(rows) + 230, 380, 900)))


# ---- attribution -------------------------------------------------------------------------------
