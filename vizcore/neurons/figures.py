"""Figures of the feed-forward neurons (plotly objects, tables and an HTML fragment; never displayed here)."""

from __future__ import annotations

import html
from typing import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from vizcore.colours import SEQUENTIAL, text_colour
from vizcore.plot import TICK_FONT_SIZE, axis_labels, base_layout_dict, display_tokens, matrix_heatmap

POSITIVE, NEGATIVE = "#b2182b", "#2166ac"  # DIVERGING's ends: red above 0, blue below
# One colour per factor (Okabe & Ito's colour-blind-safe set, light enough for black text), always with its number.
FACTOR_COLOURS = ("#E69F00", "#56B4E9", "#009E73", "#F0E442", "#CC79A7", "#D55E00", "#0072B2", "#999999",
                  "#A6D854", "#FFD92F")


def activation_bars(tokens: Sequence[str], values: np.ndarray, title: str) -> go.Figure:
    """One neuron's activation at each token: red above 0, blue below (GELU's small negative dip)."""
    values = np.asarray(values, dtype=np.float64)
    labels = axis_labels(list(tokens))
    bar = go.Bar(x=labels, y=values, marker_color=[POSITIVE if v >= 0 else NEGATIVE for v in values],
                 hovertemplate="%{x}<br>activation %{y:.4f}<extra></extra>")
    layout = {**base_layout_dict(title, 420), "margin": {"l": 10, "r": 10, "t": 70, "b": 10},
              "xaxis": {"title": {"text": "token"}, "tickangle": -60, "tickfont": {"size": TICK_FONT_SIZE}},
              "yaxis": {"title": {"text": "activation"}, "tickfont": {"size": TICK_FONT_SIZE}, "zeroline": True}}
    return go.Figure(data=[bar], layout=layout)


def factor_heatmap(tokens: Sequence[str], strengths: np.ndarray, title: str) -> go.Figure:
    """Each factor's strength at each token, ``[factor, token]``, from light (0) to dark."""
    rows = [f"factor {i + 1}" for i in range(len(strengths))]
    return matrix_heatmap(strengths, title, rows, axis_labels(list(tokens)), row_title="factor", col_title="token",
                          value_name="strength", scale=SEQUENTIAL)


def factor_text(tokens: Sequence[str], strengths: np.ndarray) -> str:
    """The sentence as Ecco draws it: each token on the colour of its strongest factor, paler where that factor is
    weaker, the factor's number beside it (not told by colour alone). An HTML fragment, the text escaped."""
    strengths = np.asarray(strengths, dtype=np.float64)  # (F, T)
    peak = strengths.max(axis=1, keepdims=True)
    share = np.divide(strengths, peak, out=np.zeros_like(strengths), where=peak > 0)
    spans = []
    for t, token in enumerate(display_tokens(list(tokens))):
        f = int(np.argmax(share[:, t]))
        colour = _blend(FACTOR_COLOURS[f % len(FACTOR_COLOURS)], float(share[f, t]))
        spans.append(f"<span style='background:{colour};color:{text_colour(colour)};padding:2px 3px;margin:1px;"
                     f"border-radius:3px;display:inline-block' title='factor {f + 1}: {share[f, t]:.0%} of its "
                     f"peak'>{html.escape(token)}<sub>{f + 1}</sub></span>")
    return "<div style='line-height:2.2;font-size:1.05rem'>" + "".join(spans) + "</div>"


def _blend(colour: str, amount: float) -> str:
    """``colour`` at ``amount`` (0..1) over white."""
    rgb = np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)], dtype=np.float64)
    mixed = 255 - (255 - rgb) * np.clip(amount, 0.0, 1.0)
    return "#" + "".join(f"{int(round(c)):02x}" for c in mixed)


def examples_table(records: list[dict]) -> pd.DataFrame:
    """A neuron's top examples (``neuron_top``'s records): rank from 1, activation, the context cut around the token."""
    return pd.DataFrame({
        "rank": range(1, len(records) + 1), "activation": [r["activation"] for r in records],
        "before": [r["context"][:r["token_start"]] for r in records],
        "token": [r["context"][r["token_start"]:r["token_end"]] for r in records],
        "after": [r["context"][r["token_end"]:] for r in records],
        "line": [r["sentence_id"] for r in records]})


def neurons_table(found: pd.DataFrame) -> pd.DataFrame:
    """``search_token``'s or ``strongest``'s neurons with layer and neuron counted from 1, as the app counts."""
    table = found.copy()
    table["layer"] = table["layer"] + 1
    table["neuron"] = table["neuron"] + 1
    return table
