"""Streamlit side of the Translate page (pages/seq2seq.py, URL /translate): the model, controls, cached runs and
link (page.py), the views of one answer (views.py) and the live training tab (training.py)."""
