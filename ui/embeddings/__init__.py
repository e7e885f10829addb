"""Streamlit side of the Embeddings page (pages/embeddings.py): the view on screen and the controls several views
share (page.py), and one module per view: similarity, search, contexts, tokens, queries."""
