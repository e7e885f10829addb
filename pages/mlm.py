"""Pre-training: BERT's two tasks. Masked words (prediction, layer by layer, the masked position's
attention, the 80/10/10 rule) and next sentence prediction.

Computation: vizcore/mlm/ (fill_mask, masking, masking_demo, weights, nsp) · figures: vizcore/mlm/figures.py ·
CLI: python -m vizcore fill-mask, python -m vizcore nsp (vizcore/mlm/cli.py)
UI: ui/mlm/ (page: the model, the sentence, the cached fill-mask computations; nsp: the next-sentence section).
URL: /fill-mask
"""

import streamlit as st

from ui import url_state
from ui.feedback import CHART, or_none
from ui.layout import for_screen, lazy_tabs
from ui.mlm import nsp
from ui.mlm import page as fm
from ui.mlm.link import LINK
from ui.state import selection
from vizcore.errors import VizError
from vizcore.mlm import base_weights, weights
from vizcore.mlm.figures import (
    lens_card_curves,
    lens_card_table,
    lens_comparison_table,
    lens_final_word_curves,
    lens_kl_curves,
    lens_table,
    logit_lens_heatmap,
    mask_attention_heatmap,
    masking_strip,
    masking_table,
    prediction_bars,
    rates_bars,
    rates_table,
)
from vizcore.mlm.fill_mask import FillMaskResult
from vizcore.model.catalog import BUILTIN_MODELS, FILL_MASK_MODELS
from vizcore.plot import display_tokens


def choose_model() -> str:
    left, right = st.columns([2, 1])
    choice = left.selectbox(
        "Masked-LM", fm.mlm_choices(), key=fm.KEY_MODEL_CHOICE,
        format_func=lambda n: f"{n} ({BUILTIN_MODELS[n].label}: offline)" if n in FILL_MASK_MODELS else
        (n if n == fm.OTHER_MODEL else f"{n} (hub: needs internet or a cache)"))
    if choice == fm.OTHER_MODEL:
        left.text_input("Hub id or local folder of a masked-LM", key=fm.KEY_MODEL_OTHER,
                        placeholder="bert-base-uncased or ./my-bert")
    right.slider("Predictions per mask (top-k)", 1, 20, 5, key="fill_mask.top_k")
    name = fm.model_name()
    summaries = {weights.MLM_MODEL: weights.summary_line, base_weights.BASE_MLM_MODEL: base_weights.summary_line}
    st.caption(summaries[name]() if name in summaries else
               f"`{name}`: any Hugging Face masked-LM works (BERT, DistilBERT, RoBERTa with <mask>).")
    return name


def sentence_controls(name: str, device: str) -> str:
    st.session_state.setdefault(fm.KEY_TEXT, fm.DEFAULT_TEXT)
    with st.container(horizontal=True):
        for i, (label, text) in enumerate(fm.EXAMPLES):
            st.button(label, key=f"fill_mask.example{i}", help=text, on_click=fm.set_text, args=(text,))
    text = st.text_area("Sentence with [MASK] (or <mask>)", key=fm.KEY_TEXT, height=80)
    words = fm.get_words(name, device, text)
    if words:
        st.markdown("**Click a word to mask it:**")
        with st.container(horizontal=True, gap="small"):
            for i, word in enumerate(words):
                st.button(word.text, key=f"fill_mask.word{i}", help=f"Replace '{word.text}' with [MASK]",
                          on_click=fm.mask_clicked_word, args=(word,))
    if message := st.session_state.pop("fill_mask.click_error", None):
        st.warning(message)
    return text


def show_predictions(result: FillMaskResult, name: str, device: str, text: str) -> None:
    label = BUILTIN_MODELS[name].label if name in BUILTIN_MODELS else "from the hub or a folder"
    st.markdown(f"Answered by **{name}** ({label}).")
    columns = st.columns(min(3, len(result.masks)))
    for number, mask in enumerate(result.masks):
        title = f"Mask {number + 1} (token {mask.index})" if len(result.masks) > 1 else "Prediction for [MASK]"
        columns[number % len(columns)].plotly_chart(
            for_screen(prediction_bars(mask.predictions, title)), key=f"fill_mask.bars{number}", config=CHART)
    if len(result.masks) > 1:
        st.caption("Each mask is predicted on its own, with the other masks still masked: the probabilities are "
                   "not joint.")
        st.subheader("Fill them one at a time, most confident first")
        steps = fm.get_iterative(name, device, text)
        st.dataframe(
            [{"step": i + 1, "mask at token": s.index, "word": s.token, "probability": round(s.score, 4),
              "sentence so far": s.text} for i, s in enumerate(steps)],
            hide_index=True, key="fill_mask.iterative", width="stretch")
        st.caption("Each step runs the model again, fills the mask it is surest of with its top word, and keeps "
                   "that word for the next steps.")


def pick_mask(result: FillMaskResult, key: str) -> int:
    if len(result.masks) == 1:
        return 0
    return st.selectbox("Which mask", range(len(result.masks)), key=key,
                        format_func=lambda m: f"mask {m + 1} (token {result.mask_indices[m]})")


LENS_VIEWS = ("Both", "Logit lens", "Tuned lens")  # both one above the other: side by side, words overlap at 1024 px
PAPER = "https://arxiv.org/abs/2303.08112"


def show_lens(result: FillMaskResult) -> None:
    if result.lens is None:
        st.info(result.lens_note)
        return
    st.markdown("The masked-LM head reads the hidden state after each layer (row 0: the embeddings, before "
                "any attention). The last row is the model's prediction. The **logit lens** applies the head as it "
                "is; the **tuned lens** first moves each layer's hidden state with a small affine map trained to "
                f"make the head's reading match the final one ([Belrose et al. 2023]({PAPER})).")
    mask = pick_mask(result, "fill_mask.lens_mask")
    word = result.masks[mask].predictions[0].token
    k = result.lens.probs.shape[-1]
    lenses = {"logit lens": result.lens}
    if result.tuned_lens is None:
        st.caption(f"Tuned lens: not available. {result.tuned_note}")
        view = "Logit lens"
    else:
        lenses["tuned lens"] = result.tuned_lens
        view = st.radio("Lens", LENS_VIEWS, horizontal=True, key="fill_mask.lens_view")
    shown = {"Both": lenses, "Logit lens": {"logit lens": result.lens},
             "Tuned lens": {"tuned lens": result.tuned_lens}}[view]
    for name, lens in shown.items():
        key = "fill_mask.lens" if name == "logit lens" else "fill_mask.tuned_lens"
        st.plotly_chart(for_screen(logit_lens_heatmap(lens, mask, f"{name.capitalize()}: top {k} words at "
                                                                      f"mask {mask + 1}")), key=key, config=CHART)
    st.plotly_chart(for_screen(lens_final_word_curves(lenses, mask, word, f"How sure each layer is of '{word}'")),
                    key="fill_mask.lens_curve", config=CHART)
    if len(lenses) > 1:
        st.plotly_chart(for_screen(lens_kl_curves(lenses, mask, f"How far each layer's reading is from the output "
                                                                f"(mask {mask + 1})")),
                        key="fill_mask.lens_kl", config=CHART)
    with st.expander("Table"):
        st.dataframe(lens_table(result.lens, mask), hide_index=True, key="fill_mask.lens_table")
        st.dataframe(lens_comparison_table(lenses, mask), hide_index=True, key="fill_mask.lens_compare_table")
    if len(lenses) > 1:
        show_lens_card()


def show_lens_card() -> None:
    card = fm.get_lens_card()
    if card is None:
        return
    held = card["heldout"]
    st.plotly_chart(for_screen(lens_card_curves(card, f"On held-out text: mean KL to the output over "
                                                      f"{held['positions']:,} masked words")),
                    key="fill_mask.lens_card", config=CHART)
    with st.expander("What the two lenses score on held-out text"):
        st.dataframe(lens_card_table(card), hide_index=True, key="fill_mask.lens_card_table", width="stretch")
        st.caption("Held-out windows of the masked-LM's own corpus, never trained on; at the positions that became "
                   "[MASK]. Top-k agreement: the model's final top-1 word is among the lens's top k words at that "
                   "layer. See vizcore/weights/MODEL_CARD_TUNED_LENS.md.")
    st.caption("What it can show: where in the network the answer becomes readable, layer by layer, with a reading "
               "trained to be fair to the middle layers. What it cannot: a tuned lens is itself a trained model; a "
               "good reading at layer 2 says the answer can be decoded there by an affine map, not that the model "
               "uses it there.")


def show_mask_attention(result: FillMaskResult) -> None:
    mask = pick_mask(result, "fill_mask.attention_mask")
    layers, heads = result.mask_attention.shape[:2]
    view = st.radio("Show", ["One layer, every head", "Every layer, mean over heads"], horizontal=True,
                    key="fill_mask.attention_view")
    rows = result.mask_attention[:, :, mask, :]  # (L, H, T)
    if view.startswith("One"):
        st.session_state.setdefault("fill_mask.attention_layer", layers)  # the last layer (kept across tabs)
        layer = int(st.number_input("Layer", 1, layers, step=1, key="fill_mask.attention_layer",
                                    help=f"1 to {layers}: every head of that layer"))
        matrix, labels, what = rows[layer - 1], [f"head {h}" for h in range(1, heads + 1)], f"layer {layer}"
    else:
        matrix, labels, what = rows.mean(1), [f"layer {i}" for i in range(1, layers + 1)], "mean over heads"
    title = f"Where mask {mask + 1} (token {result.mask_indices[mask]}) looks · {what}"
    st.plotly_chart(for_screen(mask_attention_heatmap(matrix, labels, result.tokens, title,
                                                      "head" if view.startswith("One") else "layer")),
                    key="fill_mask.attention", config=CHART)
    st.caption("Each row is the masked position's attention over all tokens (it sums to 1). Hover a cell for "
               "the weight. Layers and heads count from 1.")


def show_masking_rule(name: str, device: str) -> None:
    st.markdown("How BERT makes its training examples: 15 % of the ordinary tokens are picked for prediction; "
                "of those, 80 % become [MASK], 10 % a random token and 10 % stay as they are.")
    text = st.text_area("Any sentence", key="fill_mask.rule_text", height=80)
    left, middle, right = st.columns([1, 1, 1])
    seed = left.number_input("Seed", 0, 1_000_000, key=fm.KEY_SEED)
    left.button("Draw again (next seed)", key="fill_mask.next_seed", on_click=fm.next_seed)
    draws = middle.number_input("Draws for the rates", 100, 20_000, step=100, key="fill_mask.draws")
    try:
        draw = fm.get_draw(name, device, text, int(seed))
        rates = fm.get_rates(name, device, text, int(draws), int(seed))
    except VizError as error:
        st.error(str(error))
        return
    chosen = int((draw.kinds != 0).sum())
    right.metric("Tokens selected in this draw", f"{chosen} of {int((~draw.special).sum())}")  # whole at 1024 px
    st.plotly_chart(for_screen(masking_strip(draw, f"One draw (seed {draw.seed}): what the model is given")),
                    key="fill_mask.strip", config=CHART)
    with st.expander("Token by token"):
        st.dataframe(masking_table(draw), hide_index=True, key="fill_mask.masking_table")
    st.plotly_chart(for_screen(rates_bars(rates,
                                          f"Measured over {rates.draws:,} draws of this sentence vs BERT's targets")),
                    key="fill_mask.rates", config=CHART)
    table = rates_table(rates)
    st.dataframe(table.assign(measured=table["measured"].map("{:.2%}".format),
                              target=table["target"].map("{:.0%}".format),
                              std_error=table["std_error"].map("{:.2%}".format)),
                 hide_index=True, key="fill_mask.rates_table", width="stretch")
    st.caption("Error bars: ±2 standard errors of a binomial count; a measured share outside them would be "
               "suspicious. A short sentence often gets no selected token at all in one draw.")


def masked_words(device: str) -> None:
    """The first task; returns early (the next section still shows) when it cannot be shown."""
    # A run that ends without drawing the sentence box (a model that fails) would drop its value: keep it.
    st.session_state[fm.KEY_TEXT] = st.session_state.get(fm.KEY_TEXT, fm.DEFAULT_TEXT)
    name = choose_model()
    if not name:
        st.warning("Type a hub id or a local folder of a masked-LM.")
        return
    if fm.mlm_or_none(name, device) is None:
        return
    text = sentence_controls(name, device)
    tabs = lazy_tabs(["Predictions", "Layer by layer", "Attention of the mask", "80/10/10 masking"], "fill_mask.tab",
                     keep={**dict.fromkeys(("fill_mask.lens_mask", "fill_mask.lens_view", "fill_mask.attention_mask",
                                            "fill_mask.attention_view", "fill_mask.attention_layer")),
                           "fill_mask.rule_text": fm.DEFAULT_RULE_TEXT, fm.KEY_SEED: 0, "fill_mask.draws": 2000})
    predictions_tab, lens_tab, _, rule_tab = tabs
    with next(tab for tab in tabs if tab.open):  # only the open tab runs (ui/layout.py)
        if rule_tab.open:  # any sentence: it needs no prediction
            show_masking_rule(name, device)
            return
        result = or_none(fm.get_fill, name, device, text, int(st.session_state.get("fill_mask.top_k", 5)),
                         lens_tab.open)
        if result is None:
            return
        if result.truncated:
            st.warning(f"The input has {result.num_input_tokens:,} tokens; this model reads at most "
                       f"{len(result.tokens):,}, so the rest is cut off.")
        if predictions_tab.open:
            st.markdown("Tokens: " + " ".join(f"`{t.replace('`', 'ˋ')}`" for t in display_tokens(result.tokens)))
            show_predictions(result, name, device, text)
        elif lens_tab.open:
            show_lens(result)
        else:
            show_mask_attention(result)

url_state.warn(url_state.read(LINK))
nsp.prepare()
st.title("Pre-training: masked words & next sentence")
st.markdown("BERT learnt from raw text with two tasks at once: guess the **masked words** of a sentence, and "
            "tell whether a second sentence really follows the first, **[next sentence prediction]"
            "(#next-sentence-prediction)** (below).")
device = selection().device
url_state.write({"mlm": fm.model_name(), "masked": st.session_state.get(fm.KEY_TEXT, fm.DEFAULT_TEXT),
                 **nsp.url_params()})
st.header("Masked words", anchor="masked-words", divider="gray")
masked_words(device)
st.header("Next sentence prediction", anchor="next-sentence-prediction", divider="gray")
nsp.show_section(device)
