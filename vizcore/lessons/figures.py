"""The lessons' own figures (never displayed here): the views no other page draws: the parameter count per component,
a class's answers (plotly), and the QR code of a class's link (an SVG drawn offline by segno)."""

from __future__ import annotations

from typing import Mapping, Sequence

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


def answer_counts(choices: Sequence[str], counts: Mapping[str, int]) -> list[tuple[str, int]]:
    """Every choice of a question with how many chose it (zero included), in the question's order; an answer that
    is not among ``choices`` (a student whose sentence or query token gave other choices) is listed after them."""
    shown = list(dict.fromkeys(choices))
    shown += [choice for choice in counts if choice not in shown]
    return [(choice, int(counts.get(choice, 0))) for choice in shown]


def answers_text(rows: Sequence[tuple[str, int]]) -> str:
    """The class's answers as a sentence (the chart's text alternative), each count said as what it counts, as a
    choice may itself hold numbers and commas: "layer 1, head 1: 0 answers; animal: 1 answer"."""
    return "; ".join(f"{choice}: {count} answer{'' if count == 1 else 's'}" for choice, count in rows)


def qr_svg_uri(link: str) -> str:
    """The QR code of ``link`` as an SVG data URI (segno, pure Python, offline): dark modules on white with the
    4-module quiet zone a phone's camera needs, whatever the page's theme."""
    import segno

    return segno.make(link, error="m").svg_data_uri(scale=1, border=4, dark="#000000", light="#FFFFFF")
