"""Streamlit side of the Attention Explorer (pages/attention.py): cached results, the link and the shared
controls (page.py) and the views (views.py). The in-browser renderer, also on Home, is ui/attention_component.py."""
