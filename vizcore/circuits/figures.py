"""Figures of the weight circuits (plotly objects and tables, never displayed here)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from vizcore.circuits.circuits import KINDS
from vizcore.colours import DIVERGING, SEQUENTIAL
from vizcore.plot import cell_text, layer_head_heatmap, matrix_heatmap

KIND_LABELS = {"q": "Q-composition", "k": "K-composition", "v": "V-composition"}


def pairs_table(pairs: list[dict]) -> pd.DataFrame:
    """The QK circuit's best pairs (``qk_top``'s records), one row each, ranked from 1."""
    return pd.DataFrame({"rank": range(1, len(pairs) + 1), "query token": [p["query_token"] for p in pairs],
                         "key token": [p["key_token"] for p in pairs], "score": [p["score"] for p in pairs]})


def ov_copying_heatmap(scores: np.ndarray, title: str) -> go.Figure:
    """Every head's OV copying score ``[layer, head]`` in [-1, 1], written in its cell (red copies, blue inverts)."""
    text = np.vectorize(lambda v: f"{v:+.2f}")(np.asarray(scores, dtype=np.float64))
    return layer_head_heatmap(scores, title, "OV copying", scale=DIVERGING, zrange=(-1.0, 1.0), text=text,
                              value_format="+.3f")


def composition_heatmap(scores: dict[str, np.ndarray], title: str) -> go.Figure:
    """One head's Q-, K- and V-composition with each head of the layer before, ``{kind: [H]}`` -> 3 rows x H."""
    matrix = np.stack([np.asarray(scores[kind], dtype=np.float64) for kind in KINDS])
    heads = [str(h + 1) for h in range(matrix.shape[1])]
    fig = matrix_heatmap(matrix, title, [KIND_LABELS[k] for k in KINDS], heads, row_title="composition",
                         col_title="writing head of the layer before", value_name="score", scale=SEQUENTIAL)
    return cell_text(fig, [[f"{v:.2f}" for v in row] for row in matrix])
