"""Streamlit side of the "Attention, step by step" and "Positional encoding" pages: cached wrappers.

Everything heavy goes through ``st.cache_data`` keyed on plain values (model name, device, text,
sizes); the shared model comes from ``ui.state`` and is only read, never hooked or trained.
"""

from __future__ import annotations

from typing import Callable, TypeVar

import numpy as np
import streamlit as st

from ui.state import get_model
from vizcore.errors import VizError
from vizcore.positional import LearnedPositions, learned_positions, sinusoidal_encoding

T = TypeVar("T")


def or_stop(compute: Callable[..., T], *args, **kwargs) -> T:
    """Run ``compute``; a VizError becomes a clear ``st.error`` and the page stops there."""
    try:
        return compute(*args, **kwargs)
    except VizError as error:
        st.error(str(error))
        st.stop()


@st.cache_data(show_spinner=False, max_entries=8)
def get_sinusoidal(positions: int, d_model: int) -> np.ndarray:
    return sinusoidal_encoding(positions, d_model)


@st.cache_data(show_spinner="Reading the model's position table…", max_entries=8)
def get_learned(name: str, device: str, positions: int) -> LearnedPositions:
    return learned_positions(get_model(name, device), positions)
