"""Streamlit side of the Lessons page (/lessons): ``page`` (state, link, cached views) and ``step`` (one step drawn)."""
