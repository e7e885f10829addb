"""Streamlit side of the pre-training page (pages/mlm.py, URL /fill-mask): the masked words' model, sentence and
cached computations (page.py) and next sentence prediction (nsp.py)."""
