"""Fine-tuning lab: train a classifier on the session's own copy of the model, live; see what changed.

Computation: vizcore/finetune/ (tasks, training, classify, token_task, qa_task, datasets, analysis, tiny),
jobs: vizcore/jobs.py, ui/jobs.py · figures: vizcore/finetune/figures.py ·
CLI: python -m vizcore finetune (vizcore/finetune/cli.py)
UI: ui/finetune/ (views: the task tab; training: settings and the job; classify, token, qa: one task each;
tiny: the tiny Transformer tab)
"""

import streamlit as st

from ui import url_state
from ui.finetune.tiny import tiny_panel
from ui.finetune.views import finetune_tab

st.title("Fine-tuning lab")
st.markdown(
    "Teach the model a new task and watch it learn: a label per sentence (sentiment), a label per pair of "
    "sentences (does B follow from A?), a tag per word (names of people, places, organisations) or the "
    "answer's span in a passage. Training uses **your own copy** of the model: the shared one that every "
    "page and every other user sees is never changed. Freeze the encoder and train only a small head, or "
    "let every layer move; then see what changed inside: held-out scores, attention heads, and where "
    "examples sit in the model's space.")

url_state.write()
tab_bert, tab_tiny = st.tabs(["Fine-tune the model", "Tiny Transformer from scratch"])
with tab_bert:
    finetune_tab()
with tab_tiny:
    tiny_panel()
