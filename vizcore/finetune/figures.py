"""Figures of the fine-tuning lab: altair training curves, plotly heatmaps and PCA scatter (never displayed here).

Two steps, as everywhere in vizcore: numbers -> tidy table (``*_table``) -> chart object.
Layers and heads are labelled from 1, as in the rest of the UI.
"""

from __future__ import annotations

import html

import altair as alt
import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from vizcore.colours import ATTENTION, CHANGE, SEQUENTIAL
from vizcore.finetune.training import History
from vizcore.plot import (
    FONT_SIZE,
    SEGMENT_COLOURS,
    TICK_FONT_SIZE,
    base_layout,
    cell_text,
    colour_bar,
    display_tokens,
    layer_head_heatmap,
)

LABEL_COLOURS = ["#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]


def curves_table(history: History, smooth: int = 5) -> pd.DataFrame:
    """Tidy rows (step, value, series, panel) for the curves; batch values get a rolling mean."""
    rows = []
    steps = pd.DataFrame(history.steps)
    if len(steps):
        loss = steps["loss"].rolling(smooth, min_periods=1).mean()
        score = steps["train_score"].rolling(smooth, min_periods=1).mean()
        rows += [{"step": s, "value": v, "series": "training loss (mean of last 5 batches)", "panel": "loss"}
                 for s, v in zip(steps["step"], loss)]
        rows += [{"step": s, "value": v, "series": f"training batches: {history.batch_label} (mean of last 5)",
                  "panel": "score"} for s, v in zip(steps["step"], score)]
    rows += [{"step": e["step"], "value": e["score"], "series": f"held-out set: {history.metric_label}",
              "panel": "score"} for e in history.evals]
    return pd.DataFrame(rows, columns=["step", "value", "series", "panel"])


def training_curves(history: History, total_steps: int) -> alt.VConcatChart:
    """Loss (top) and the task's score (bottom: batch score and held-out metric) against the step; the x
    axis spans the whole run from the start."""
    table = curves_table(history)
    x = alt.X("step:Q", title="training step", scale=alt.Scale(domain=[0, max(1, total_steps)]))
    tooltip = [alt.Tooltip("series:N"), alt.Tooltip("step:Q"), alt.Tooltip("value:Q", format=".3f")]
    loss = alt.Chart(table[table["panel"] == "loss"]).mark_line(color="#d62728").encode(
        x=x, y=alt.Y("value:Q", title="loss (cross-entropy)"), tooltip=tooltip,
    ).properties(height=200, width="container", title="Loss")
    same = history.metric_label == history.batch_label
    score_title = history.metric_label if same else f"{history.batch_label} / {history.metric_label}"
    accuracy = alt.Chart(table[table["panel"] == "score"]).mark_line(point=True).encode(
        x=x, y=alt.Y("value:Q", title=score_title, scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("series:N", title=None, legend=alt.Legend(orient="bottom", labelLimit=400)),
        tooltip=tooltip,
    ).properties(height=220, width="container", title=score_title[:1].upper() + score_title[1:])
    return alt.vconcat(loss, accuracy).configure_axis(
        labelFontSize=TICK_FONT_SIZE, titleFontSize=FONT_SIZE).configure_legend(
        labelFontSize=TICK_FONT_SIZE).configure_title(fontSize=FONT_SIZE + 2)


def head_change_heatmap(values: np.ndarray, metric_label: str, title: str) -> go.Figure:
    """[layer, head] change as a heatmap, layer 1 at the top, hover with layer, head and value."""
    top = max(float(np.max(values, initial=0.0)), 1e-3)  # all zeros (head-only training) stays pale, not mid-scale
    return layer_head_heatmap(values, title, metric_label, scale=CHANGE, zrange=(0.0, top))


def confusion_heatmap(confusion: np.ndarray, label_names: tuple[str, ...] | list[str]) -> go.Figure:
    """Counts with true labels as rows and predictions as columns; each cell shows its count (``cell_text``)."""
    confusion = np.asarray(confusion)
    names = list(label_names)
    fig = go.Figure(go.Heatmap(
        z=confusion, x=names, y=names, colorscale=SEQUENTIAL.colorscale, zmin=0,  # counts: 0 to the largest
        zmax=max(float(confusion.max(initial=0)), 1.0),
        hovertemplate="true %{y}, predicted %{x}: %{z} examples<extra></extra>",
        colorbar=colour_bar("examples"),
    ))
    fig.update_xaxes(title="predicted label", type="category", tickfont={"size": TICK_FONT_SIZE})
    fig.update_yaxes(title="true label", type="category", autorange="reversed", tickfont={"size": TICK_FONT_SIZE})
    base_layout(fig, "Confusion matrix (held-out set)", height=160 + 70 * len(names))
    fig.update_layout(margin={"t": 60})
    return cell_text(fig, confusion.astype(str), size=FONT_SIZE + 4)


def pca_scatter(before: np.ndarray, after: np.ndarray, labels: np.ndarray, label_names: tuple[str, ...],
                texts: tuple[str, ...], explained: tuple[np.ndarray, np.ndarray],
                title: str = "Pooled sentence vectors of the held-out set (PCA), coloured by true label",
                legend: str = "true label", colours: tuple[str, ...] | None = None) -> go.Figure:
    """Held-out vectors before and after, each projected on its own first two principal components."""
    colours = colours or tuple(LABEL_COLOURS[i % len(LABEL_COLOURS)] for i in range(len(label_names)))
    titles = [f"{name}: PC1 {e[0]:.0%}, PC2 {e[1]:.0%} of variance" for name, e in
              zip(("before fine-tuning", "after fine-tuning"), explained)]
    fig = make_subplots(rows=1, cols=2, subplot_titles=titles, horizontal_spacing=0.08)
    for column, points in ((1, before), (2, after)):
        for label, name in enumerate(label_names):
            chosen = labels == label
            fig.add_trace(go.Scatter(
                x=points[chosen, 0], y=points[chosen, 1], mode="markers", name=name, legendgroup=name,
                showlegend=column == 1, marker={"size": 10, "color": colours[label],
                                                "line": {"width": 1, "color": "white"}},
                customdata=[texts[i] for i in np.flatnonzero(chosen)],
                hovertemplate=f"{name}<br>%{{customdata}}<extra></extra>",
            ), row=1, col=column)
        fig.update_xaxes(title="PC1", row=1, col=column, tickfont={"size": TICK_FONT_SIZE})
        fig.update_yaxes(title="PC2", row=1, col=column, tickfont={"size": TICK_FONT_SIZE})
    fig.update_annotations(font_size=FONT_SIZE)
    base_layout(fig, title, height=480)
    fig.update_layout(margin={"t": 90}, legend={"title": {"text": legend}})
    return fig


def segment_strip(tokens: list[str], segments: list[int], per_row: int = 8) -> go.Figure:
    """A pair as the model reads it: each token in a cell coloured by its segment id (0 = sentence A,
    1 = sentence B), ``per_row`` tokens a row; hover gives position, token and segment id."""
    rows = -(-len(tokens) // per_row)
    z = np.full((rows, per_row), np.nan)
    text = np.full((rows, per_row), "", dtype=object)
    hover = np.full((rows, per_row), "", dtype=object)
    for i, (token, segment) in enumerate(zip(display_tokens(tokens), segments)):
        token = html.escape(token, quote=False)  # plotly's text reads a little HTML: MPNet's <s> is strikethrough
        z[i // per_row, i % per_row] = segment
        text[i // per_row, i % per_row] = f"{token}<br><sub>{segment}</sub>"
        hover[i // per_row, i % per_row] = f"position {i}: {token}<br>segment id {segment}"
    scale = [[0, SEGMENT_COLOURS[0]], [0.5, SEGMENT_COLOURS[0]], [0.5, SEGMENT_COLOURS[1]], [1, SEGMENT_COLOURS[1]]]
    fig = go.Figure(go.Heatmap(
        z=z, text=text, customdata=hover, hovertemplate="%{customdata}<extra></extra>", colorscale=scale, zmin=0,
        zmax=1, xgap=4, ygap=4, colorbar={"title": {"text": "segment id"}, "tickvals": [0.25, 0.75],
                                  "ticktext": ["0: sentence A", "1: sentence B"], "tickfont": {"size": TICK_FONT_SIZE}},
    ))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False, autorange="reversed")
    base_layout(fig, "[CLS] A [SEP] B [SEP], with the segment id under each token", height=90 + 62 * rows)
    fig.update_layout(margin={"t": 50, "b": 10}, plot_bgcolor="white")
    return cell_text(fig, text, size=FONT_SIZE)


def tiny_curves_table(steps: list[dict]) -> pd.DataFrame:
    rows = []
    for row in steps:
        # short names: the legend is one line under the plot, in a projector's column too ("… sequences right" was cut)
        rows.append({"step": row["step"], "value": row["token_accuracy"], "series": "each digit"})
        rows.append({"step": row["step"], "value": row["sequence_accuracy"], "series": "whole sequence"})
    return pd.DataFrame(rows, columns=["step", "value", "series"])


def tiny_accuracy_curve(steps: list[dict], total_steps: int) -> alt.VConcatChart:
    """Held-out accuracy of the tiny Transformer against the step (512 fixed random sequences)."""
    chart = alt.Chart(tiny_curves_table(steps)).mark_line(point=True).encode(
        x=alt.X("step:Q", title="training step", scale=alt.Scale(domain=[0, max(1, total_steps)])),
        y=alt.Y("value:Q", title="held-out accuracy", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("series:N", title=None, legend=alt.Legend(orient="bottom", labelLimit=400)),
        tooltip=[alt.Tooltip("series:N"), alt.Tooltip("step:Q"), alt.Tooltip("value:Q", format=".1%")],
    ).properties(height=240, width="container",  # a short title, its detail below it: one line ran past the column
                 title=alt.Title("Held-out accuracy", subtitle="on 512 sequences"))
    # A single chart in Streamlit's stretch mode is fitted with its legend into a short box; the
    # one-panel vconcat keeps the plot itself 240 px high, like the fine-tuning curves.
    return alt.vconcat(chart).configure_axis(
        labelFontSize=TICK_FONT_SIZE, titleFontSize=FONT_SIZE).configure_legend(
        labelFontSize=TICK_FONT_SIZE).configure_title(fontSize=FONT_SIZE + 2, subtitleFontSize=TICK_FONT_SIZE)


def tiny_attention_grid(maps: np.ndarray, digits: np.ndarray, step: int) -> go.Figure:
    """Every head of every layer, ``maps`` [layer, head, query, key], on one input; rows are layers."""
    layers, heads, length, _ = maps.shape
    labels = [f"{i}:{d}" for i, d in enumerate(digits.tolist())]
    # short titles over small maps ("layer 1, head 2" ran into its neighbour's on a projector); the title says them
    fig = make_subplots(rows=layers, cols=heads, horizontal_spacing=0.03, vertical_spacing=0.16,
                        subplot_titles=[f"L{l + 1} H{h + 1}" for l in range(layers) for h in range(heads)])
    for layer in range(layers):
        for head in range(heads):
            fig.add_trace(go.Heatmap(
                z=maps[layer, head], x=labels, y=labels, colorscale=ATTENTION.colorscale, zmin=ATTENTION.fixed[0],
                zmax=ATTENTION.fixed[1], showscale=layer == 0 and head == 0,
                colorbar=colour_bar(ATTENTION.quantity),
                hovertemplate="query %{y} → key %{x}<br>weight %{z:.3f}<extra></extra>",
            ), row=layer + 1, col=head + 1)
    fig.update_xaxes(type="category", tickfont={"size": TICK_FONT_SIZE}, tickangle=0)
    fig.update_yaxes(type="category", autorange="reversed", tickfont={"size": TICK_FONT_SIZE})
    for column in range(2, heads + 1):  # one set of row labels per layer, at the left
        fig.update_yaxes(showticklabels=False, col=column)
    for row in range(1, layers):  # one set of key labels, under the last layer (above, they met the next titles)
        fig.update_xaxes(showticklabels=False, row=row)
    fig.update_annotations(font_size=FONT_SIZE - 1)
    base_layout(fig, f"Attention on {' '.join(map(str, digits.tolist()))} at step {step} (L layer, H head)",
                height=80 + 300 * layers)
    fig.update_layout(margin={"t": 90})
    return fig
