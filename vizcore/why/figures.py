"""The Why? page's figures: matrix -> tidy table -> chart object (never displayed here).

Sections: ablation, importance, patching, attribution, attention attribution. Diverging scales are centred
on 0 and carry a legend; every cell and bar has its value in the hover text.
"""

from __future__ import annotations

import html
from typing import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from vizcore.attention.figures import HeadMap, attention_pair
from vizcore.colours import CHANGE, DIVERGING, text_colour
from vizcore.mlm.figures import compact_layout, percent, percent_axis_format, plain
from vizcore.plot import (
    FONT_SIZE,
    TICK_FONT_SIZE,
    attention_heatmap,
    axis_labels,
    base_layout,
    cell_text,
    colour_bar,
    display_tokens,
    layer_head_heatmap,
)

BEFORE_COLOUR, AFTER_COLOUR = "#1f5fa8", "#c2410c"  # plain model blue, intervention orange


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
    # the legend at the foot of the figure, not at a share of the plot's height below it: at -0.08 it sat on the
    # axis title ("probability" over "heads off") at 8 words, and on the tick labels at 1; plotly makes room for it
    fig.update_layout(barmode="group", legend={"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom",
                                               "x": 0, "font": {"size": FONT_SIZE}})
    fig.update_xaxes(title="probability", range=[0, min(1.0, top * 1.3) or 1.0], tickformat=percent_axis_format(top),
                     tickfont={"size": TICK_FONT_SIZE})
    fig.update_yaxes(tickmode="array", tickvals=positions, ticktext=words, autorange="reversed",
                     tickfont={"size": FONT_SIZE})
    return compact_layout(fig, title, height=int(np.clip(52 * len(words) + 150, 300, 1000)))


def attention_before_after(before: np.ndarray, after: np.ndarray, tokens: Sequence[str], title: str) -> go.Figure:
    """One head's ``[query, key]`` attention with every head (left) and with the chosen heads off (right), in one
    figure (``attention_pair``): one column of query labels and one colour bar (0..1) for both."""
    tokens = list(tokens)
    return attention_pair(HeadMap(before, tokens, tokens), HeadMap(after, tokens, tokens), ("every head", "heads off"),
                          title)


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
    """A ``[layer, head]`` importance as a layers x heads map (``plot.layer_head_heatmap``), the hover adding each
    head's rank (1 = most important). ``diverging``: red/blue centred on 0, for scores that can be negative
    (the model does better without the head); else the change scale from 0 to the largest score."""
    values = np.asarray(values, dtype=np.float64)
    layers, heads = values.shape
    ranks = importance_ranks(values)
    hover = np.array([[f"layer {l + 1}, head {h + 1}<br>{value_name}: {values[l, h]:.5g}<br>rank {ranks[l, h]} "
                       f"of {values.size} (1 = most important)" for h in range(heads)] for l in range(layers)],
                     dtype=object)
    return layer_head_heatmap(values, title, value_name, scale=DIVERGING if diverging else CHANGE, hover=hover)


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
        z=np.asarray(recovered, dtype=np.float32), x=columns, y=rows, zmin=-bound, zmax=bound,
        colorscale=DIVERGING.colorscale, xgap=1, ygap=1,
        hovertemplate="patched: %{y} at %{x}<br>recovered %{z:.4f}<extra></extra>", colorbar=colour_bar("recovered")))
    cell_text(fig, np.vectorize(_two_decimals)(recovered))
    fig.update_xaxes(type="category", side="top", tickangle=-45, tickfont={"size": FONT_SIZE})
    fig.update_yaxes(type="category", autorange="reversed", tickfont={"size": FONT_SIZE})
    return base_layout(fig, title, height=int(np.clip(48 * len(rows) + 230, 380, 900)))


# ---- attribution -------------------------------------------------------------------------------

def _bound(values: np.ndarray) -> float:
    """The half-width of a scale centred on 0 that holds every value (1 when all are 0)."""
    finite = np.abs(values[np.isfinite(values)])
    return float(finite.max()) if finite.size and finite.max() > 0 else 1.0


def _coloured_tokens(tokens: list[str], values: np.ndarray, name: str) -> str:
    bound, spans = _bound(values), []
    for token, value in zip(display_tokens(tokens), values):
        background = DIVERGING.colour_at(float(value), (-bound, bound))
        spans.append(f'<span title="{html.escape(f"{token} · {name}: {value:+.4g}")}" style="background:'
                     f'{background};color:{text_colour(background)};padding:2px 5px;'
                     f'margin:2px;border-radius:4px;display:inline-block">{html.escape(token)}</span>')
    return "".join(spans)


def _legend() -> str:
    stops = ", ".join(f"{colour} {100 * fraction:g}%" for fraction, colour in DIVERGING.colorscale)
    return ('<div style="display:flex;align-items:center;gap:10px;white-space:nowrap">'
            '<span>−max (lowers f)</span>'
            f'<span style="width:240px;height:16px;background:linear-gradient(to right, {stops});'
            'border:1px solid #999;display:inline-block"></span><span>+max (raises f)</span></div>'
            '<div style="color:#555;font-size:0.8em;margin-bottom:8px">0 is white; each row is scaled to its '
            'own largest |value|, shown at its right; hover a token for its value.</div>')


def attribution_text(tokens: list[str], scores: Mapping[str, np.ndarray]) -> str:
    """The tokens coloured by each method's attributions, one row per method (``scores``: label -> [T]),
    as an HTML fragment: a diverging scale centred on 0 with a legend, each value in the hover (title)."""
    rows = "".join(
        f'<tr><td style="padding:6px 12px 6px 0;white-space:nowrap;font-weight:600">{html.escape(name)}</td>'
        f'<td style="padding:4px 0">{_coloured_tokens(tokens, np.asarray(values, dtype=float), name)}</td>'
        f'<td style="padding-left:12px;white-space:nowrap;color:#555">±{_bound(np.asarray(values, dtype=float)):.3g}'
        '</td></tr>'
        for name, values in scores.items())
    return (f'<div style="font-size:{FONT_SIZE + 4}px;line-height:1.9">{_legend()}'
            f'<table style="border-collapse:collapse">{rows}</table></div>')


RAISES, LOWERS = DIVERGING.colour_at(0.8, (-1, 1)), DIVERGING.colour_at(-0.8, (-1, 1))  # near its two ends


def attribution_bars(tokens: list[str], scores: Mapping[str, np.ndarray],
                     title: str = "Attribution per token") -> go.Figure:
    """One bar chart per method (``scores``: label -> [T]) on a shared token axis; positive bars red,
    negative blue (the legend), the exact value in the hover."""
    labels = axis_labels(tokens)
    positions = list(range(len(labels)))
    fig = make_subplots(rows=len(scores), cols=1, shared_xaxes=True, vertical_spacing=0.08,
                        subplot_titles=list(scores))
    for row, (name, values) in enumerate(scores.items(), start=1):
        values = np.asarray(values, dtype=float)
        for sign, colour, legend in ((1, RAISES, "raises f (+)"), (-1, LOWERS, "lowers f (−)")):
            fig.add_trace(go.Bar(
                x=positions, y=np.where(sign * values > 0, values, np.nan), customdata=labels, name=legend,
                legendgroup=legend, showlegend=row == 1, marker={"color": colour},
                hovertemplate=f"%{{customdata}}<br>{html.escape(name)}: %{{y:+.4g}}<extra></extra>"), row=row, col=1)
    fig.update_xaxes(tickmode="array", tickvals=positions, ticktext=labels, tickangle=-45,
                     tickfont={"size": TICK_FONT_SIZE})
    fig.update_yaxes(tickfont={"size": TICK_FONT_SIZE}, zeroline=True, zerolinecolor="#444")
    fig.update_annotations(font_size=FONT_SIZE)
    fig = base_layout(fig, title, 190 * len(scores) + 200)
    fig.update_layout(margin={"t": 110}, barmode="overlay",
                      legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 1, "xanchor": "right"})
    return fig


def method_correlation_heatmap(correlation: np.ndarray, methods: list[str],
                               title: str = "Do the methods agree? Spearman rank correlation") -> go.Figure:
    """The ``[method, method]`` rank correlations, each cell's value written in it (n/a where undefined)."""
    correlation = np.asarray(correlation, dtype=float)
    text = [["n/a" if not np.isfinite(v) else f"{v:+.2f}" for v in row] for row in correlation]
    fig = go.Figure(go.Heatmap(
        z=correlation, x=methods, y=methods, zmin=-1, zmax=1, colorscale=DIVERGING.colorscale, text=text,
        hovertemplate="%{y} vs %{x}<br>Spearman ρ %{text}<extra></extra>", colorbar=colour_bar("Spearman ρ")))
    cell_text(fig, text, size=FONT_SIZE)
    fig.update_xaxes(side="top", tickfont={"size": TICK_FONT_SIZE})
    fig.update_yaxes(autorange="reversed", tickfont={"size": TICK_FONT_SIZE})
    fig = base_layout(fig, title, 100 * len(methods) + 220)
    fig.update_layout(margin={"t": 140})
    return fig


# ---- attention attribution ---------------------------------------------------------------------

TREE_COLOUR = "#1f5fa8"


def attribution_tree_figure(edges: Sequence, tokens: list[str], layers: int, roots: Sequence[int],
                            title: str = "Attribution tree: the strongest edges from the answer down") -> go.Figure:
    """The tree of ``edges`` (``attention_attribution.Edge``: layer, query, key, score, share): tokens across,
    the input at the bottom and the last layer at the top, where ``roots`` are (the positions the output
    reads); an edge of layer ``l`` joins its query at level
    ``l + 1`` to its key at level ``l``, thicker and darker as its share of the layer's largest grows."""
    labels = axis_labels(tokens)
    fig = go.Figure()
    nodes = {(root, layers) for root in roots}
    for edge in edges:
        nodes |= {(edge.query, edge.layer + 1), (edge.key, edge.layer)}
        fig.add_trace(go.Scatter(
            x=[edge.query, edge.key], y=[edge.layer + 1, edge.layer], mode="lines", showlegend=False,
            line={"color": TREE_COLOUR, "width": 1.5 + 6 * edge.share}, opacity=0.35 + 0.65 * edge.share,
            hoverinfo="skip"))
        middle = (f"layer {edge.layer + 1}: {labels[edge.query]} reads {labels[edge.key]}<br>attribution "
                  f"{edge.score:.4g} ({100 * edge.share:.0f} % of the layer's largest)")
        fig.add_trace(go.Scatter(x=[(edge.query + edge.key) / 2], y=[edge.layer + 0.5], mode="markers",
                                 marker={"size": 14, "color": "rgba(0,0,0,0)"}, showlegend=False,
                                 hovertemplate=middle + "<extra></extra>"))
    xs, ys = zip(*sorted(nodes))
    # Tokens are named on the axis only: a label beside each node ran into its neighbours' at 1024 px.
    fig.add_trace(go.Scatter(
        x=xs, y=ys, mode="markers", customdata=[labels[x] for x in xs], showlegend=False,
        marker={"size": 12, "color": "white", "line": {"color": "#111", "width": 2}},
        hovertemplate="%{customdata}<extra></extra>"))
    fig.update_xaxes(tickmode="array", tickvals=list(range(len(labels))), ticktext=labels, tickangle=-45,
                     range=[-0.6, len(labels) - 0.2], tickfont={"size": TICK_FONT_SIZE}, showgrid=True)
    fig.update_yaxes(tickmode="array", tickvals=list(range(layers + 1)), range=[-0.4, layers + 0.4],
                     ticktext=["input", *(f"layer {l}" for l in range(1, layers + 1))],
                     tickfont={"size": TICK_FONT_SIZE}, showgrid=False, zeroline=False)
    return base_layout(fig, title, 70 * layers + 280)


def head_attribution_heatmap(matrix: np.ndarray, tokens: list[str], title: str) -> go.Figure:
    """One head's attribution ``[query, key]``: red raises the answer, blue lowers it, centred on 0."""
    return attention_heatmap(matrix, tokens, title=title, scale=DIVERGING, value_name="attribution")
