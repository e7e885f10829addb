"""Figures of the Attention Explorer (plotly objects, never displayed here).

Built for long inputs: one head's heatmap sends only its own ``[query, key]`` matrix (float32,
binary-encoded by plotly) and short axis labels, no per-cell hover strings; the layers x heads grid
sends each head downsampled to at most ``GRID_CELLS`` x ``GRID_CELLS`` block means.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from vizcore.colours import ATTENTION_BLOCKS, DIVERGING, SEQUENTIAL
from vizcore.plot import (
    SEGMENT_COLOURS,
    TICK_FONT_SIZE,
    attention_heatmap,
    axis_labels,
    base_layout,
    colour_bar,
    layer_head_heatmap,
    per_layer_layout,
)

GRID_CELLS = 24  # per head in the grid: enough to see a pattern, small enough for 12 x 12 heads at n = 512


def downsample(matrix: np.ndarray, cells: int = GRID_CELLS) -> np.ndarray:
    """Block means of the last two axes, down to at most ``cells`` x ``cells`` (float32)."""
    matrix = np.asarray(matrix, dtype=np.float32)
    n_rows, n_cols = matrix.shape[-2:]
    row_edges = np.linspace(0, n_rows, min(cells, n_rows) + 1).astype(int)
    col_edges = np.linspace(0, n_cols, min(cells, n_cols) + 1).astype(int)
    summed = np.add.reduceat(np.add.reduceat(matrix, row_edges[:-1], axis=-2), col_edges[:-1], axis=-1)
    counts = np.outer(np.diff(row_edges), np.diff(col_edges))
    return summed / counts


def head_grid(attention: np.ndarray, title: str, selected: tuple[int, int] | None = None,
              cells: int = GRID_CELLS) -> go.Figure:
    """All layers (rows) by heads (columns) as small heatmaps on one shared axis.

    Each head is downsampled to at most ``cells`` x ``cells``; every head has its own trace so the
    hover names it. An invisible marker at each head's centre makes a click select that head
    (``curve_number`` is the last trace, ``point_index`` = layer * heads + head, 0-based).
    """
    layers, heads = attention.shape[:2]
    small = downsample(attention, cells)  # (L, H, c, c)
    size = small.shape[-1]
    pitch = size + max(2, size // 6)
    fig = go.Figure()
    for layer in range(layers):
        for head in range(heads):
            fig.add_trace(go.Heatmap(
                z=small[layer, head], x0=head * pitch, dx=1, y0=layer * pitch, dy=1,
                coloraxis="coloraxis",
                hovertemplate=f"layer {layer + 1}, head {head + 1}<br>mean weight %{{z:.3f}}<extra></extra>",
            ))
    centres_x = [h * pitch + size / 2 for _ in range(layers) for h in range(heads)]
    centres_y = [l * pitch + size / 2 for l in range(layers) for _ in range(heads)]
    names = [f"layer {l + 1}, head {h + 1}" for l in range(layers) for h in range(heads)]
    fig.add_trace(go.Scatter(
        x=centres_x, y=centres_y, mode="markers", text=names, hovertemplate="%{text}: click to open<extra></extra>",
        marker={"size": 30, "color": "rgba(0,0,0,0.01)", "symbol": "square"}, showlegend=False,
    ))
    if selected is not None:
        layer, head = selected
        fig.add_shape(type="rect", x0=head * pitch - 1, x1=head * pitch + size, y0=layer * pitch - 1,
                      y1=layer * pitch + size, line={"color": "#d62728", "width": 3})
    cmin, cmax = ATTENTION_BLOCKS.zrange(small)
    fig.update_layout(coloraxis={"colorscale": ATTENTION_BLOCKS.colorscale, "cmin": cmin, "cmax": cmax,
                                 "colorbar": colour_bar(ATTENTION_BLOCKS.quantity)},
                      clickmode="event+select", dragmode=False)
    fig.update_xaxes(tickmode="array", tickvals=[h * pitch + size / 2 for h in range(heads)],
                     ticktext=[f"H{h + 1}" for h in range(heads)], side="top", showgrid=False, zeroline=False,
                     title="head", tickfont={"size": TICK_FONT_SIZE})
    fig.update_yaxes(tickmode="array", tickvals=[l * pitch + size / 2 for l in range(layers)],
                     ticktext=[f"L{l + 1}" for l in range(layers)], autorange="reversed", showgrid=False,
                     zeroline=False, title="layer", scaleanchor="x", tickfont={"size": TICK_FONT_SIZE})
    height = int(np.clip(70 * layers + 200, 420, 1100))
    return base_layout(fig, title, height)


def special_mass_chart(cls_mass: np.ndarray, sep_mass: np.ndarray, title: str) -> go.Figure:
    """Per layer: mean (over heads) attention mass on [CLS] and on [SEP], with each head as a dot. [CLS] is
    a solid blue line with circles, [SEP] a dashed orange one with diamonds: told apart without colour."""
    layers = np.arange(1, cls_mass.shape[0] + 1)
    fig = go.Figure()
    for name, mass, colour, dash, symbol in (("[CLS]", cls_mass, SEGMENT_COLOURS[0], "solid", "circle"),
                                             ("[SEP]", sep_mass, SEGMENT_COLOURS[1], "dash", "diamond")):
        fig.add_trace(go.Scatter(x=layers, y=mass.mean(1), mode="lines+markers", name=f"{name}: mean over heads",
                                 line={"color": colour, "width": 3, "dash": dash}, marker={"symbol": symbol},
                                 hovertemplate=f"layer %{{x}}<br>mean mass on {name}: %{{y:.3f}}<extra></extra>"))
        heads = np.tile(np.arange(1, mass.shape[1] + 1), mass.shape[0])
        fig.add_trace(go.Scatter(x=np.repeat(layers, mass.shape[1]), y=mass.ravel(), mode="markers",
                                 name=f"{name}: one head",
                                 marker={"color": colour, "opacity": 0.35, "size": 8, "symbol": symbol},
                                 customdata=heads,
                                 hovertemplate=f"layer %{{x}}, head %{{customdata}}<br>mass on {name}: "
                                               "%{y:.3f}<extra></extra>"))
    return per_layer_layout(fig, title, "attention mass (mean over queries)", 480)


def difference_heatmap(first: np.ndarray, second: np.ndarray, query_tokens: list[str], key_tokens: list[str],
                       title: str) -> go.Figure:
    """``first - second`` on the diverging scale centred on 0, ± the largest change (red: more in the first,
    blue: less)."""
    difference = np.asarray(first, dtype=np.float32) - np.asarray(second, dtype=np.float32)
    return attention_heatmap(difference, query_tokens, key_tokens, title, scale=DIVERGING,
                             value_name="difference")


def merged_labels(first: Sequence[str], second: Sequence[str]) -> list[str]:
    """Two runs' tokens position by position, one label each: the token, or "first/second" where they differ."""
    return [a if a == b else f"{a}/{b}" for a, b in zip(first, second)]


class HeadMap(NamedTuple):
    """One head's ``[query, key]`` weights with its query and key tokens (and their segments, for a pair)."""

    matrix: np.ndarray
    rows: Sequence[str]
    cols: Sequence[str]
    row_segments: np.ndarray | None = None
    col_segments: np.ndarray | None = None


def attention_pair(first: HeadMap, second: HeadMap, names: tuple[str, str], title: str) -> go.Figure:
    """Two heads' maps in one figure with one colour bar (weights: 0..1 for both). With as many queries, side by side
    on one column of query labels (a query whose tokens differ reads "first/second", as ``difference_heatmap``'s);
    otherwise one above the other, each with its own labels. Two figures in two page columns left each map about
    60 px of a 1024 x 768 screen: their own labels and colour bars took the rest."""
    side = len(first.rows) == len(second.rows)
    if side:
        rows = merged_labels(first.rows, second.rows)
        first, second = first._replace(rows=rows), second._replace(rows=rows)
    pair = [attention_heatmap(m.matrix, list(m.rows), list(m.cols), name, m.row_segments, m.col_segments)
            for m, name in zip((first, second), names)]
    if side:
        fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.04)
        places = [(1, 1), (1, 2)]
        height = pair[0].layout.height
    else:
        heights = [len(first.rows), len(second.rows)]
        fig = make_subplots(rows=2, cols=1, vertical_spacing=0.16, row_heights=[h / sum(heights) for h in heights])
        places = [(1, 1), (2, 1)]
        height = int(sum(single.layout.height for single in pair) - 100)
    for number, (single, (row, col)) in enumerate(zip(pair, places)):
        fig.add_trace(single.data[0].update(showscale=number == 1), row=row, col=col)
        fig.update_xaxes(single.layout.xaxis.to_plotly_json(), row=row, col=col)
        fig.update_xaxes(title=f"key · {names[number]}", row=row, col=col)  # an axis title: the page's text colour
        if not side or number == 0:
            fig.update_yaxes(single.layout.yaxis.to_plotly_json(), row=row, col=col)
    if side:
        fig.update_yaxes(autorange="reversed", type="category", row=1, col=2)
    return base_layout(fig, title, height)


def statistic_heatmap(values: np.ndarray, name: str, title: str) -> go.Figure:
    """A ``[layer, head]`` statistic as a layers x heads heatmap (1-based labels)."""
    return layer_head_heatmap(values, title, name, scale=SEQUENTIAL, value_format=".3f")


def flow_bars(values: np.ndarray, key_tokens: list[str], title: str, value_name: str) -> go.Figure:
    """One query's flow (or rollout) to every input token as bars."""
    labels = axis_labels(key_tokens)
    fig = go.Figure(go.Bar(x=labels, y=np.asarray(values, dtype=np.float64), marker_color="#1f5fa8",
                           hovertemplate=f"key: %{{x}}<br>{value_name}: %{{y:.4f}}<extra></extra>"))
    fig.update_xaxes(type="category", tickangle=-60, tickfont={"size": TICK_FONT_SIZE}, title="input token")
    fig.update_yaxes(title=value_name)
    base_layout(fig, title, 460)
    fig.update_layout(margin={"t": 80})
    return fig
