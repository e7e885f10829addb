"""The pre-training page's second section: next sentence prediction (IsNext / NotNext) for a pair.

The pair is the sidebar's sentence and second sentence when it has one (and follows it when it
changes); otherwise the user types A and B here, or clicks one of the tutorials' examples. A link
carries the pair (``nsp_a``, ``nsp_b``, only when it is not the sidebar's) and the model (``nsp_model``).

Computation: vizcore/mlm/nsp.py · figures: vizcore/mlm/figures.py (NSP section) · CLI: python -m vizcore nsp
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import plotly.graph_objects as go
import streamlit as st

from ui import url_state
from ui.feedback import CHART, or_none
from ui.layer_head import layer_head
from ui.layout import for_screen
from ui.state import get_model, selection
from vizcore.mlm.figures import cls_attention_bars, cls_share_heatmaps, examples_table, is_next_gauge, percent
from vizcore.mlm.nsp import EXAMPLES, NextSentence, check_pair, next_sentence, summary_line
from vizcore.model.catalog import NSP_LABEL, NSP_MODEL

NSP_CHOICES = (NSP_MODEL, "bert-base-uncased")
KEY_MODEL = "fill_mask.nsp_model"
KEY_A = "fill_mask.nsp_a"
KEY_B = "fill_mask.nsp_b"
KEY_SIDEBAR_SEEN = "fill_mask.nsp_sidebar_seen"  # the sidebar's (text, pair) last adopted
KEY_LAYER = "fill_mask.nsp_layer"
KEY_HEAD = "fill_mask.nsp_head"
URL_A, URL_B, URL_MODEL = "nsp_a", "nsp_b", "nsp_model"
URL_PARAMS = {URL_A: (KEY_A, url_state.Text()), URL_B: (KEY_B, url_state.Text()),
              URL_MODEL: (KEY_MODEL, url_state.OneOf(NSP_CHOICES))}


SHARE_TITLE = "Where [CLS] looks, every layer and head"


@dataclass(frozen=True)
class Reading:
    """A pair's answer and the section's figures that depend on nothing else."""

    result: NextSentence
    gauge: go.Figure
    share: go.Figure


@st.cache_resource(show_spinner="Reading the pair…", max_entries=32)
def get_reading(name: str, device: str, text: str, pair: str) -> Reading:
    """One per pair for the whole server, read-only (``for_screen`` draws a copy for the projector). A class opens
    the page on the same example pair, and building the figures cost more than the rest of the section: the [CLS]
    shares' three grids alone were a sixth of the page's CPU (py-spy of ``bench.classroom``'s fill-mask wave)."""
    check_pair(text, pair)  # a missing B is said before a model is loaded
    result = next_sentence(get_model(name, device, "nsp"), text, pair)
    answer = "IsNext" if result.is_next >= 0.5 else "NotNext"
    return Reading(result, is_next_gauge(result.is_next, f"{result.model}: {answer}"),
                   cls_share_heatmaps(result, SHARE_TITLE))


@st.cache_resource(show_spinner=False, max_entries=64)
def get_bars(name: str, device: str, text: str, pair: str, layer: int, head: int) -> go.Figure:
    """One head's [CLS] row (1-based ``layer``, ``head``) of the pair's reading, as ``get_reading``'s figures."""
    result = get_reading(name, device, text, pair).result
    return cls_attention_bars(result, layer - 1, head - 1, f"[CLS]'s attention · layer {layer}, head {head}")


@st.cache_data(show_spinner="Scoring the examples…", max_entries=8)
def get_examples(name: str, device: str) -> list[float]:
    """P(IsNext) of each of ``EXAMPLES``, in order."""
    loaded = get_model(name, device, "nsp")
    return [next_sentence(loaded, a, b).is_next for a, b, _ in EXAMPLES]


def prepare() -> None:
    """Before any widget: the pair from a link (once a session), else from the sidebar when its pair
    is new, else the first example."""
    state = st.session_state
    sel = selection()
    sidebar = (sel.text, sel.pair)
    linked = state.get(url_state.LINKED, {})
    if KEY_A in linked or KEY_B in linked:  # the page's first run on a link with its own pair (read just before)
        for key in (KEY_A, KEY_B):
            linked.pop(key, None)
            state.setdefault(key, "")
        state[KEY_SIDEBAR_SEEN] = sidebar  # the link's own pair wins over the sidebar's
    if sel.pair and state.get(KEY_SIDEBAR_SEEN) != sidebar:
        state[KEY_A], state[KEY_B] = sel.text, sel.pair
    state[KEY_SIDEBAR_SEEN] = sidebar
    state.setdefault(KEY_A, EXAMPLES[0][0])
    state.setdefault(KEY_B, EXAMPLES[0][1])


def url_params() -> dict[str, str | None]:
    """This section's part of the link: the pair unless ``prepare`` would find it anyway (the sidebar's, or
    the first example when the sidebar has none), the model when not the default."""
    state, sel = st.session_state, selection()
    pair = (state.get(KEY_A, ""), state.get(KEY_B, ""))
    own = pair != ((sel.text, sel.pair) if sel.pair else EXAMPLES[0][:2])
    model = state.get(KEY_MODEL, NSP_MODEL)
    return {URL_A: pair[0] if own else None, URL_B: pair[1] if own else None,
            URL_MODEL: model if model != NSP_MODEL else None}


def set_pair(text: str, pair: str) -> None:
    """Callback (runs before the widgets are drawn, so it may set the text inputs)."""
    st.session_state[KEY_A], st.session_state[KEY_B] = text, pair


def example_label(index: int) -> str:
    _, pair, expected = EXAMPLES[index]
    return f"{pair if len(pair) <= 30 else pair[:28] + '…'} ({expected})"


def pair_controls() -> tuple[str, str, str]:
    """The model, the example buttons and the two sentences; returns (model, A, B)."""
    name = st.selectbox("Model with a next-sentence head", NSP_CHOICES, key=KEY_MODEL,
                        format_func=lambda n: f"{n} ({NSP_LABEL}: offline)" if n == NSP_MODEL else
                        f"{n} (the original BERT; hub: needs internet or a cache)")
    st.caption(summary_line() if name == NSP_MODEL else
               "`bert-base-uncased`: Google's BERT, pre-trained with both tasks on BooksCorpus and Wikipedia.")
    st.markdown("**The tutorials' examples** (hover for the pair):")
    with st.container(horizontal=True):
        for i, (text, pair, _) in enumerate(EXAMPLES):
            st.button(example_label(i), key=f"fill_mask.nsp_example{i}", help=f"A: {text}  \nB: {pair}",
                      on_click=set_pair, args=(text, pair))
    left, right = st.columns(2)
    text = left.text_input("Sentence A", key=KEY_A)
    pair = right.text_input("Sentence B (does it follow A?)", key=KEY_B)
    sel = selection()
    if sel.pair and (text, pair) == (sel.text, sel.pair):
        st.caption("This is the sidebar's sentence pair; edit it here or there.")
    return name, text, pair


def show_answer(reading: Reading, name: str, device: str) -> None:
    """The gauge beside the examples' table."""
    result = reading.result
    if result.truncation_note:
        st.warning(result.truncation_note)
    left, right = st.columns([2, 3])
    left.plotly_chart(for_screen(reading.gauge), key="fill_mask.nsp_gauge", config=CHART)
    left.caption(f"P(IsNext) = {result.is_next:.4f}, P(NotNext) = {1 - result.is_next:.4f} "
                 f"(logits {result.logits[0]:.3f} and {result.logits[1]:.3f}).")
    probabilities = or_none(get_examples, name, device)
    if probabilities is not None:
        table = examples_table([(a, b, e, p) for (a, b, e), p in zip(EXAMPLES, probabilities)])
        right.markdown("**The examples with this model**")
        right.dataframe(table.assign(**{"P(IsNext)": table["P(IsNext)"].map(percent)}), hide_index=True,
                        column_order=("P(IsNext)", "model says", "expected", "sentence B", "sentence A"),
                        key="fill_mask.nsp_examples", width="stretch")
        right.caption(f"{int((table['expected'] == table['model says']).sum())} of {len(table)} as the "
                      "tutorials label them. Real pairs are seldom this clear-cut.")
    st.markdown("Tokens: " + " ".join(f"`{t.replace('`', 'ˋ')}`" for t in result.tokens)
                + " (segment A up to the first [SEP], then B)")


def show_cls_attention(reading: Reading, name: str, device: str, text: str, pair: str) -> None:
    """Every head's [CLS] row as shares of A / B / specials, then one head's row token by token."""
    st.markdown("The head reads only the [CLS] token's last hidden state, so whatever it knows of A and B "
                "reached [CLS] through attention. Where does each head's [CLS] row look?")
    st.plotly_chart(for_screen(reading.share), key="fill_mask.nsp_share", config=CHART)
    layers, heads = reading.result.share["A"].shape
    # Starts on the last layer, not the house default: the next-sentence head reads [CLS] after the last layer.
    layer, head = layer_head(layers, heads, (KEY_LAYER, KEY_HEAD), default=(layers, 1))
    st.plotly_chart(for_screen(get_bars(name, device, text, pair, layer, head)), key="fill_mask.nsp_bars",
                    config=CHART)
    st.caption("Each head's [CLS] row sums to 1: the three grids add up to 100 % per cell. Hover for the values. "
               "Layers and heads count from 1.")


def show_section(device: str) -> None:
    st.markdown(
        "BERT's second pre-training task: given two sentences, does B really follow A? The pair is read as "
        "**[CLS] A [SEP] B [SEP]** (B's tokens get segment 1). The [CLS] token's last hidden state goes through "
        "the *pooler* (Linear + tanh) and a Linear layer to two logits; softmax gives **IsNext** and "
        "**NotNext**. BERT trained on pairs that were, half the time, the real next sentence and otherwise a "
        "sentence from another document.")
    name, text, pair = pair_controls()
    reading = or_none(get_reading, name, device, text, pair)
    if reading is None:
        return
    show_answer(reading, name, device)
    show_cls_attention(reading, name, device, text, pair)
    st.download_button("Download the result (JSON)",
                       json.dumps(reading.result.to_dict(), ensure_ascii=False, indent=1),
                       file_name="next-sentence.json", mime="application/json", key="fill_mask.nsp_download")
