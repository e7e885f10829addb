"""Shared figure helpers and the basic attention heatmap (plotly objects, never displayed here).

Axes are token *positions* with the tokens as tick labels: a sentence often repeats a token
("the ... the"), and categorical axes would silently merge those rows.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

FONT_SIZE = 16  # readable on a projector
TICK_FONT_SIZE = 14
MAX_TICKS = 64  # beyond this, label every k-th token so the labels stay legible
ATTENTION_SCALE = "Blues"


def display_tokens(tokens: list[str]) -> list[str]:
    """Readable token text: byte-level BPE markers (GPT-2 'Ġ', SentencePiece '▁') become plain spaces."""
    shown = []
    for token in tokens:
        text = token.replace("Ġ", " ").replace("▁", " ").replace("Ċ", "\\n")
        shown.append(text if text.strip() else repr(text))
    return shown


def tick_positions(count: int, max_ticks: int = MAX_TICKS) -> list[int]:
    step = max(1, int(np.ceil(count / max_ticks)))
    return list(range(0, count, step))


def base_layout(fig: go.Figure, title: str, height: int) -> go.Figure:
    fig.update_layout(
        title={"text": title, "font": {"size": FONT_SIZE + 2}, "y": 0.99, "yanchor": "top"},
        font={"size": FONT_SIZE},
        height=height,
        margin={"l": 10, "r": 10, "t": 150, "b": 10},
        hoverlabel={"font_size": FONT_SIZE},
    )
    return fig


def attention_heatmap(
    matrix: np.ndarray,
    query_tokens: list[str],
    key_tokens: list[str] | None = None,
    title: str = "Attention",
    zmax: float | None = 1.0,
    colorscale: str = ATTENTION_SCALE,
) -> go.Figure:
    """Heatmap of one ``[query, key]`` matrix: rows are queries (who attends), columns keys.

    Hover shows query token, key token and weight; the colour bar is the legend. ``zmax=None``
    scales to the data (useful when weights are small), otherwise 0..zmax.
    """
    matrix = np.asarray(matrix, dtype=np.float32)
    key_tokens = query_tokens if key_tokens is None else key_tokens
    queries, keys = display_tokens(query_tokens), display_tokens(key_tokens)
    hover = np.empty(matrix.shape, dtype=object)
    for q in range(matrix.shape[0]):
        for k in range(matrix.shape[1]):
            hover[q, k] = f"{q}: {queries[q]} → {k}: {keys[k]}"
    fig = go.Figure(
        go.Heatmap(
            z=matrix,
            x=list(range(len(keys))),
            y=list(range(len(queries))),
            customdata=hover,
            hovertemplate="%{customdata}<br>weight %{z:.4f}<extra></extra>",
            colorscale=colorscale,
            zmin=0.0,
            zmax=zmax if zmax is not None else float(matrix.max(initial=0.0)) or 1.0,
            colorbar={"title": {"text": "weight"}, "tickfont": {"size": TICK_FONT_SIZE}},
        )
    )
    x_ticks, y_ticks = tick_positions(len(keys)), tick_positions(len(queries))
    fig.update_xaxes(title="key (attended to)", tickmode="array", tickvals=x_ticks,
                     ticktext=[keys[i] for i in x_ticks], tickangle=-60, tickfont={"size": TICK_FONT_SIZE},
                     side="top")
    fig.update_yaxes(title="query (attending)", tickmode="array", tickvals=y_ticks,
                     ticktext=[queries[i] for i in y_ticks], autorange="reversed",
                     tickfont={"size": TICK_FONT_SIZE})
    height = int(np.clip(28 * len(queries) + 220, 420, 1000))
    return base_layout(fig, title, height)
