"""Figures of extractive QA: start / end probabilities over the passage, and the passage with its spans.

Two steps, as everywhere in vizcore: a ``QAReading`` -> a tidy table (``probability_table``) -> a plotly
figure; the passage view is an HTML string. Nothing is displayed here.

The bars show, for every passage token of the window the answer came from, the probability that the
answer starts (top row) or ends (bottom row) there: a softmax over those passage tokens. The chosen
span maximises p_start * p_end. A long passage is drawn whole but opens zoomed on ``VISIBLE_TOKENS``
tokens around the predicted answer (and the gold one, when both fit); drag the plot or the range
slider below it to scroll. Both rows share one y scale, up to a little above the largest probability,
so an unsure model's flat bars are still visible.
"""

from __future__ import annotations

import html

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from vizcore.finetune.qa_predict import QAReading
from vizcore.plot import FONT_SIZE, TICK_FONT_SIZE, base_layout, display_tokens

VISIBLE_TOKENS = 40  # bars and their token labels readable on a projector in the page's width
COLOURS = {"other": "#9ca3af", "predicted": "#1f5fa8", "gold": "#15803d", "both": "#c2410c"}
PATTERNS = {"other": "", "predicted": "/", "gold": "\\", "both": "x"}  # told apart without colour too
ROLE_NAMES = {"predicted": "predicted answer", "gold": "gold answer", "both": "predicted and gold",
              "other": "rest of the passage"}
PREDICTED_STYLE = "background:#bfdbfe;border-radius:3px;padding:1px 0"
GOLD_STYLE = "border-bottom:3px solid #15803d;padding-bottom:1px"


def probability_table(reading: QAReading) -> pd.DataFrame:
    """One row per passage token: position, token, start and end probability, role in the spans."""
    def role(i: int) -> str:
        predicted = reading.start <= i <= reading.end
        gold = reading.gold is not None and reading.gold[0] <= i <= reading.gold[1]
        return "both" if predicted and gold else "predicted" if predicted else "gold" if gold else "other"

    return pd.DataFrame({"position": range(len(reading.tokens)), "token": display_tokens(list(reading.tokens)),
                         "start": reading.start_probs, "end": reading.end_probs,
                         "role": [role(i) for i in range(len(reading.tokens))]})


def visible_range(reading: QAReading, visible: int = VISIBLE_TOKENS) -> tuple[float, float]:
    """The x range first shown: ``visible`` tokens centred on the predicted and gold spans, or on the
    predicted one when both do not fit."""
    ends = [reading.start, reading.end]
    if reading.gold is not None and max(reading.end, reading.gold[1]) - min(reading.start, reading.gold[0]) < visible:
        ends += list(reading.gold)
    centre = (min(ends) + max(ends)) / 2
    low = max(0.0, min(centre - visible / 2, len(reading.tokens) - visible))
    return low - 0.5, low + min(visible, len(reading.tokens)) - 0.5


def span_probability_bars(reading: QAReading, title: str | None = None) -> go.Figure:
    """Two rows of bars sharing the token axis: p(start) above, p(end) below, coloured and hatched by span role."""
    table = probability_table(reading)
    top = min(1.0, max(0.05, 1.1 * float(max(reading.start_probs.max(), reading.end_probs.max()))))
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08,
                        subplot_titles=("where the answer starts: p(start)", "where the answer ends: p(end)"))
    for row, column in ((1, "start"), (2, "end")):
        for role, rows in table.groupby("role", sort=False):
            fig.add_trace(go.Bar(
                x=rows["position"], y=rows[column], name=ROLE_NAMES[role], legendgroup=role, showlegend=row == 1,
                marker={"color": COLOURS[role], "pattern": {"shape": PATTERNS[role]}},
                customdata=rows[["token"]].map(html.escape).to_numpy(),
                hovertemplate=f"%{{customdata[0]}} (token %{{x}})<br>p({column}) %{{y:.3f}}<extra></extra>",
            ), row=row, col=1)
        fig.update_yaxes(title=f"p({column})", range=[0, top], row=row, col=1, tickfont={"size": TICK_FONT_SIZE})
    labels = [html.escape(token) for token in table["token"]]
    fig.update_xaxes(tickmode="array", tickvals=list(table["position"]), ticktext=labels, tickangle=-60,
                     tickfont={"size": TICK_FONT_SIZE}, range=visible_range(reading))
    fig.update_xaxes(rangeslider={"visible": len(labels) > VISIBLE_TOKENS, "thickness": 0.06}, row=2, col=1)
    fig.update_annotations(font_size=FONT_SIZE)
    base_layout(fig, title or f"Start and end probabilities over the passage (answer p = {reading.probability:.2f})",
                height=620)
    fig.update_layout(margin={"t": 90}, bargap=0.15, dragmode="pan",
                      legend={"orientation": "h", "y": 1.12, "x": 0, "font": {"size": FONT_SIZE}})
    return fig


def highlighted_passage(reading: QAReading) -> str:
    """The passage as HTML: the predicted span shaded blue, the gold answer underlined green, a legend."""
    cuts = {0, len(reading.context), *reading.answer_chars, *(reading.gold_chars or ())}
    bounds = sorted(cuts)
    parts = []
    for low, high in zip(bounds, bounds[1:]):
        text = html.escape(reading.context[low:high])
        styles = []
        if reading.answer_chars[0] <= low and high <= reading.answer_chars[1]:
            styles.append(PREDICTED_STYLE)
        if reading.gold_chars is not None and reading.gold_chars[0] <= low and high <= reading.gold_chars[1]:
            styles.append(GOLD_STYLE)
        parts.append(f"<span style='{';'.join(styles)}'>{text}</span>" if styles else text)
    legend = (f"<span style='{PREDICTED_STYLE}'>&nbsp;predicted answer&nbsp;</span>"
              + (f" &nbsp; <span style='{GOLD_STYLE}'>gold answer</span>" if reading.gold_chars else ""))
    return (f"<div style='font-size:1.15rem;line-height:1.9'>"
            f"<div style='margin-bottom:0.4rem'><b>Q:</b> {html.escape(reading.question)}</div>"
            f"<div>{''.join(parts)}</div><div style='font-size:0.95rem;margin-top:0.4rem'>{legend}</div></div>")
