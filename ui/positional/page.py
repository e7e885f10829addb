"""Streamlit side of the "Positional encoding" page: cached wrappers.

The sinusoidal table is keyed on its sizes; a model's learned table on (model name, device, positions),
read from the shared model (``ui.state``) without changing it.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from ui.state import get_model
from vizcore.positional.encoding import LearnedPositions, learned_positions, sinusoidal_encoding


@st.cache_data(show_spinner=False, max_entries=8)
def get_sinusoidal(positions: int, d_model: int) -> np.ndarray:
    return sinusoidal_encoding(positions, d_model)


@st.cache_data(show_spinner="Reading the model's position table…", max_entries=8)
def get_learned(name: str, device: str, positions: int) -> LearnedPositions:
    return learned_positions(get_model(name, device), positions)
