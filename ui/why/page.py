"""Streamlit side of the Why? page: which masked-LM and sentence it explains, the session's classifier,
the part on screen, and the page's URL state.

The page explains the sidebar's sentence with the sidebar's model when that model has a masked-LM
head, else with the offline masked-LM trained here (and says so). A sentence without ``[MASK]`` gets
a word picker: the chosen word is masked. What the parts explain by default is the model's own answer
there (its most probable word at the mask), not the word that was masked: the model may well disagree
with the sentence, and explaining a word it gives 0.1 % would explain little. A word typed by the user,
or a link's, replaces it. The fine-tuned classifier,
when this session trained one in the Fine-tuning lab, is explained on the unmasked sentence.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from ui import url_state
from ui.feedback import or_stop, plain
from ui.finetune import training
from ui.state import Selection, get_model, segmented_choice, selection, warn_if_too_long
from vizcore.errors import VizError
from vizcore.finetune.datasets import TrainTestData
from vizcore.finetune.training import FinetuneResult
from vizcore.mlm.fill_mask import TYPED_MASK, mask_word, maskable_words
from vizcore.model.catalog import BUILTIN_MODELS, fill_mask_model
from vizcore.model.loading import LoadedModel
from vizcore.why.targets import top_answer

PARTS = {
    "ablation": "Switch heads off",
    "importance": "Head importance",
    "patching": "Activation patching",
    "attribution": "Token attribution",
    "attention": "Attention attribution",
    "circuits": "Weight circuits",
}
KEY_PART = "why.part"
KEY_WORD = "why.word"  # the word of the sidebar's sentence that is masked (its text)


@dataclass(frozen=True)
class Classifier:
    """This session's fine-tuned classifier (Fine-tuning lab) and its held-out set."""

    result: FinetuneResult
    data: TrainTestData
    base: LoadedModel  # the shared model it was fine-tuned from (its tokenizer, its name)


@dataclass(frozen=True)
class WhyContext:
    model: str  # the masked-LM explained
    device: str
    loaded: LoadedModel  # with its masked-LM head; shared and read-only
    sentence: str  # the sidebar's sentence, unmasked when a word was picked (what a classifier reads)
    masked: str | None  # the sentence with [MASK] (None for a part that does not explain the sidebar's sentence)
    masked_word: str | None  # the word that was masked, None when typed with [MASK]
    answer: str | None  # the model's own answer at the (first) mask: what is explained by default
    classifier: Classifier | None


def has_mlm_head(name: str) -> bool:
    """Whether ``name`` loads with a masked-LM head: known for built-ins; tried once per session for others."""
    if name in BUILTIN_MODELS:
        return "mlm" in BUILTIN_MODELS[name].heads
    known = st.session_state.setdefault("why.mlm_heads", {})
    if name not in known:
        try:
            get_model(name, selection().device, "mlm")
            known[name] = True
        except VizError:
            known[name] = False
    return known[name]


def masked_model(sel: Selection) -> tuple[str, str]:
    """(model name, note): the sidebar's model when it is a masked-LM, else the offline masked-LM."""
    if sel.model and has_mlm_head(sel.model):
        return sel.model, ""
    why_not = ("has no masked-LM head" if sel.model in BUILTIN_MODELS else
               "could not be loaded with a masked-LM head (not a masked-LM, or not reachable offline)")
    answering = fill_mask_model()
    return answering, (f"The sidebar's model `{sel.model}` {why_not}, so this page explains "
                       f"**{answering}** ({BUILTIN_MODELS[answering].label}), a masked-LM trained here.")


def session_classifier() -> Classifier | None:
    job = training.current_job()
    if job is None or not job.finished or job.result is None or job.task.name != "sentence":
        return None  # the other tasks' models read pairs, tag words or find spans: not one sentence's class
    return Classifier(result=job.result, data=job.data, base=job.loaded)


def pick_mask(loaded: LoadedModel, text: str) -> tuple[str, str | None]:
    """The sentence to explain: as typed when it has a mask, else with the word picked here masked."""
    if TYPED_MASK.search(text):
        return text, None
    words = maskable_words(loaded, text)
    if not words:
        raise VizError("The sentence has no word to mask: type a sentence in the sidebar.")
    labels = [w.text for w in words]
    url_state.settle_choice(KEY_WORD, labels, labels[-1])
    choice = st.selectbox("Word to mask (the model must predict it)", labels, key=KEY_WORD,
                          help="The sidebar's sentence has no [MASK]: pick the word the masked-LM should "
                               "predict, or type [MASK] into the sentence.")
    word = words[labels.index(choice)]
    return mask_word(text, word), word.text


@st.cache_data(show_spinner=False, max_entries=64)
def get_answer(name: str, device: str, masked: str) -> str | None:
    return top_answer(get_model(name, device, "mlm"), masked)


def context(needs_mask: bool = True) -> WhyContext:
    """The model, sentence and classifier of the page; ``needs_mask``: the part explains the sidebar's sentence
    at a mask (ablation, attribution), so the word picker is drawn."""
    sel = selection()
    name, note = masked_model(sel)
    loaded = or_stop(get_model, name, sel.device, "mlm")
    if note:
        st.caption(note)
    masked, word = or_stop(pick_mask, loaded, sel.text) if needs_mask else (None, None)
    if needs_mask:
        warn_if_too_long(loaded, masked, what="The sentence")
    sentence = sel.text if word is not None or masked is None else TYPED_MASK.sub(loaded.tokenizer.mask_token, sel.text)
    answer = or_stop(get_answer, name, sel.device, masked) if masked is not None else None
    return WhyContext(model=name, device=sel.device, loaded=loaded, sentence=sentence, masked=masked,
                      masked_word=word, answer=answer, classifier=session_classifier())


def followed_word(ctx: WhyContext, key: str, label: str, help: str, where=st) -> str | None:
    """A text input for one word of the vocabulary that starts as the model's own answer at the mask and
    follows it (another sentence or picked word, another answer) until the user types another word, which
    is returned as typed (its error is theirs to see); a link sets it as if typed. Empty: None."""
    for_key = f"{key}_for"
    previous = st.session_state.get(for_key)
    untouched = st.session_state.get(key) == (previous or "")
    if key not in st.session_state or (previous != ctx.answer and untouched):
        st.session_state[key] = ctx.answer or ""
    st.session_state[for_key] = ctx.answer
    return where.text_input(label, key=key, help=help).strip() or None


def answer_note(ctx: WhyContext) -> str:
    """The note " · the model's answer: **long** (the masked word: tired)" for the line with the sentence."""
    if ctx.answer is None:
        return ""
    masked = (f" (the masked word: {plain(ctx.masked_word)})" if ctx.masked_word and ctx.masked_word != ctx.answer
              else "")
    return f" · the model's answer: **{plain(ctx.answer)}**{masked}"


# What a part explains: the masked-LM's answer, or a fine-tuned classifier's class when one is trained
EXPLAIN = {"answer": "the masked-LM's answer", "class": "the fine-tuned classifier's class"}


def choose_explain(ctx: WhyContext, key: str) -> str:
    """``answer`` or ``class`` (the choice kept under ``key``); ``answer`` while no classifier is trained."""
    if ctx.classifier is None:
        st.caption("Train a classifier in the Fine-tuning lab to explain its class here too.")
        return "answer"
    if st.session_state.get(key) not in EXPLAIN:
        st.session_state[key] = "answer"
    return st.radio("Explain", list(EXPLAIN), key=key, format_func=EXPLAIN.get, horizontal=True)


def choose_class(classifier: Classifier, sentence: str, key: str) -> int:
    """The classifier's class a part explains, kept under ``key``: by default the one it predicts for ``sentence``
    (a link's explain=class&output=NAME sets the key first)."""
    from vizcore.finetune.classify import predict_proba

    result = classifier.result
    names = list(result.label_names)
    probs = predict_proba(result.classifier, result.tokenizer, [sentence], result.config.max_length)[0]
    if st.session_state.get(key) not in names:
        st.session_state[key] = names[int(probs.argmax())]
    shown = {name: f"{name} ({p:.1%})" for name, p in zip(names, probs)}
    return names.index(st.selectbox("Class (its probability on the sidebar's sentence)", names, key=key,
                                    format_func=shown.get))


def choose_part() -> str:
    return segmented_choice("Question", PARTS, KEY_PART, "ablation")
