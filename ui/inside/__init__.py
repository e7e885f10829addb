"""Streamlit side of the "Attention, step by step" page (pages/inside.py, URL /step-by-step): cached wrappers of
the recomputed layer and the demos, and the matrix and check displays (page.py)."""
