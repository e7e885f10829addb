"""Translate: the whole Transformer, encoder and decoder, on a task whose alignment is known.

Computation: vizcore/seq2seq/ (dates, model, decoding, alignment, training, hub) · figures: vizcore/seq2seq/figures.py ·
CLI: python -m vizcore translate-date · docs: docs/ENCODER_DECODER.md
UI: ui/seq2seq/ (page: the model, the controls, the cached runs, the link; views: one answer's views; training:
the train-it-here tab). URL: /translate
"""

import streamlit as st

from ui import url_state
from ui.seq2seq import page as tr
from ui.seq2seq import training, views

url_state.warn(url_state.read(tr.LINK))
tr.init_state()
st.title("Translate: the whole Transformer")
st.markdown(
    "The original Transformer is an **encoder-decoder**. The encoder reads the whole input; the decoder writes the "
    "output one token at a time, reading what it has written so far (**masked self-attention**) and the encoder's "
    "output (**cross-attention**). Here a small one, trained in this repository, turns spelled-out English dates "
    "into ISO dates, one character per step; we know which words each character comes from, so the "
    "cross-attention can be checked, not only shown.")
choice = tr.choose_model()  # the whole width: in a column at 1024 px the box cut its value ("Date translator, tr…")
beam = tr.beam_control(tr.is_date_model(choice))
source, target = tr.source_controls(tr.is_date_model(choice))
view = tr.view_or_none(choice, source, target, beam)
where = None
if view is not None:
    tr.show_output(view)
    layer, enc_layer, head = tr.layers_and_head(view.run)
steps_tab, attention_tab, alignment_tab, train_tab = st.tabs(
    ["Decoding, step by step", "The three attentions", "Alignment per head", "Train from scratch"])
if view is not None:
    with steps_tab:
        views.show_steps(view, layer, head)
        step = int(st.session_state[tr.K["step"]])
    with attention_tab:
        views.show_attentions(view, layer, enc_layer, head)
    with alignment_tab:
        views.show_alignment(view, layer, head)
    where = (step, layer, enc_layer, head)
with train_tab:
    training.panel()
if view is not None:
    tr.download(view)
url_state.write(tr.url_params(choice, source, target, beam, view, where))
