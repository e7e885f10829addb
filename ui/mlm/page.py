"""Streamlit side of the pre-training page's masked words (/fill-mask): its model choice, cached computations and
callbacks.

The page has its own model and sentence (a masked-LM and a sentence with [MASK]); the device comes
from the shared sidebar. Models come from ``ui.state.get_model`` (one per server, read-only).
"""

from __future__ import annotations

import streamlit as st
import torch

from ui.feedback import or_none
from ui.state import get_model
from vizcore.errors import VizError
from vizcore.mlm.fill_mask import FillMaskResult, FillStep, Word, fill_iteratively, fill_mask, mask_word, maskable_words
from vizcore.mlm.masking import ordinary_token_ids
from vizcore.mlm.masking_demo import MaskingDraw, MaskingRates, draw_masking, measure_rates
from vizcore.mlm.tuned_lens import card_metrics
from vizcore.model.catalog import BUILTIN_MODELS, FILL_MASK_MODELS, MLM_MODEL, base_mlm_weights, fill_mask_model
from vizcore.model.loading import LoadedModel

DEFAULT_TEXT = "The capital of France is [MASK]."
DEFAULT_RULE_TEXT = "The quick brown fox jumps over the lazy dog while the old cat sleeps in the warm sun."
OTHER_MODEL = "Other: hub id or local folder…"
HUB_CHOICES = ("bert-base-uncased", "distilbert-base-uncased", "roberta-base")
KEY_MODEL_CHOICE = "fill_mask.model_choice"
KEY_MODEL_OTHER = "fill_mask.model_other"
KEY_TEXT = "fill_mask.text"
KEY_SEED = "fill_mask.seed"
# (button label, sentence): the probes and a two-mask sentence for iterative filling.
EXAMPLES = [
    ("France", "The capital of France is [MASK]."),
    ("The cat sat…", "The cat sat on the [MASK]."),
    ("A cup of…", "She drank a cup of [MASK] every morning."),
    ("Two masks", "The [MASK] sat on the [MASK] and fell asleep."),
]


def mlm_choices() -> tuple[str, ...]:
    """The model list: the built-in masked-LM that answers by default first (the base-size one when it is installed,
    ``vizcore.model.catalog.fill_mask_model``), the other built-in one when it can load, the hub's, then "Other"."""
    first = fill_mask_model()
    builtins = [first] + [name for name in FILL_MASK_MODELS if name != first and BUILTIN_MODELS[name].installed()
                          and (name == MLM_MODEL or base_mlm_weights().is_file())]
    return (*builtins, *HUB_CHOICES, OTHER_MODEL)


def model_from_link(raw: str) -> str:
    """The link's ``mlm``: a listed model, or another one this server can load (for the "Other" box); a ValueError,
    said as the link's value that was not used, for a name it cannot (its configuration is read to know)."""
    name = raw.strip()
    if name and name not in mlm_choices():
        from vizcore.model.loading import model_shape

        try:
            model_shape(name)
        except VizError as error:
            raise ValueError(f"{error} The page opened with {fill_mask_model()}.") from error
        st.session_state[KEY_MODEL_OTHER] = name
        return OTHER_MODEL
    return name or fill_mask_model()


def model_name() -> str:
    state = st.session_state
    choice = state.get(KEY_MODEL_CHOICE, fill_mask_model())
    return (state.get(KEY_MODEL_OTHER) or "").strip() if choice == OTHER_MODEL else choice


def mlm_or_none(name: str, device: str) -> LoadedModel | None:
    """The masked-LM, or a clear error on the page (the sentence stays as it is, the next section shows)."""
    return or_none(get_model, name, device, "mlm")


@st.cache_data(show_spinner="Predicting the masked words…", max_entries=32)
def get_fill(name: str, device: str, text: str, top_k: int, lenses: bool) -> FillMaskResult:
    """``lenses``: the logit and tuned lenses too, for the layer-by-layer tab only. They read the MLM head at every
    layer: a fifth of the page's CPU for a class arriving on the Predictions tab (py-spy, bench.classroom)."""
    return fill_mask(get_model(name, device, "mlm"), text, top_k=top_k, lens_top_k=5, lenses=lenses)


@st.cache_data(max_entries=1)
def get_lens_card() -> dict | None:
    """What the tuned lens measured on held-out text (its card's numbers), or None when there is no file."""
    return card_metrics()


@st.cache_data(show_spinner="Filling the masks one at a time…", max_entries=32)
def get_iterative(name: str, device: str, text: str) -> list[FillStep]:
    return fill_iteratively(get_model(name, device, "mlm"), text)


@st.cache_data(max_entries=32)
def get_words(name: str, device: str, text: str) -> list[Word]:
    return maskable_words(get_model(name, device, "mlm"), text)


@st.cache_data(max_entries=8)
def get_replacement_ids(name: str, device: str) -> torch.Tensor:
    return ordinary_token_ids(get_model(name, device, "mlm").tokenizer)


@st.cache_data(max_entries=32)
def get_draw(name: str, device: str, text: str, seed: int) -> MaskingDraw:
    loaded = get_model(name, device, "mlm")
    return draw_masking(loaded.tokenizer, text, seed, get_replacement_ids(name, device))


@st.cache_data(show_spinner="Drawing the masks many times…", max_entries=16)
def get_rates(name: str, device: str, text: str, draws: int, seed: int) -> MaskingRates:
    loaded = get_model(name, device, "mlm")
    return measure_rates(loaded.tokenizer, text, draws, seed, get_replacement_ids(name, device))


def set_text(text: str) -> None:
    """Callback (runs before the widgets are drawn, so it may set the text area)."""
    st.session_state[KEY_TEXT] = text


def mask_clicked_word(word: Word) -> None:
    try:
        st.session_state[KEY_TEXT] = mask_word(st.session_state.get(KEY_TEXT, ""), word)
    except VizError as error:
        st.session_state["fill_mask.click_error"] = str(error)


def next_seed() -> None:
    st.session_state[KEY_SEED] = int(st.session_state.get(KEY_SEED, 0)) + 1
