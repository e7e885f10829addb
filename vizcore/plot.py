"""Shared figure helpers and the one attention heatmap (plotly objects, never displayed here).

Axes are token *positions* with the tokens as tick labels: a sentence often repeats a token
("the ... the"), and categorical axes would silently merge those rows.
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

FONT_SIZE = 16  # readable on a projector
TICK_FONT_SIZE = 14
MAX_TICKS = 64  # beyond this, label every k-th token so the labels stay legible
ATTENTION_SCALE = "Blues"
SEGMENT_COLOURS = ("#1f5fa8", "#c2410c")  # segment A blue, segment B orange (tick labels and legend)


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


def axis_labels(tokens: list[str]) -> list[str]:
    """Unique, markup-safe category labels: plotly would merge repeated tokens ("the ... the") on a
    categorical axis, so repeats get invisible zero-width-space suffixes; <, > and & become entities
    so user text never turns into plotly's rich-text tags."""
    seen: dict[str, int] = {}
    labels = []
    for token in display_tokens(tokens):
        safe = html.escape(token, quote=False)
        count = seen.get(safe, 0)
        seen[safe] = count + 1
        labels.append(safe + "\u200b" * count)
    return labels


def _tick_text(labels: list[str], segments: np.ndarray | None, ticks: list[int]) -> list[str]:
    if segments is None or not (np.asarray(segments) == 1).any():
        return [labels[i] for i in ticks]
    return [f"<span style='color:{SEGMENT_COLOURS[int(segments[i])]}'>{labels[i]}</span>" for i in ticks]


def attention_heatmap(
    matrix: np.ndarray,
    query_tokens: list[str],
    key_tokens: list[str] | None = None,
    title: str = "Attention",
    query_segments: np.ndarray | None = None,
    key_segments: np.ndarray | None = None,
    zmax: float | None = 1.0,
    colorscale: str = "Blues",
    zmin: float = 0.0,
    value_name: str = "weight",
) -> go.Figure:
    """The one heatmap of a ``[query, key]`` matrix (Home, the Explorer, differences, fine-tuning).

    Rows are queries (who attends), columns keys; hover shows query token, key token and the value,
    from the axis labels: no per-cell strings, so a 512 x 512 head sends its float32 matrix and
    1,024 short labels. Tick labels are coloured by segment (A blue, B orange) when ``*_segments``
    mark a pair. ``zmax=None`` scales the colours to the data; the colour bar is the legend.
    """
    matrix = np.asarray(matrix, dtype=np.float32)
    key_tokens = query_tokens if key_tokens is None else key_tokens
    rows, cols = axis_labels(query_tokens), axis_labels(key_tokens)
    top = float(np.nanmax(matrix, initial=0.0)) if zmax is None else zmax
    fig = go.Figure(go.Heatmap(
        z=matrix, x=cols, y=rows, zmin=zmin, zmax=top or 1.0, colorscale=colorscale,
        hovertemplate=f"query %{{y}} → key %{{x}}<br>{value_name} %{{z:.4f}}<extra></extra>",
        colorbar={"title": {"text": value_name}, "tickfont": {"size": TICK_FONT_SIZE}},
    ))
    x_ticks, y_ticks = tick_positions(len(cols)), tick_positions(len(rows))
    fig.update_xaxes(title="key (attended to)", type="category", tickmode="array",
                     tickvals=[cols[i] for i in x_ticks], ticktext=_tick_text(cols, key_segments, x_ticks),
                     tickangle=-60, tickfont={"size": TICK_FONT_SIZE}, side="top")
    fig.update_yaxes(title="query (attending)", type="category", tickmode="array",
                     tickvals=[rows[i] for i in y_ticks], ticktext=_tick_text(rows, query_segments, y_ticks),
                     autorange="reversed", tickfont={"size": TICK_FONT_SIZE})
    height = int(np.clip(26 * len(rows) + 240, 440, 1000))
    return base_layout(fig, title, height)
