"""Figures of the Corpus page (plotly objects, never displayed here): the layers x heads map of head roles, best
head against the fixed-offset baseline per relation, and one measure's spread over the sentences per head.
Layers and heads are labelled 1-based, as the UI counts.
"""

from __future__ import annotations

import html

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from vizcore.attention.head_stats import LABELS
from vizcore.corpus.roles import ROLES
from vizcore.plot import FONT_SIZE, base_layout, cell_text, layer_head_heatmap

ROLE_COLOURS = {"syntactic": "#1a7f37", "positional": "#1f5fa8", "special-token": "#c2410c", "broad": "#8e44ad",
                "mixed": "#c8c8c8"}


CELL_CHARS = 5  # what a cell of the 12-head grid holds at CELL_FONT on a 1024 px screen (a 35 px cell)
CELL_FONT = 10


def cell_label(name: str) -> str:
    """A relation's name as it fits a cell: "nsubjpass" and "npadvmod" spilled over their neighbours; the cell's
    hover names it in full."""
    return name if len(name) <= CELL_CHARS else name[:CELL_CHARS - 1] + "…"


def role_map(roles: pd.DataFrame, title: str = "What each head does over the corpus") -> go.Figure:
    """A layers x heads grid, one colour per role (``roles.ROLES``) and its name in the cell (a syntactic head's
    relation, cut to ``CELL_CHARS``, or the role's first letters), the role's reason in the hover."""
    layers, heads = int(roles["layer"].max()) + 1, int(roles["head"].max()) + 1
    code = {role: i for i, role in enumerate(ROLES)}
    z = np.full((layers, heads), np.nan)
    hover = np.full((layers, heads), "", dtype=object)
    text = np.full((layers, heads), "", dtype=object)
    for row in roles.itertuples(index=False):
        z[row.layer, row.head] = code[row.role]
        hover[row.layer, row.head] = (f"layer {row.layer + 1}, head {row.head + 1}<br><b>{row.role}</b>: "
                                      f"{html.escape(row.detail)}")
        text[row.layer, row.head] = cell_label(row.relation if row.role == "syntactic" else row.role[:3])
    n = len(ROLES)
    scale = []
    for i, role in enumerate(ROLES):  # a stepped scale: each role one flat band of colour
        scale += [[i / n, ROLE_COLOURS[role]], [(i + 1) / n, ROLE_COLOURS[role]]]
    fig = layer_head_heatmap(z, title, "role", zrange=(-0.5, n - 0.5), hover=hover)
    fig.update_traces(colorscale=scale, colorbar={"tickvals": list(range(n)), "ticktext": list(ROLES)})
    return cell_text(fig, text, size=CELL_FONT)


def relation_bars(best: pd.DataFrame, direction: str) -> go.Figure:
    """Per relation (most arcs first): the best head's accuracy beside the best fixed offset's."""
    rows = best[best["direction"] == direction].sort_values("count", ascending=False)
    labels = [f"{r} ({c:,})" for r, c in zip(rows["relation"], rows["count"])]
    heads = [f"head {layer + 1}-{head + 1}" for layer, head in zip(rows["layer"], rows["head"])]
    offsets = [f"offset {o:+d}" for o in rows["baseline_offset"]]
    fig = go.Figure([
        go.Bar(name="best head", x=labels, y=rows["accuracy"], text=heads, marker_color=ROLE_COLOURS["syntactic"],
               hovertemplate="%{x}<br>%{text}: %{y:.1%}<extra></extra>", textposition="none"),
        go.Bar(name="best fixed offset", x=labels, y=rows["baseline_accuracy"], text=offsets,
               marker_color="#9aa5b1", hovertemplate="%{x}<br>%{text}: %{y:.1%}<extra></extra>",
               textposition="none"),
    ])
    base_layout(fig, f"Best head vs best fixed offset, {direction} (arcs in brackets)", 460)
    fig.update_layout(barmode="group", legend={"font": {"size": FONT_SIZE}})
    fig.update_yaxes(title="accuracy", tickformat=".0%", range=[0, 1])
    return fig


def measure_boxes(quantiles: pd.DataFrame, measure: str, layer: int | None = None) -> go.Figure:
    """One box per head: 5-95 % whiskers, quartiles, median and mean of ``measure`` over the sentences
    (``quantiles`` from ``results.head_quantiles``); only ``layer`` (0-based) when given."""
    rows = quantiles if layer is None else quantiles[quantiles["layer"] == layer]
    names = [f"{a + 1}-{b + 1}" for a, b in zip(rows["layer"], rows["head"])]
    fig = go.Figure(go.Box(
        x=names, q1=rows["q25"], median=rows["q50"], q3=rows["q75"], lowerfence=rows["q05"],
        upperfence=rows["q95"], mean=rows["mean"], marker_color="#1f5fa8", name=LABELS[measure],
        hoverinfo="x+y"))
    where = "every head" if layer is None else f"the heads of layer {layer + 1}"
    base_layout(fig, f"{LABELS[measure]} over the sentences, {where} (whiskers: 5 % and 95 %)", 440)
    fig.update_xaxes(title="layer-head", type="category")
    fig.update_yaxes(title=LABELS[measure])
    return fig
