"""Streamlit side of the "Positional encoding" page: cached wrappers.

The sinusoidal table is keyed on its sizes; a model's learned table on (model name, device, positions),
read from the shared model (``ui.state``) without changing it. The rotary check is keyed on its sizes;
ALiBi on a sentence reads one run that kept Q and K; the learned relative bias comes from a model's file.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from ui import url_state
from ui.state import get_model, get_queue
from vizcore.model.record import Run
from vizcore.positional.encoding import MAX_DIM, MAX_POSITIONS, LearnedPositions, learned_positions, sinusoidal_encoding
from vizcore.positional.modern import (
    AlibiOnHead,
    RelativeBias,
    RotaryCheck,
    alibi_on_head,
    relative_bias_of,
    rotary_check,
)

KEY_LENGTH, KEY_D_MODEL = "positional.length", "positional.d_model"


def even_d_model(raw: str) -> int:
    d = url_state.Integer(2, MAX_DIM)(raw)
    if d % 2:
        raise ValueError("it must be even (dimensions come in sin/cos pairs).")
    return d


LINK = url_state.Link("positional", {"length": (KEY_LENGTH, url_state.Integer(1, MAX_POSITIONS)),
                                     "d_model": (KEY_D_MODEL, even_d_model)})


@st.cache_data(show_spinner=False, max_entries=8)
def get_sinusoidal(positions: int, d_model: int) -> np.ndarray:
    return sinusoidal_encoding(positions, d_model)


@st.cache_data(show_spinner="Reading the model's position table…", max_entries=8)
def get_learned(name: str, device: str, positions: int) -> LearnedPositions:
    return learned_positions(get_model(name, device), positions)


@st.cache_data(show_spinner=False, max_entries=8)
def get_rotary(positions: int, dim: int) -> RotaryCheck:
    return rotary_check(positions, dim)


@st.cache_resource(show_spinner="Running the model (queries and keys)…", max_entries=2)
def get_qkv_run(name: str, device: str, text: str, pair: str | None) -> Run:
    """One run that keeps every layer's Q and K (the pre-softmax scores are computed from them). Read-only.
    Through the model's queue, as every page's runs: sessions asking at once share a forward pass."""
    from vizcore.model.run import Capture

    return get_queue(name, device).submit(text, pair, capture=Capture(hidden=False, qkv=True))


@st.cache_data(show_spinner=False, max_entries=16)
def get_alibi(name: str, device: str, text: str, pair: str | None, layer: int, head: int) -> AlibiOnHead:
    return alibi_on_head(get_model(name, device), get_qkv_run(name, device, text, pair), layer, head)


@st.cache_data(show_spinner="Reading the relative bias from the model's weights…", max_entries=4)
def get_relative(name: str) -> RelativeBias:
    return relative_bias_of(name)
