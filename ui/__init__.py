"""Streamlit-only helpers: cached wrappers around vizcore, the shared sidebar, session keys."""
