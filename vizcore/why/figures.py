"""The Why? page's figures: matrix -> tidy table -> chart object (never displayed here).

Sections: ablation, importance, patching, attribution. Diverging scales are centred on 0 and carry
a legend; every cell and bar has its value in the hover text.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import plotly.graph_objects as go

from vizcore.mlm.figures import compact_layout, percent, percent_axis_format, plain
from vizcore.plot import DIVERGING, FONT_SIZE, SEQUENTIAL, TICK_FONT_SIZE, axis_labels, base_layout

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

RANKING_STYLE = {  # ranking -> (legend name, colour, dash)
    "ablation": ("least important first, by ablation", "#1f5fa8", "solid"),
    "gradient": ("least important first, by gradient", "#c2410c", "solid"),
    "random": ("random order (baseline)", "#6b7280", "dash"),
}


def importance_ranks(values: np.ndarray) -> np.ndarray:
    """Rank of each entry of ``[layer, head]`` values, 1 = the largest (most important); ties by flat order."""
    values = np.asarray(values, dtype=np.float64)
    ranks = np.empty(values.size, dtype=int)
    ranks[np.argsort(-values.ravel(), kind="stable")] = np.arange(1, values.size + 1)
    return ranks.reshape(values.shape)


def importance_heatmap(values: np.ndarray, title: str, value_name: str, diverging: bool = False) -> go.Figure:
    """A ``[layer, head]`` importance as a layers x heads map (``layer_head_heatmap``), the hover adding each
    head's rank (1 = most important). ``diverging``: red/blue centred on 0, for scores that can be negative
    (the model does better without the head); else a sequential scale from the smallest score."""
    values = np.asarray(values, dtype=np.float64)
    layers, heads = values.shape
    ranks = importance_ranks(values)
    hover = np.array([[f"layer {l + 1}, head {h + 1}<br>{value_name}: {values[l, h]:.5g}<br>rank {ranks[l, h]} "
                       f"of {values.size} (1 = most important)" for h in range(heads)] for l in range(layers)],
                     dtype=object)
    low, high = float(values.min(initial=0.0)), float(values.max(initial=0.0))
    fig = layer_head_heatmap(values, title, value_name, diverging=diverging,
                             zrange=None if diverging else (low, high if high > low else low + 1.0),
                             colorscale=None if diverging else SEQUENTIAL)
    fig.update_traces(customdata=hover, hovertemplate="%{customdata}<extra></extra>")
    return fig


def pruning_lines(removed: np.ndarray, curves: dict[str, np.ndarray], intact: float, metric_name: str,
                  total_heads: int, title: str) -> go.Figure:
    """The metric ``curves[ranking]`` ``[K]`` as ``removed[k]`` heads are ablated together, one line per
    ranking, and a horizontal line at the intact model's value."""
    removed = np.asarray(removed)
    share = np.round(100 * removed / max(total_heads, 1)).astype(int)
    fig = go.Figure()
    for ranking, values in curves.items():
        name, colour, dash = RANKING_STYLE.get(ranking, (ranking, None, "solid"))
        fig.add_trace(go.Scatter(
            x=removed, y=np.asarray(values, dtype=np.float64), mode="lines+markers", name=name, customdata=share,
            line={"color": colour, "dash": dash, "width": 3},
            hovertemplate=(f"{name}<br>%{{x}} of {total_heads} heads removed (%{{customdata}} %)<br>"
                           f"{metric_name}: %{{y:.4f}}<extra></extra>")))
    fig.add_hline(y=intact, line={"color": "black", "dash": "dot"}, annotation_text=f"all heads: {intact:.4f}",
                  annotation_position="top right", annotation_font_size=TICK_FONT_SIZE)
    fig.update_xaxes(title="heads removed", range=[-0.5, total_heads + 0.5], tickfont={"size": TICK_FONT_SIZE})
    fig.update_yaxes(title=metric_name, tickfont={"size": TICK_FONT_SIZE})
    fig.update_layout(legend={"orientation": "h", "y": -0.2, "font": {"size": TICK_FONT_SIZE}})
    return compact_layout(fig, title, height=540, top=90)


def rank_scatter(first: np.ndarray, second: np.ndarray, first_name: str, second_name: str,
                 correlation: float) -> go.Figure:
    """Each head's rank by one importance against its rank by the other (1 = most important), with
    Spearman's correlation in the title; heads on the diagonal are ranked alike."""
    first, second = np.asarray(first, dtype=np.float64), np.asarray(second, dtype=np.float64)
    layers, heads = first.shape
    x, y = importance_ranks(first).ravel(), importance_ranks(second).ravel()
    labels = [f"layer {l + 1}, head {h + 1}" for l in range(layers) for h in range(heads)]
    hover = [f"{label}<br>{first_name}: {a:.4g} (rank {i})<br>{second_name}: {b:.4g} (rank {j})"
             for label, a, b, i, j in zip(labels, first.ravel(), second.ravel(), x, y)]
    fig = go.Figure(go.Scatter(x=x, y=y, mode="markers", customdata=hover, hovertemplate="%{customdata}<extra></extra>",
                               marker={"size": 11, "color": "#1f5fa8", "opacity": 0.75}, showlegend=False))
    fig.add_trace(go.Scatter(x=[1, first.size], y=[1, first.size], mode="lines", hoverinfo="skip",
                             line={"color": "#9ca3af", "dash": "dot"}, showlegend=False))
    fig.update_xaxes(title=f"rank by {first_name}", tickfont={"size": TICK_FONT_SIZE})
    fig.update_yaxes(title=f"rank by {second_name}", tickfont={"size": TICK_FONT_SIZE})
    rho = "undefined (a constant score)" if np.isnan(correlation) else f"{correlation:.2f}"
    return compact_layout(fig, f"Rank against rank · Spearman ρ = {rho}", height=520, top=80)


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
