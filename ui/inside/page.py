"""Streamlit side of the "Attention, step by step" page (/step-by-step): cached wrappers and two displays.

Everything heavy goes through ``st.cache_data`` keyed on plain values (model name, device, text,
sizes); the shared model comes from ``ui.state`` and is only read, never hooked or trained.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from ui import layer_head, state, url_state
from ui.feedback import CHART
from ui.layout import for_screen
from ui.state import get_model
from vizcore.colours import DIVERGING, Scale
from vizcore.inside.demos import (
    PaddingDemo,
    PermutationDemo,
    ScalingDemo,
    padding_demo,
    permutation_demo,
    scaling_demo,
    variance_curve,
)
from vizcore.inside.steps import EmbeddingParts, LayerSteps, architecture, embedding_parts, layer_steps
from vizcore.model.record import Run
from vizcore.plot import matrix_heatmap

LINK = url_state.Link("step_by_step", layer_head.URL_PARAMS)  # the session's layer and head (ui/layer_head.py)


def get_run(name: str, device: str, text: str, pair: str | None) -> Run:
    """The run with hidden states, from the server's one cache of runs (after the architecture check)."""
    architecture(get_model(name, device))
    return state.get_run(name, device, text, pair, hidden=True)


@st.cache_data(show_spinner="Recomputing the layer…", max_entries=16)
def get_steps(name: str, device: str, text: str, pair: str | None, layer: int, head: int) -> LayerSteps:
    return layer_steps(get_model(name, device), get_run(name, device, text, pair), layer, head)


@st.cache_data(show_spinner=False, max_entries=8)
def get_embedding_parts(name: str, device: str, text: str, pair: str | None) -> EmbeddingParts:
    return embedding_parts(get_model(name, device), get_run(name, device, text, pair))


@st.cache_data(show_spinner=False, max_entries=16)
def get_scaling(d_k: int) -> ScalingDemo:
    return scaling_demo(d_k)


@st.cache_data(show_spinner=False, max_entries=1)
def get_variance_curve() -> list[dict]:
    return variance_curve()


@st.cache_data(show_spinner="Running the padded batch…", max_entries=8)
def get_padding(name: str, device: str, first: str, second: str, layer: int, head: int) -> PaddingDemo:
    return padding_demo(get_model(name, device), first, second, layer, head)


@st.cache_data(show_spinner="Shuffling the words…", max_entries=8)
def get_permutation(name: str, device: str, text: str, pair: str | None, seed: int) -> PermutationDemo:
    return permutation_demo(get_model(name, device), get_run(name, device, text, pair), seed)


def show_matrix(matrix: np.ndarray, title: str, key: str, rows: list[str] | None = None,
                cols: list[str] | None = None, row_title: str = "token", col_title: str = "dimension",
                value_name: str = "value", scale: Scale = DIVERGING, container=st) -> None:
    """A labelled heatmap with its shape in the title (``matrix_heatmap``) on ``scale``, drawn in ``container``."""
    figure = matrix_heatmap(matrix, title, row_labels=rows, col_labels=cols, row_title=row_title,
                            col_title=col_title, value_name=value_name, scale=scale)
    container.plotly_chart(for_screen(figure), key=key, config=CHART)


def show_check(label: str, value: float, container=st, tolerance: float = 1e-5) -> None:
    """A max-abs-difference metric, marked as passing or failing the tolerance."""
    verdict = f"≤ {tolerance:.0e} ✓" if value <= tolerance else f"> {tolerance:.0e} ✗"
    container.metric(label, f"{value:.1e}", verdict, delta_color="normal" if value <= tolerance else "inverse",
                     delta_arrow="off")
