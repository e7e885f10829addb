"""Streamlit side of the "Positional encoding" page: cached wrappers.

The sinusoidal table is keyed on its sizes; a model's learned table on (model name, device, positions),
read from the shared model (``ui.state``) without changing it.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from ui import url_state
from ui.state import get_model
from vizcore.positional.encoding import MAX_DIM, MAX_POSITIONS, LearnedPositions, learned_positions, sinusoidal_encoding

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
