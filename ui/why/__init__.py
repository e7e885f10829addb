"""Streamlit side of the Why? page (pages/why.py): the page's context and URL (page.py) and one module per
part, named as its computation in vizcore/why/: ablation, importance, patching, attribution."""
