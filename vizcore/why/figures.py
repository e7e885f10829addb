"""The Why? page's figures: matrix -> tidy table -> chart object (never displayed here).

Sections: ablation, importance, patching, attribution. Diverging scales are centred on 0 and carry
a legend; every cell and bar has its value in the hover text.
"""

from __future__ import annotations

import html
from typing import Mapping

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale
from plotly.subplots import make_subplots

from vizcore.plot import DIVERGING, FONT_SIZE, TICK_FONT_SIZE, axis_labels, base_layout, display_tokens

# ---- ablation ----------------------------------------------------------------------------------


# ---- importance --------------------------------------------------------------------------------


# ---- patching ----------------------------------------------------------------------------------


# ---- attribution -------------------------------------------------------------------------------

def _diverging_colour(value: float, bound: float) -> str:
    """The colour of ``value`` on the diverging scale from -bound (blue) through 0 (white) to +bound (red)."""
    return sample_colorscale(DIVERGING, [0.5 + 0.5 * float(np.clip(value / bound, -1.0, 1.0))])[0]


def _bound(values: np.ndarray) -> float:
    """The half-width of a scale centred on 0 that holds every value (1 when all are 0)."""
    finite = np.abs(values[np.isfinite(values)])
    return float(finite.max()) if finite.size and finite.max() > 0 else 1.0


def _coloured_tokens(tokens: list[str], values: np.ndarray, name: str) -> str:
    bound, spans = _bound(values), []
    for token, value in zip(display_tokens(tokens), values):
        strong = abs(value) > 0.6 * bound
        spans.append(f'<span title="{html.escape(f"{token} · {name}: {value:+.4g}")}" style="background:'
                     f'{_diverging_colour(value, bound)};color:{"white" if strong else "black"};padding:2px 5px;'
                     f'margin:2px;border-radius:4px;display:inline-block">{html.escape(token)}</span>')
    return "".join(spans)


def _legend() -> str:
    stops = ", ".join(sample_colorscale(DIVERGING, list(np.linspace(0, 1, 9))))
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


RAISES, LOWERS = "#b2182b", "#2166ac"  # the ends of the diverging scale


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
        z=correlation, x=methods, y=methods, zmin=-1, zmax=1, colorscale=DIVERGING, text=text,
        texttemplate="%{text}", textfont={"size": FONT_SIZE},
        hovertemplate="%{y} vs %{x}<br>Spearman ρ %{text}<extra></extra>",
        colorbar={"title": {"text": "Spearman ρ"}, "tickfont": {"size": TICK_FONT_SIZE}}))
    fig.update_xaxes(side="top", tickfont={"size": TICK_FONT_SIZE})
    fig.update_yaxes(autorange="reversed", tickfont={"size": TICK_FONT_SIZE})
    fig = base_layout(fig, title, 100 * len(methods) + 220)
    fig.update_layout(margin={"t": 140})
    return fig
