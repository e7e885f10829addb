"""Fine-tuning lab: train a classifier on the session's own copy of the model, live; see what changed.

Computation: vizcore/finetune/ (datasets, training, analysis, tiny), jobs: vizcore/jobs.py, ui/jobs.py ·
figures: vizcore/finetune/figures.py · CLI: python -m vizcore finetune (vizcore/finetune/cli.py)
"""

import streamlit as st

from ui import url_state
from ui.finetune_views import finetune_tab
from ui.tiny_views import tiny_panel

st.title("Fine-tuning lab")
st.markdown(
    "Teach the model a new task, sentiment, and watch it learn. Training uses **your own copy** of the "
    "model: the shared one that every page and every other user sees is never changed. Freeze the "
    "encoder and train only a small head, or let every layer move; then see what changed inside: "
    "accuracy, attention heads, and where sentences sit in the model's space.")

url_state.write()
tab_bert, tab_tiny = st.tabs(["Fine-tune the model", "Tiny Transformer from scratch"])
with tab_bert:
    finetune_tab()
with tab_tiny:
    tiny_panel()
