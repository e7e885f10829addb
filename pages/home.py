"""Home: what the app is, example sentences, and the attention heatmap of the current sentence.

Computation: vizcore/attention/extract.py (the core: vizcore/model/run.py) · view: vizcore/static/attention_view.js
(ui/attention_component.py) ·
CLI: python -m vizcore attention (vizcore/attention/cli.py)
UI: the shared modules only (ui/state.py for the run, ui/attention_component.py for the view); the Explorer's
package is ui/attention/
"""

import streamlit as st

from ui import layer_head, url_state
from ui.attention_component import attention_view
from ui.state import attention_or_stop, selection, set_sentence, warn_if_truncated
from vizcore.attention.examples import EXAMPLES

st.title("See inside BERT-style Transformers")
st.markdown(
    "Type a sentence in the sidebar (or pick an example) and watch where each word looks. "
    "Every number here is the model's own: a real pretrained encoder runs on your machine, offline."
)

st.markdown("**Try an example** (hover a button for the full sentence). The first two differ in one "
            "word: compare where *it* looks in each.")
with st.container(horizontal=True, wrap=True):  # each button as wide as its label: on a narrow screen they wrap
    for i, (label, text, pair) in enumerate(EXAMPLES):
        full = f"{text}  ⟷  {pair}" if pair else text
        st.button(label, key=f"home.example{i}", help=full, on_click=set_sentence, args=(text, pair), width="content")

sel = selection()
result = attention_or_stop(sel)
warn_if_truncated(result)
url_state.warn(url_state.read(layer_head.HOME_LINK))
layer, head = layer_head.settle(result.num_layers, result.num_heads)
attention_view(result, key="home.view", keys={"layer": layer_head.KEY_LAYER, "head": layer_head.KEY_HEAD},
               layer=layer, head=head)
url_state.write({"layer": layer, "head": head})
st.caption(
    "Each row is a query token and shows how it spreads its attention (the row sums to 1) over the "
    "key tokens in the columns. Hover a cell for the exact weight. Click the view and use the arrow keys: "
    "left/right change the head, up/down the layer. Layers and heads count from 1."
)
