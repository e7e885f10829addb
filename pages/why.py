"""Why? Switch heads off, rank heads, patch activations, attribute the answer to input tokens and to attention
edges, read circuits.

Computation: vizcore/why/ (targets, ablation, importance, patching, attribution_patching, attribution,
attention_attribution), vizcore/circuits/ (weight circuits) · figures: vizcore/why/figures.py,
vizcore/circuits/figures.py · CLI: python -m vizcore ablate | patch | attribution-patching | attribute |
attention-attribution (vizcore/why/cli.py), circuits (vizcore/circuits/cli.py)
UI: ui/why/ (page: the context and the link; ablation, importance, patching, attribution, edges, weights:
one part each)
"""

import streamlit as st

from ui import url_state
from ui.why import ablation, attribution, edges, importance, patching, weights
from ui.why import page as why
from ui.why.link import LINK

st.title("Why did the model say that?")
st.markdown(
    "Attention weights show where a head looks, not what the answer depends on. Test it: **switch heads "
    "off** and watch the answer change, **rank** every head by what removing it costs, **patch** one "
    "activation from another sentence into this one, and **attribute** the answer to the input words "
    "with gradients, left-out words and attention rollout side by side, or to the **attention edges** "
    "themselves.")

url_state.warn(url_state.read(LINK))
part = why.choose_part()
ctx = why.context(needs_mask=part in ("ablation", "attribution", "attention"))
sections = {"ablation": ablation, "importance": importance, "patching": patching, "attribution": attribution,
            "attention": edges, "circuits": weights}
params = sections[part].show(ctx) or {}
url_state.write({"part": part, "word": ctx.masked_word, **params})
