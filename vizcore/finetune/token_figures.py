"""Figures of the token (NER) task: entities as coloured spans, the word-piece alignment, scores per type.

The spans and the alignment are HTML strings (text with highlights reads best as text); the scores and
the per-word probabilities are plotly figures. Nothing is displayed here. Colours: light backgrounds
with near-black text (contrast above 10:1), one hue per entity type, with a legend.
"""

from __future__ import annotations

import html
from typing import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from vizcore.colours import PROBABILITY
from vizcore.finetune.entities import MICRO, EntityScore
from vizcore.finetune.tokens import IGNORE
from vizcore.plot import FONT_SIZE, TICK_FONT_SIZE, base_layout, matrix_heatmap

TYPE_COLOURS = {"PER": "#fcd34d", "LOC": "#93c5fd", "ORG": "#86efac", "MISC": "#d8b4fe"}
EXTRA_COLOURS = ("#fca5a5", "#fdba74", "#5eead4", "#f9a8d4", "#cbd5e1")
TEXT_COLOUR = "#111827"
TYPE_NAMES = {"PER": "person", "LOC": "place", "ORG": "organisation", "MISC": "other name"}
SCORE_COLOURS = {"precision": "#2563eb", "recall": "#f59e0b", "F1": "#15803d"}
_BOX = "display:inline-block;border-radius:6px;padding:1px 6px;margin:2px 1px;line-height:1.5"


def type_colours(types: Sequence[str]) -> dict[str, str]:
    """A background colour per entity type: the four CoNLL types fixed, others from a second palette."""
    extra = iter(EXTRA_COLOURS * (1 + len(types) // len(EXTRA_COLOURS)))
    return {t: TYPE_COLOURS.get(t) or next(extra) for t in types}


def _badge(kind: str) -> str:
    return (f"<span style='font-size:0.6em;font-weight:700;margin-left:6px;vertical-align:middle;"
            f"letter-spacing:0.04em'>{html.escape(kind)}</span>")


def entity_html(text: str, spans: Sequence[tuple[int, int, str]], colours: dict[str, str],
                font_px: int = 24) -> str:
    """``text`` with each (start, end, type) character span highlighted in its type's colour and labelled."""
    parts, cursor = [], 0
    for start, end, kind in sorted(spans):
        parts.append(html.escape(text[cursor:start]))
        parts.append(f"<mark style='background:{colours.get(kind, '#e5e7eb')};color:{TEXT_COLOUR};{_BOX}' "
                     f"title='{html.escape(kind, quote=True)}'>{html.escape(text[start:end])}{_badge(kind)}</mark>")
        cursor = end
    parts.append(html.escape(text[cursor:]))
    return (f"<div style='font-size:{font_px}px;line-height:2.1;color:{TEXT_COLOUR};background:#ffffff;"
            f"padding:8px 12px;border-radius:8px'>{''.join(parts)}</div>")


def legend_html(colours: dict[str, str], font_px: int = 18) -> str:
    """One swatch per type with its name (PER = person, ...)."""
    items = [f"<span style='background:{colour};color:{TEXT_COLOUR};{_BOX};margin-right:10px'>"
             f"<b>{html.escape(kind)}</b> {html.escape(TYPE_NAMES.get(kind, ''))}</span>"
             for kind, colour in colours.items()]
    return f"<div style='font-size:{font_px}px'>{''.join(items)}</div>"


def alignment_html(table: pd.DataFrame, colours: dict[str, str], font_px: int = 18) -> str:
    """Each word piece of ``tokens.alignment_table`` as a box with the label the loss sees beneath it: a
    word's first piece carries its tag (coloured by type, white for O), every other piece and the special
    tokens -100 (grey, hatched)."""
    boxes = []
    for piece, word, label_id, label in table[["piece", "word", "label id", "label"]].itertuples(index=False):
        ignored = label_id == IGNORE
        background = ("repeating-linear-gradient(45deg,#f3f4f6,#f3f4f6 6px,#e5e7eb 6px,#e5e7eb 12px)"
                      if ignored else colours.get(label[2:], "#ffffff"))
        title = html.escape(f"piece of '{word}'" if word else "special token", quote=True)
        boxes.append(
            f"<span title='{title}' style='display:inline-block;text-align:center;margin:3px;padding:4px 8px;"
            f"border:1px solid #9ca3af;border-radius:6px;background:{background};color:{TEXT_COLOUR}'>"
            f"<span style='font-family:monospace'>{html.escape(piece)}</span><br>"
            f"<span style='font-size:0.75em;font-weight:{400 if ignored else 700}'>"
            f"{IGNORE if ignored else html.escape(label)}</span></span>")
    return f"<div style='font-size:{font_px}px;line-height:1.3'>{''.join(boxes)}</div>"


def type_scores_chart(scores: Sequence[EntityScore]) -> go.Figure:
    """Precision, recall and F1 per entity type and over all types, as grouped bars (0 to 1)."""
    names = [("all (micro)" if s.kind == MICRO else s.kind) for s in scores]
    fig = go.Figure()
    for measure, colour in SCORE_COLOURS.items():
        values = [getattr(s, measure.lower()) for s in scores]
        hover = [f"{n}: {measure} {v:.3f}<br>{s.correct} right of {s.predicted} predicted, {s.support} in the "
                 "gold data" for n, v, s in zip(names, values, scores)]
        fig.add_bar(name=measure, x=names, y=values, marker_color=colour, hovertext=hover, hoverinfo="text",
                    text=[f"{v:.2f}" for v in values], textposition="outside", textfont={"size": TICK_FONT_SIZE})
    fig.update_yaxes(range=[0, 1.12], title="score", tickfont={"size": TICK_FONT_SIZE})
    fig.update_xaxes(title="entity type", tickfont={"size": FONT_SIZE})
    base_layout(fig, "Held-out entity scores by type", 440)
    # base_layout's top margin leaves room for a heatmap's rotated column labels; bars need only the title's
    fig.update_layout(barmode="group", margin={"l": 10, "r": 10, "t": 60, "b": 10},
                      legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 1, "xanchor": "right",
                              "font": {"size": FONT_SIZE}})
    return fig


def tag_probability_heatmap(words: Sequence[str], probabilities: np.ndarray, tag_names: Sequence[str]) -> go.Figure:
    """The model's probability of every tag (columns) for every word (rows), read at its first piece."""
    return matrix_heatmap(np.asarray(probabilities), "Tag probabilities per word", row_labels=list(words),
                          col_labels=list(tag_names), row_title="word", col_title="tag", value_name="probability",
                          scale=PROBABILITY)
