"""The Why? page's first part: switch heads off and watch the answer, a classifier and later attention.

Computation: vizcore/why/ablation.py · figures: vizcore/why/figures.py · CLI: python -m vizcore ablate
"""

from __future__ import annotations

import json

import streamlit as st

from ui import url_state
from ui.feedback import CHART, or_none, or_stop, plain
from ui.layer_head import layer_head
from ui.layout import for_screen
from ui.state import get_model
from ui.why import page as why
from ui.why.page import WhyContext
from vizcore.colours import CHANGE
from vizcore.errors import VizError
from vizcore.finetune.analysis import finetuned_model
from vizcore.mlm.figures import percent
from vizcore.model.loading import LoadedModel
from vizcore.why.ablation import (
    MAX_TOP_K,
    MODES,
    AblationResult,
    ClassifierEffect,
    ablate_classifier,
    ablate_mlm,
    format_heads,
    head_means,
    parse_heads,
)
from vizcore.why.figures import attention_before_after, before_after_bars, class_bars, layer_head_heatmap

KEY_MODE = "why.ablation.mode"
KEY_TOP_K = "why.ablation.top_k"
KEY_WORD = "why.ablation.word"
KEY_LINK_HEADS = "why.ablation.link_heads"  # heads=3:5,4:1 from a link, applied once the model is known
URL_PARAMS = {"heads": (KEY_LINK_HEADS, url_state.Choice()), "mode": (KEY_MODE, url_state.OneOf(tuple(MODES)))}


def layer_key(layer: int) -> str:
    return f"why.ablation.layer{layer}"


def chosen_heads(layers: int) -> list[tuple[int, int]]:
    """The heads ticked in the grid, 0-based (layer, head)."""
    return [(layer, head - 1) for layer in range(layers) for head in st.session_state.get(layer_key(layer)) or []]


def set_heads(heads: list[tuple[int, int]], layers: int) -> None:
    for layer in range(layers):
        st.session_state[layer_key(layer)] = sorted(h + 1 for l_, h in heads if l_ == layer)


def _preset(kind: str, layers: int, heads: int) -> None:
    """Callbacks of the preset buttons (they run before the grid is drawn, so they may set it)."""
    layer = int(st.session_state.get("why.ablation.preset_layer", 1)) - 1
    keep = int(st.session_state.get("why.ablation.preset_head", 1)) - 1
    chosen = {"none": [], "layer": [(layer, h) for h in range(heads)],
              "all_but_one": [(layer, h) for h in range(heads) if h != keep]}[kind]
    set_heads(chosen, layers)


def head_grid(loaded: LoadedModel) -> list[tuple[int, int]]:
    layers, heads = loaded.num_layers, loaded.num_heads
    link = st.session_state.pop(KEY_LINK_HEADS, None)
    if link is not None:
        try:
            set_heads(parse_heads(link, layers, heads), layers)
        except VizError as error:
            st.warning(url_state.problem("heads", link, str(error)))
    st.markdown("**Heads to switch off** (click; numbers are heads, rows are layers)")
    with st.container(horizontal=True, vertical_alignment="bottom"):
        st.number_input("Layer", 1, layers, key="why.ablation.preset_layer", width=110)
        st.button("Whole layer", key="why.ablation.preset_whole", on_click=_preset, args=("layer", layers, heads))
        st.number_input("Keep head", 1, heads, key="why.ablation.preset_head", width=130)
        st.button("All but that head", key="why.ablation.preset_but_one",
                  on_click=_preset, args=("all_but_one", layers, heads))
        st.button("None", key="why.ablation.preset_none", on_click=_preset, args=("none", layers, heads))
    for layer in range(layers):
        label, grid = st.columns([1, 9], vertical_alignment="center")
        label.markdown(f"**Layer {layer + 1}**")
        grid.pills(f"Layer {layer + 1}", list(range(1, heads + 1)), selection_mode="multi", key=layer_key(layer),
                   label_visibility="collapsed")
    return chosen_heads(layers)


@st.cache_resource(show_spinner="Averaging each head's output over the reference sentences…", max_entries=4)
def _means(name: str, device: str):
    return head_means(get_model(name, device, "mlm"))


# cache_resource, as ui.state's runs: the result holds two [L, H, T, T] attention stacks, which cache_data
# would unpickle on every rerun. A result is frozen; the page only reads it.
@st.cache_resource(show_spinner="Running the model with and without those heads…", max_entries=16)
def get_ablation(name: str, device: str, masked: str, heads: tuple[tuple[int, int], ...], mode: str, top_k: int,
                 word: str | None) -> AblationResult:
    """Cached: a rerun for another widget (a layer to view, the classifier) does not run the model again."""
    means = _means(name, device) if mode == "mean" and heads else None
    return ablate_mlm(get_model(name, device, "mlm"), masked, list(heads), mode, top_k, word, means)


def settings(ctx: WhyContext) -> tuple[str, int, str | None]:
    left, middle, right = st.columns(3)
    mode = left.radio("Switched off means", MODES, key=KEY_MODE, horizontal=True,
                      format_func={"zero": "output set to zero", "mean": "output set to its mean"}.get,
                      help="Mean: the head's average output over 24 reference sentences, the same at every "
                           "position; only what is specific to this sentence is lost.")
    top_k = middle.slider("Words shown (top-k)", 1, MAX_TOP_K, 8, key=KEY_TOP_K)
    word = why.followed_word(ctx, KEY_WORD, "Follow this word's probability", where=right,
                             help="Default: the model's own answer (its most probable word at the mask). One "
                                  "token of the model's vocabulary.")
    return mode, top_k, word


def show(ctx: WhyContext) -> dict:
    loaded = ctx.loaded
    # as plain text, without the blank a sentence typed with Enter ends in: "**Paris … [MASK].\n**" kept its stars
    st.markdown(f"Sentence: **{plain(ctx.masked.strip())}**{why.answer_note(ctx)}")
    mode, top_k, word = settings(ctx)
    heads = head_grid(loaded)
    result = or_stop(get_ablation, ctx.model, ctx.device, ctx.masked, tuple(heads), mode, top_k, word)
    answer_section(result, heads)
    if ctx.classifier is not None:
        classifier_section(ctx, heads, mode)
    attention_section(result, heads)
    st.download_button("Download the numbers (JSON)", json.dumps(result.to_dict(), indent=1),
                       file_name="ablation.json", mime="application/json", key="why.ablation.download")
    return {"heads": format_heads(heads) or None, "mode": mode}


def answer_section(result: AblationResult, heads: list[tuple[int, int]]) -> None:
    if not heads:
        st.info("No head is switched off: the answer below is the plain model's, exactly as on the "
                "pre-training page (masked words). Click heads in the grid to switch them off.")
    for number, mask in enumerate(result.masks):
        columns = st.columns([3, 1])
        title = f"Mask {number + 1}: each word's probability" if len(result.masks) > 1 else \
            "The masked word: each word's probability"
        columns[0].plotly_chart(for_screen(before_after_bars(mask.compared, title)), key=f"why.ablation.bars{number}",
                                config=CHART)
        if mask.word is not None:
            change = f"{(mask.word_after - mask.word_before) * 100:+.2f}"
            unchanged = float(change) == 0  # to the shown digits: no green or red arrow for "+0.00"
            columns[1].metric(f"P({mask.word})", percent(mask.word_after),
                              "no change" if unchanged else f"{change} points", help=f"With every head: "
                              f"{mask.word_before:.4%}", delta_color="off" if unchanged else "normal",
                              delta_arrow="off" if unchanged else "auto")
        columns[1].metric("Top word", mask.ablated[0].token,
                          "unchanged" if mask.ablated[0].token_id == mask.baseline[0].token_id
                          else f"was {mask.baseline[0].token}", delta_color="off")


def _classifier_means(classifier, encoder: LoadedModel):
    """The fine-tuned encoder's head means, kept in this session (its classifier is this session's own)."""
    kept = st.session_state.get("why.ablation.classifier_means")
    if kept is None or kept[0] is not classifier.result.classifier:  # not id(): a new model may reuse an id
        kept = (classifier.result.classifier, head_means(encoder))
        st.session_state["why.ablation.classifier_means"] = kept
    return kept[1]


def classifier_section(ctx: WhyContext, heads: list[tuple[int, int]], mode: str) -> None:
    st.subheader("Your fine-tuned classifier")
    classifier = ctx.classifier
    encoder = finetuned_model(classifier.base, classifier.result)
    means = _classifier_means(classifier, encoder) if mode == "mean" and heads else None
    effect: ClassifierEffect | None = or_none(
        ablate_classifier, classifier.result.classifier, encoder, classifier.result.label_names, ctx.sentence,
        classifier.result.config.max_length, heads, mode, means)
    if effect is not None:
        st.plotly_chart(for_screen(class_bars(effect.labels, effect.before, effect.after,
                                              f"Class probabilities of “{ctx.sentence[:60]}”")),
                        key="why.ablation.classes", config=CHART)
        st.caption("The same heads are switched off in the classifier's own (fine-tuned) encoder.")


def attention_section(result: AblationResult, heads: list[tuple[int, int]]) -> None:
    st.subheader("What later layers look at now")
    change = result.attention_change()
    st.plotly_chart(for_screen(layer_head_heatmap(change, "How far each head's attention moved (✕ = switched off)",
                                                  "moved (JS, bits)", marked=heads, zrange=(0.0, max(0.05,
                                                                                                     float(change.max()))),
                                                  scale=CHANGE)), key="why.ablation.moved", config=CHART)
    st.caption("Moved = the Jensen-Shannon divergence between a head's attention rows with every head and with "
               "the chosen heads off, averaged over tokens (as the Fine-tuning lab measures what training "
               "changed): 0 = unchanged, 1 bit = looks somewhere else entirely. "
               "Layers up to the first switched-off head cannot move.")
    layers, n_heads = change.shape
    if st.session_state.get("why.ablation.view_for") != heads:  # new heads: show the head that moved most
        st.session_state["why.ablation.view_for"] = list(heads)
        layer, head = divmod(int(change.argmax()), n_heads) if change.max() > 0 else (layers - 1, 0)
        st.session_state["why.ablation.view_layer"], st.session_state["why.ablation.view_head"] = layer + 1, head + 1
    layer, head = layer_head(layers, n_heads, ("why.ablation.view_layer", "why.ablation.view_head"))
    layer, head = layer - 1, head - 1
    st.plotly_chart(for_screen(attention_before_after(result.attention_before[layer, head],
                                                      result.attention_after[layer, head], result.tokens,
                                                      f"Layer {layer + 1}, head {head + 1}: every head, heads off")),
                    key="why.ablation.attention", config=CHART)
