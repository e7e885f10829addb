"""Streamlit side of the "Positional encoding" page (pages/positional.py): cached wrappers (page.py)."""
