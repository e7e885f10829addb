"""Figures for the "Attention, step by step" and "Positional encoding" pages (plotly, never displayed here).

Every heatmap has a colour bar (the legend) and exact values on hover. Large matrices are thinned to
at most ``MAX_CELLS`` cells by keeping every s-th row/column; the title then says so, because a
browser chokes on millions of cells and a projector cannot show them anyway.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import plotly.graph_objects as go

from vizcore.plot import FONT_SIZE, TICK_FONT_SIZE, base_layout, display_tokens, tick_positions

MAX_CELLS = 250_000
DIVERGING = "RdBu_r"  # red positive, blue negative, white zero
SEQUENTIAL = "Viridis"


def thinning_step(rows: int, cols: int, max_cells: int = MAX_CELLS) -> int:
    """The smallest stride s so that ceil(rows/s) * ceil(cols/s) <= max_cells."""
    step = 1
    while -(-rows // step) * -(-cols // step) > max_cells:
        step += 1
    return step


def matrix_heatmap(
    matrix: np.ndarray,
    title: str,
    row_labels: Sequence[str] | None = None,
    col_labels: Sequence[str] | None = None,
    row_title: str = "row",
    col_title: str = "column",
    value_name: str = "value",
    diverging: bool = True,
    zrange: tuple[float, float] | None = None,
    max_cells: int = MAX_CELLS,
) -> go.Figure:
    """A labelled heatmap of a ``[row, column]`` matrix; hover shows row, column and the exact value.

    ``diverging`` centres a red/blue scale on zero (for signed numbers such as Q, K, scores);
    otherwise a sequential scale from the minimum. Rows and columns are positions, labels are ticks.
    """
    matrix = np.asarray(matrix, dtype=np.float64)
    if matrix.ndim == 1:
        matrix = matrix[None, :]
    rows, cols = matrix.shape
    row_labels = list(row_labels) if row_labels is not None else [str(i) for i in range(rows)]
    col_labels = list(col_labels) if col_labels is not None else [str(j) for j in range(cols)]
    step = thinning_step(rows, cols, max_cells)
    r_idx, c_idx = np.arange(0, rows, step), np.arange(0, cols, step)
    shown = matrix[np.ix_(r_idx, c_idx)]
    hover = np.array([[f"{row_title} {row_labels[r]}<br>{col_title} {col_labels[c]}" for c in c_idx]
                      for r in r_idx], dtype=object)
    zmin, zmax = _range(shown, diverging, zrange)
    heatmap = go.Heatmap(
        z=shown.astype(np.float32), x=c_idx, y=r_idx, customdata=hover, zmin=zmin, zmax=zmax,
        colorscale=DIVERGING if diverging else SEQUENTIAL,
        hovertemplate=f"%{{customdata}}<br>{value_name} %{{z:.5g}}<extra></extra>",
        colorbar={"title": {"text": value_name}, "tickfont": {"size": TICK_FONT_SIZE}},
    )
    fig = go.Figure(heatmap)
    x_ticks = [int(c_idx[i]) for i in tick_positions(len(c_idx), 20)]
    y_ticks = [int(r_idx[i]) for i in tick_positions(len(r_idx), 32)]
    fig.update_xaxes(title=col_title, tickmode="array", tickvals=x_ticks, ticktext=[col_labels[i] for i in x_ticks],
                     tickfont={"size": TICK_FONT_SIZE}, side="top", tickangle=-60 if cols <= 40 else 0)
    fig.update_yaxes(title=row_title, tickmode="array", tickvals=y_ticks, ticktext=[row_labels[i] for i in y_ticks],
                     autorange="reversed", tickfont={"size": TICK_FONT_SIZE})
    title = f"{title} · shape {rows} × {cols}"
    if step > 1:
        title += f" (every {_ordinal(step)} row and column drawn)"
    height = int(np.clip(24 * len(r_idx) + 260, 380, 760))
    return base_layout(fig, title, height)


def _ordinal(n: int) -> str:
    return {2: "2nd", 3: "3rd"}.get(n, f"{n}th")


def _range(values: np.ndarray, diverging: bool, zrange: tuple[float, float] | None) -> tuple[float, float]:
    if zrange is not None:
        return zrange
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return -1.0, 1.0
    if diverging:
        bound = float(np.abs(finite).max()) or 1.0
        return -bound, bound
    low, high = float(finite.min()), float(finite.max())
    return low, high if high > low else low + 1.0


def token_labels(tokens: Sequence[str]) -> list[str]:
    """Unique, readable tick labels: ``3: cat`` (position and token)."""
    return [f"{i}: {t}" for i, t in enumerate(display_tokens(list(tokens)))]


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
        marker={"size": 8, "color": np.arange(first, first + n), "colorscale": SEQUENTIAL, "showscale": True,
                "colorbar": {"title": {"text": "position"}, "tickfont": {"size": TICK_FONT_SIZE}}},
        hovertemplate="position %{text}<br>PC1 %{x:.4f}<br>PC2 %{y:.4f}<extra></extra>"))
    share = [f"{100 * e:.1f} %" for e in explained] + ["0 %"]
    fig.update_xaxes(title=f"PC1 ({share[0]} of variance)", tickfont={"size": TICK_FONT_SIZE})
    fig.update_yaxes(title=f"PC2 ({share[1]} of variance)", tickfont={"size": TICK_FONT_SIZE})
    fig = base_layout(fig, title, 480)
    fig.update_layout(margin={"t": 70})
    return fig


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
