"""Streamlit side of the Generate page (pages/decoder.py, URL /generate): its model, prompt, controls, cached
computations and link (page.py)."""
