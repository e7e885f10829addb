"""The Why? page's attribution part: which input tokens the answer (or the classifier's class) depends on.

Computation: vizcore/why/attribution.py · figures: vizcore/why/figures.py (attribution section) ·
CLI: python -m vizcore attribute. The masked-LM's results are cached for the server; the session's
classifier is this session's own, so its last result is kept in the session.
"""

from __future__ import annotations

import json

import streamlit as st

from ui import url_state
from ui.feedback import CHART, or_stop
from ui.layout import for_screen
from ui.state import get_model
from ui.why import page as why
from ui.why.page import Classifier, WhyContext
from vizcore.plot import display_tokens
from vizcore.why.attribution import (
    BASELINE,
    DEFAULT_STEPS,
    MAX_STEPS,
    METHODS,
    Attribution,
    answer_target,
    attribute,
    class_target,
    to_dict,
)
from vizcore.why.figures import attribution_bars, attribution_text, method_correlation_heatmap

KEY_EXPLAIN = "why.attribution.explain"  # "answer" | "class"
KEY_ANSWER = "why.attribution.answer"
KEY_CLASS = "why.attribution.class"
KEY_STEPS = "why.attribution.steps"
KEY_LAST_CLASS = "why.attribution.last_class"  # (key, Attribution) of the session's classifier
KEY_LINK_TARGET = "why.attribution.link_target"  # a link's output= (answer or class), applied once its kind is known


# ``output`` is the answer word, or the class name with explain=class (patching has its own ``answer``,
# head importance its own ``target``).
URL_PARAMS = {"explain": (KEY_EXPLAIN, url_state.OneOf(tuple(why.EXPLAIN))),
              "output": (KEY_LINK_TARGET, url_state.Text()),
              "steps": (KEY_STEPS, url_state.Integer(1, MAX_STEPS))}


def show(ctx: WhyContext) -> dict:
    """Draw the part; returns its URL parameters."""
    st.markdown(
        "Four ways to say which input tokens an output depends on. **Gradients** ask how fast the output "
        "would change if a token's embedding were scaled; **integrated gradients** add those changes up along "
        "a path from a baseline, so that they sum to the whole change of the output; **occlusion** removes "
        "each token and runs the model again; **attention rollout** follows attention weights alone through "
        "the layers. Where rollout disagrees with the others, attention is not the explanation.")
    explain = why.choose_explain(ctx, KEY_EXPLAIN)
    link = st.session_state.pop(KEY_LINK_TARGET, None)
    if link is not None:
        st.session_state[KEY_CLASS if explain == "class" else KEY_ANSWER] = link
    url_state.settle(KEY_STEPS, DEFAULT_STEPS, 1, MAX_STEPS)
    steps = st.slider("Integrated gradients: steps on the path", 1, MAX_STEPS, key=KEY_STEPS,
                      help=f"Points of the path integral (Gauss-Legendre). {DEFAULT_STEPS} keep the completeness "
                           "gap under 1 % on the example sentences; raise them when the gap below is larger.")
    if explain == "class":
        label = why.choose_class(ctx.classifier, ctx.sentence, KEY_CLASS)
        result = or_stop(_class_attribution, ctx.classifier, ctx.sentence, label, steps)
    else:
        answer = _choose_answer(ctx)
        result = or_stop(_answer_attribution, ctx.model, ctx.device, ctx.masked, answer, steps)
    _show_result(result, ctx, explain)
    return {"explain": "class" if explain == "class" else None,
            "output": result.token if explain == "class" else answer, "steps": steps}


def _choose_answer(ctx: WhyContext) -> str | None:
    """The word explained at the mask: by default the model's own answer (it follows the sentence and the
    picker until another word is typed, as on the ablation part); empty = the top prediction (None)."""
    return why.followed_word(ctx, KEY_ANSWER, "Answer (one token; empty = the model's top prediction)",
                             help="Default: the model's own answer, its most probable word at the mask. Type "
                                  "another word (the one masked, say) to explain that one.")



@st.cache_data(show_spinner="Attributing the answer to the input tokens…", max_entries=16)
def _answer_attribution(model: str, device: str, masked: str, answer: str | None, steps: int) -> Attribution:
    return attribute(answer_target(get_model(model, device, "mlm"), masked, answer), steps=steps)


def _class_attribution(classifier: Classifier, sentence: str, label: int, steps: int) -> Attribution:
    key = (sentence, label, steps)
    kept = st.session_state.get(KEY_LAST_CLASS)  # (classifier, key, attribution): the object, not its id()
    if kept is None or kept[0] is not classifier.result.classifier or kept[1] != key:
        with st.spinner("Attributing the class to the input tokens…"):
            kept = (classifier.result.classifier, key,
                    attribute(class_target(classifier.result, sentence, label), steps=steps))
        st.session_state[KEY_LAST_CLASS] = kept
    return kept[2]


def _show_result(result: Attribution, ctx: WhyContext, explain: str) -> None:
    where = (f"at the [MASK] (token {result.mask_index})" if explain == "answer"
             else "for the unmasked sentence")
    st.markdown(f"**f = P({result.token}) {where} = {result.score:.4f}**")
    if explain == "answer" and len([t for t in result.tokens if t == ctx.loaded.tokenizer.mask_token]) > 1:
        st.caption("The sentence has several masks: the first is explained, the others stay masked.")
    _show_completeness(result)
    labelled = {METHODS[m]: values for m, values in result.scores.items()}
    st.subheader("Coloured text")
    st.html(attribution_text(result.tokens, labelled))
    st.caption("Integrated gradients and occlusion give [CLS], [SEP] and the mask 0 (they are never changed); "
               "gradient × input gives them their own products; rollout is a share of attention, never negative, "
               "and much of it goes to [CLS] and [SEP].")
    st.plotly_chart(for_screen(attribution_bars(result.tokens, labelled)), key="why.attribution.bars", config=CHART)
    _show_agreement(result)
    record = to_dict(result, ctx.model if explain == "answer" else ctx.classifier.result.model_name,
                     ctx.masked if explain == "answer" else ctx.sentence)
    st.download_button("Download all methods as JSON", json.dumps(record), file_name="attribution.json",
                       mime="application/json", key="why.attribution.download")


def _show_completeness(result: Attribution) -> None:
    ig = result.integrated
    st.subheader("Completeness of integrated gradients")
    columns = st.columns(4)
    columns[0].metric("Sum of the attributions", f"{ig.total:.5f}")
    columns[1].metric("f(x) − f(baseline)", f"{ig.delta:.5f}", help=f"f(x) = {ig.f_input:.5f}, "
                                                                   f"f(baseline) = {ig.f_baseline:.5f}")
    columns[2].metric("Gap", f"{ig.gap:.2%}", help="|sum − (f(x) − f(baseline))| / |f(x) − f(baseline)|")
    columns[3].metric("Steps", f"{ig.steps}")
    st.caption(f"Baseline: {BASELINE}.")
    if ig.gap > 0.01:
        st.warning(f"The gap is {ig.gap:.1%} at {ig.steps} steps: the path integral is not yet accurate. "
                   "Raise the steps.")


def _show_agreement(result: Attribution) -> None:
    names = [METHODS[m] for m in result.scores]
    st.subheader("Where attention agrees with gradients, and where it does not")
    st.plotly_chart(for_screen(method_correlation_heatmap(result.correlation, names)),
                    key="why.attribution.correlation",
                    config=CHART)
    st.caption(f"Spearman's rank correlation over the {int(result.ordinary.sum())} ordinary tokens "
               "(not [CLS], [SEP] or the mask): +1 = the same order of importance, 0 = unrelated, −1 = reversed.")
    with st.expander("Values as a table"):
        st.dataframe({"token": display_tokens(result.tokens),
                      **{METHODS[m]: values for m, values in result.scores.items()}})
