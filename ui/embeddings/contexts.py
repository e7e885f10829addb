"""The Embeddings page's "one word, many contexts": the word's vector in each sentence, compared layer by layer.

Computation: vizcore/embeddings/contexts.py · figures: vizcore/embeddings/figures.py
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from ui import url_state
from ui.embeddings import page as emb
from ui.feedback import CHART, or_none
from ui.layout import for_screen
from ui.state import get_model, selection
from vizcore.embeddings.contexts import (
    CONTEXT_SETS,
    MAX_CONTEXTS,
    SENSE_MARK,
    WordInContexts,
    parse_contexts,
    state_label,
    word_in_contexts,
)
from vizcore.embeddings.figures import context_lines, cosine_heatmap
from vizcore.inside.steps import input_sum
from vizcore.model.loading import LoadedModel

KEY_WORD = "embeddings.ctx.word"
KEY_LINES = "embeddings.ctx.lines"
KEY_STATE = "embeddings.ctx.state"  # hidden state of the heatmap: 0 = embeddings, i = layer i
# at: 0 = the embeddings, then the model's layers (its top checked where the slider is drawn)
URL_PARAMS = {"word": (KEY_WORD, url_state.Text()), "contexts": (KEY_LINES, url_state.Text()),
              "at": (KEY_STATE, url_state.Integer(0))}


def as_lines(word: str) -> str:
    return "\n".join(f"{c.sentence} {SENSE_MARK} {c.sense}" for c in CONTEXT_SETS[word].contexts)


def use_set(word: str) -> None:
    st.session_state[KEY_WORD] = word
    st.session_state[KEY_LINES] = as_lines(word)


@st.cache_data(show_spinner="Running the model on each sentence…", max_entries=32)
def compute(name: str, device: str, word: str, lines: str) -> WordInContexts:
    return word_in_contexts(get_model(name, device), word, parse_contexts(lines))


def inputs() -> tuple[str, str]:
    first = next(iter(CONTEXT_SETS))
    st.session_state.setdefault(KEY_WORD, first)
    st.session_state.setdefault(KEY_LINES, as_lines(first))
    with st.container(horizontal=True):
        for word, example in CONTEXT_SETS.items():
            st.button(example.title, key=f"embeddings.ctx.set_{word}", on_click=use_set, args=(word,))
    left, right = st.columns([1, 4])
    word = left.text_input("Word", key=KEY_WORD)
    lines = right.text_area(f"Sentences with the word, one per line (2 to {MAX_CONTEXTS}); a sense after "
                            f"'{SENSE_MARK}' is optional", key=KEY_LINES, height=190)
    return word, lines


def pieces_table(result: WordInContexts) -> pd.DataFrame:
    last = result.cosines()[-1]
    others = np.where(np.eye(len(last), dtype=bool), -np.inf, last)
    return pd.DataFrame({"#": range(1, len(result.contexts) + 1),
                         "sentence": [c.sentence for c in result.contexts],
                         "sense": [c.sense for c in result.contexts],
                         "word pieces": [" ".join(p) for p in result.pieces],
                         f"closest at {state_label(result.num_states - 1)}": [
                             f"{j + 1} ({last[i, j]:.3f})" for i, j in enumerate(others.argmax(1))]})


def summary(result: WordInContexts) -> None:
    """Mean cosine of same-sense pairs vs different-sense pairs at the input, the top, and where they differ most."""
    means = result.sense_means()
    if len(means) < 2:
        return
    same, different = means["same sense"], means["different senses"]
    gap = same - different
    widest, top = int(gap.argmax()), len(gap) - 1
    st.markdown("**Mean cosine: same-sense pairs vs different-sense pairs**")
    columns = st.columns(2)  # two numbers a metric: three columns cut them to "0.971 vs 0.9…" at 1024 px
    columns[0].metric(state_label(0), f"{same[0]:.3f} vs {different[0]:.3f}")
    columns[1].metric(state_label(top), f"{same[top]:.3f} vs {different[top]:.3f}")
    st.markdown(f"The gap is widest at **{state_label(widest)}**: {gap[widest]:.3f}.")


def heatmap(result: WordInContexts) -> int:
    """The cosines at one hidden state, chosen with a slider; returns that state."""
    top = result.num_states - 1
    state = emb.state_slider(KEY_STATE, "Cosines at", top)
    cos = result.cosines()
    labels = [f"{n}" + (f" {c.sense}" if c.sense else "") for n, c in enumerate(result.contexts, 1)]
    low = float(np.floor(cos.min() * 10) / 10)
    st.plotly_chart(for_screen(cosine_heatmap(cos[state], labels,
                                              f"'{result.word}' at {state_label(state)}: cosine between "
                                              "sentences", hover=[f"{n}. {c.sentence}" for n,
                                                                  c in enumerate(result.contexts, 1)],
                                              zrange=(low, 1.0))),
                    key="embeddings.ctx.heatmap", config=CHART)
    st.caption(f"The colours span {low:.1f} to 1 at every layer, so layers can be compared by eye.")
    return int(state)


def show(loaded: LoadedModel) -> dict:
    st.markdown("A static word vector (word2vec, GloVe) is the same in every sentence. BERT's is not: follow one "
                "word through the layers and compare its vectors across sentences. **Same-sense** pairs should stay "
                "closer than **different-sense** pairs as the layers mix in the context.")
    word, lines = inputs()
    params = {"word": word.strip(), "contexts": lines.strip()}
    sel = selection()
    result = or_none(compute, sel.model, sel.device, word, lines)
    if result is None:
        return params
    summary(result)
    st.plotly_chart(for_screen(context_lines(result)), key="embeddings.ctx.lines_chart", config=CHART)
    parts = or_none(lambda: input_sum(get_model(sel.model, sel.device))) or "token + position"
    st.caption("The word's vector in a sentence is the **mean of its word pieces** at that layer (a word split "
               f"into pieces, e.g. river + ##bank, is averaged); *embeddings* is the input layer ({parts} "
               "embeddings, as this model adds them, before any attention); the first whole-word occurrence in each "
               "sentence is used. Raw cosines of BERT vectors are high for any two tokens, so read the gap between "
               "the green (solid, same sense) and orange (dotted, different senses) lines, not their level.")
    params["at"] = heatmap(result)
    st.dataframe(pieces_table(result), hide_index=True, key="embeddings.ctx.table")
    return params
