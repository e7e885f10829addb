"""The Why? page's attribution part."""

from __future__ import annotations

import streamlit as st

from ui.why import WhyContext


def show(ctx: WhyContext) -> dict:
    """Draw the part; returns its URL parameters."""
    st.info("Coming in this change.")
    return {}
