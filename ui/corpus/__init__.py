"""Streamlit side of the Corpus page (pages/corpus.py): which results are shown, a run of your sentences as a
background job, and the four views of the results (page.py)."""
