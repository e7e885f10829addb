"""Attention Explorer: every layer and head of the current sentence, in several views.

Computation: vizcore/attention/ (extract, aggregate, head_stats, exports, html_views) · figures:
vizcore/attention/figures.py, vizcore/plot.py · CLI: attention, head-stats, aggregate (vizcore/attention/cli.py),
sizes (vizcore/sizes/cli.py) · UI: ui/attention/ (page: the cached results, the link, the shared controls; views: one
function per view; side_by_side: model sizes side by side, from vizcore/sizes/);
the in-browser view: ui/attention_component.py (shared with Home)
"""

import streamlit as st

from ui import layer_head, url_state
from ui.attention import page as ua
from ui.attention.side_by_side import show_sizes
from ui.attention.views import show_view
from ui.state import attention_or_stop, selection, warn_if_truncated
from vizcore.attention.aggregate import PAIR_FILTERS, ViewOptions

st.title("Attention Explorer")
st.markdown("Every layer and head of the model, for the sentence in the sidebar. Pick a layer and "
            "head, or open one from the grid. The address bar always holds a link to this exact view.")

sel = selection()
result = attention_or_stop(sel)
url_state.warn(url_state.read(ua.LINK))
layer_head.settle(result.num_layers, result.num_heads)
ua.keep_view_choices()
warn_if_truncated(result)

view = st.radio("View", list(ua.VIEWS), format_func=ua.VIEWS.get, horizontal=True, key=ua.KEY_VIEW)
if view in ua.BROWSER_VIEWS:  # the renderer's own Layer/Head steppers switch in the browser, with no rerun
    layer, head = st.session_state[ua.KEY_LAYER], st.session_state[ua.KEY_HEAD]
else:
    layer, head = layer_head.layer_head(result.num_layers, result.num_heads)
is_pair = bool((result.segment_ids == 1).any())
with st.expander("Tokens shown: pair filter, [CLS]/[SEP], word pieces", expanded=is_pair):
    columns = st.columns(3)
    pair_filter = columns[0].selectbox(
        "Sentence pair", PAIR_FILTERS, key=ua.KEY_PAIR_FILTER, disabled=not is_pair,
        help="A→B: queries in sentence A, keys in sentence B. Weights are the model's own (not renormalised).")
    hide_special = columns[1].toggle(
        "Hide [CLS]/[SEP]", key=ua.KEY_HIDE,
        help="Drops special tokens' rows and columns and renormalises each remaining row to sum to 1.")
    merge_words = columns[2].toggle(
        "Merge word pieces into words", key=ua.KEY_MERGE,
        help="Attention to a word = sum over its pieces; attention from a word = mean over its pieces.")
options = ViewOptions(pair_filter=pair_filter if is_pair else "all", hide_special=hide_special,
                      merge_words=merge_words)

ua.write_url()
show_view(view, result, sel, layer, head, options)
with st.expander("Model sizes side by side: parameters, memory, speed, every head"):
    show_sizes(sel)
