"""Streamlit side of the Generate page: its model, prompt and controls, the cached computations, the link.

What is on screen is a function of the controls alone (model, prompt, mode, temperature, top-k,
top-p, whole words, seed, beam width, number of steps taken): "Next token" and "Generate N" only raise
the number of steps, and the tokens so far are replayed with the current controls and seed. So a link
reproduces the view, and moving a control redraws the whole continuation under the new rule.

Every control is drawn with ``persist_state="page"``. A run that does not draw a widget (an error above
it stops the page: a model that does not load, an empty prompt; or the decoding mode hides it) makes
the browser drop it, value and all; drawn again, it shows what the server sends with it, else its
default (N = 1, temperature 0). With ``persist_state`` the server keeps the value and sends it.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, replace
from typing import Callable

import streamlit as st

from ui import url_state
from ui.feedback import or_stop
from ui.layer_head import layer_head
from ui.layout import for_screen
from ui.state import get_model
from vizcore.decoder.beam import MAX_WIDTH, BeamSearch, beam_search
from vizcore.decoder.generation import Generation, generate
from vizcore.decoder.ranges import SEED, TEMPERATURE, TOP_K, TOP_P
from vizcore.decoder.sampling import Settings
from vizcore.decoder.steps import StepView, step_view
from vizcore.decoder.vocabulary import Banned, banned_tokens
from vizcore.model.catalog import CAUSAL_LABEL, CAUSAL_MODEL
from vizcore.model.loading import LoadedModel

DEFAULT_PROMPT = "She opened the"
OTHER_MODEL = "Other: hub id or local folder…"
MODEL_CHOICES = (CAUSAL_MODEL, "gpt2", "distilgpt2", OTHER_MODEL)
MODES = ("greedy", "sample", "beam")
MODE_LABELS = {"greedy": "Greedy (always the top token)", "sample": "Sample (temperature, top-k, top-p, seed)",
               "beam": "Beam search"}
MAX_STEPS = 40  # tokens the page generates at most (each step reruns the model on the whole sequence)
BEAM_TOKENS = 12  # the beam search's max_new_tokens: the page steps through its record
BAR_COUNT = 15
K = {name: f"generate.{name}" for name in ("model_choice", "model_other", "prompt", "mode", "temperature", "top_k",
                                            "top_p", "whole_words", "seed", "width", "steps", "chunk", "layer",
                                            "head")}
# The first view: sampling, so the seed and the controls matter, tempered to a readable continuation
# (docs/DECODER.md, "The page's defaults", says why these values).
DEFAULTS = {"model_choice": CAUSAL_MODEL, "prompt": DEFAULT_PROMPT, "mode": "sample", "temperature": 0.8,
            "top_k": 0, "top_p": 0.9, "whole_words": True, "seed": 0, "width": 3, "steps": 0, "chunk": 5}
KEEP = "page"  # every control's persist_state: its value survives a run that does not draw it


@dataclass(frozen=True)
class Controls:
    name: str
    prompt: str
    mode: str
    settings: Settings  # what shapes the bars (and the draws, in sample and greedy mode)
    seed: int
    width: int


def number_in(low: float, high: float, what: str) -> Callable[[str], float]:
    def parse(raw: str) -> float:
        try:
            value = float(raw)
        except ValueError:
            value = float("nan")
        if not low <= value <= high:
            raise ValueError(f"{what} must be a number from {low:g} to {high:g}.")
        return value
    return parse


def set_model_from_link(raw: str) -> str:
    """The link's ``lm``: a listed model, or any other name (for the "Other" box)."""
    name = raw.strip()
    if name and name not in MODEL_CHOICES:
        st.session_state[K["model_other"]] = name
        return OTHER_MODEL
    return name or CAUSAL_MODEL


def whole_words_in(raw: str) -> bool:
    """The link's ``words``: ``whole`` (whole words only) or ``all`` (word pieces too)."""
    if raw not in ("whole", "all"):
        raise ValueError("it is whole (whole words only) or all (word pieces too).")
    return raw == "whole"


# layer and head: this page's model's, checked where its steppers are drawn
LINK = url_state.Link("generate", {
    "prompt": (K["prompt"], url_state.Text()),
    "lm": (K["model_choice"], url_state.Text(set_model_from_link)),
    "mode": (K["mode"], url_state.OneOf(MODES)),
    "temperature": (K["temperature"], number_in(TEMPERATURE.low, TEMPERATURE.high, "temperature")),
    "top_k": (K["top_k"], url_state.Integer(int(TOP_K.low), int(TOP_K.high))),
    "top_p": (K["top_p"], number_in(TOP_P.low, TOP_P.high, "top-p")),
    "words": (K["whole_words"], whole_words_in),
    "seed": (K["seed"], url_state.Integer(int(SEED.low), int(SEED.high))),
    "width": (K["width"], url_state.Integer(1, MAX_WIDTH)),
    "steps": (K["steps"], url_state.Integer(0, MAX_STEPS)),
    "layer": (K["layer"], url_state.Integer(1)),
    "head": (K["head"], url_state.Integer(1)),
})


def url_params(c: Controls, p: Progress, layer: int, head: int) -> dict[str, object]:
    """The link's page parameters: only those that decide what is on screen (layer and head 1-based).
    A prompt too long for a link is left out, and with it the steps taken from it (a link with steps but
    no prompt would continue the default prompt instead)."""
    if len(c.prompt) > url_state.MAX_URL_TEXT:
        st.caption(f"This prompt has {len(c.prompt):,} characters, too long for the page's link (at most "
                   f"{url_state.MAX_URL_TEXT:,}): the link keeps the controls but not the prompt or the steps.")
        return {**url_params(replace(c, prompt=""), p, layer, head), "prompt": None, "steps": None}
    sampling = c.mode == "sample"
    return {"prompt": c.prompt, "lm": c.name, "mode": c.mode, "words": "whole" if c.settings.whole_words else "all",
            "temperature": c.settings.temperature if sampling else None,
            "top_k": c.settings.top_k if sampling else None, "top_p": c.settings.top_p if sampling else None,
            "seed": c.seed if sampling else None, "width": c.width if c.mode == "beam" else None,
            "steps": p.steps, "layer": layer, "head": head}


def init_state() -> None:
    for name, value in DEFAULTS.items():
        st.session_state.setdefault(K[name], value)


def model_name() -> str:
    state = st.session_state
    choice = state.get(K["model_choice"], CAUSAL_MODEL)
    return (state.get(K["model_other"]) or "").strip() if choice == OTHER_MODEL else choice


def model_label(name: str) -> str:
    if name == CAUSAL_MODEL:
        return f"{CAUSAL_LABEL} (offline)"
    return name if name == OTHER_MODEL else f"{name} (hub: needs internet or a cache)"


def reset_steps() -> None:
    st.session_state[K["steps"]] = 0


def add_steps(count: int) -> None:
    st.session_state[K["steps"]] = min(MAX_STEPS, int(st.session_state.get(K["steps"], 0)) + count)


def causal_model_or_stop(name: str, device: str) -> LoadedModel:
    return or_stop(get_model, name, device, "causal-lm")


# ---- cached computations (keyed on what decides them; the model is the server's shared one) -------

@st.cache_data(show_spinner="Generating…", max_entries=64)
def get_generation(name: str, device: str, prompt: str, tokens: int, settings: Settings, seed: int) -> Generation:
    return generate(get_model(name, device, "causal-lm"), prompt, tokens, settings, seed, top=BAR_COUNT)


@st.cache_data(show_spinner="Searching the beams…", max_entries=32)
def get_beams(name: str, device: str, prompt: str, width: int, whole_words: bool) -> BeamSearch:
    return beam_search(get_model(name, device, "causal-lm"), prompt, width=width, max_new_tokens=BEAM_TOKENS,
                       whole_words=whole_words)


@st.cache_resource(max_entries=8)
def get_banned(name: str, device: str) -> Banned:
    return banned_tokens(get_model(name, device, "causal-lm"))


@st.cache_resource(show_spinner="Running the model…", max_entries=16)
def get_step(name: str, device: str, prompt: str, generated: tuple[int, ...], settings: Settings) -> StepView:
    # cache_resource: a StepView holds three vocabulary-sized arrays; frozen, pages only read it.
    return step_view(get_model(name, device, "causal-lm"), prompt, generated, settings)


# ---- the state of the generation ------------------------------------------------------------------

@dataclass(frozen=True)
class Progress:
    """Where the generation stands after ``steps`` steps."""

    steps: int  # steps taken (clamped to what the rule allows: a stop token, the model's length)
    generated: tuple[int, ...]  # the tokens after the prompt
    drawn: int | None  # the token the next step takes (greedy and sample), when there is a next step
    finished: bool  # no further step: a stop token was generated, or no room is left
    generation: Generation | None  # greedy and sample: the steps so far, for the JSON download
    beams: BeamSearch | None


def progress(c: Controls, device: str, steps: int) -> Progress:
    if c.mode == "beam":
        search = or_stop(get_beams, c.name, device, c.prompt, c.width, c.settings.whole_words)
        steps = min(steps, len(search.steps))
        current = search.steps[steps - 1] if steps else None
        if steps == len(search.steps) and search.hypotheses:
            # the search has ended (all beams finished, or early stopping with beams still running):
            # its answer is the best finished hypothesis, not the best beam still open
            generated = search.hypotheses[0].token_ids
        else:
            generated = current.beams[0].token_ids if current is not None else ()
        return Progress(steps, tuple(generated), None, steps == len(search.steps), None, search)
    ahead = or_stop(get_generation, c.name, device, c.prompt, steps + 1, c.settings, c.seed)
    taken = ahead.steps[:steps]
    finished = len(ahead.steps) <= steps
    so_far = or_stop(get_generation, c.name, device, c.prompt, len(taken), c.settings, c.seed) if taken else None
    return Progress(len(taken), tuple(s.token_id for s in taken), None if finished else ahead.steps[steps].token_id,
                    finished, so_far, None)


# ---- widgets --------------------------------------------------------------------------------------

def choose_model() -> str:
    left = right = st.container()  # one above the other: beside its description the box cut its value at 1024 px
    choice = left.selectbox("Causal language model", MODEL_CHOICES, key=K["model_choice"], format_func=model_label,
                            on_change=reset_steps, persist_state=KEEP)
    if choice == OTHER_MODEL:
        left.text_input("Hub id or local folder of a causal LM", key=K["model_other"], placeholder="gpt2-medium",
                        on_change=reset_steps, persist_state=KEEP)
    name = model_name()
    right.caption(summary_line() if name == CAUSAL_MODEL else
                  f"`{name}`: any Hugging Face causal LM works (GPT-2, DistilGPT-2, a BERT saved as a decoder). "
                  "An encoder such as bert-base-uncased cannot predict the next token.")
    return name


def summary_line() -> str:
    from vizcore.decoder.weights import summary_line as line

    return line()


def controls(name: str) -> Controls:
    prompt = st.text_input("Prompt", key=K["prompt"], on_change=reset_steps, persist_state=KEEP)
    mode = st.radio("Decoding", MODES, key=K["mode"], format_func=MODE_LABELS.get, horizontal=True,
                    persist_state=KEEP)
    sampling = mode == "sample"
    left, middle, right, far = st.columns(4)
    temperature = left.slider("Temperature (0 = greedy)", TEMPERATURE.low, TEMPERATURE.high, step=TEMPERATURE.step,
                              key=K["temperature"], disabled=not sampling, persist_state=KEEP,
                              help="Divides the logits: below 1 sharpens, above 1 flattens.")
    top_k = middle.slider("Top-k (0 = no limit)", int(TOP_K.low), int(TOP_K.high), key=K["top_k"],
                          disabled=not sampling, persist_state=KEEP, help="Keep only the k most probable tokens.")
    top_p = right.slider("Top-p (1 = no limit)", TOP_P.low, TOP_P.high, step=TOP_P.step, key=K["top_p"],
                         disabled=not sampling, persist_state=KEEP,
                         help="Keep the most probable tokens until their probabilities add up to p.")
    if mode == "beam":
        width = far.slider("Beam width", 1, MAX_WIDTH, key=K["width"], persist_state=KEEP,
                           help="Width 1 is greedy decoding.")
        seed = int(st.session_state[K["seed"]])
    else:
        seed = int(far.number_input("Seed", int(SEED.low), int(SEED.high), key=K["seed"], disabled=not sampling,
                                    persist_state=KEEP, help="The same seed draws the same tokens."))
        width = int(st.session_state[K["width"]])
    whole_words = st.toggle("Whole words only", key=K["whole_words"], persist_state=KEEP,
                            help="Never draw a word piece that would continue the word before it (##ing, ##s; "
                                 "for GPT-2 a token without its leading space). See Word pieces below.")
    settings = ({"greedy": Settings(0.0, whole_words=whole_words), "beam": Settings(1.0, whole_words=whole_words)}
                .get(mode) or Settings(temperature, top_k, top_p, whole_words))
    return Controls(name=name, prompt=prompt, mode=mode, settings=settings, seed=seed, width=int(width))


def step_buttons(done: bool) -> None:
    at_limit = int(st.session_state.get(K["steps"], 0)) >= MAX_STEPS
    done = done or at_limit
    with st.container(horizontal=True, vertical_alignment="bottom"):
        st.button("Next token", key="generate.next", type="primary", on_click=add_steps, args=(1,), disabled=done)
        chunk = st.number_input("N", 1, 20, key=K["chunk"], width=110, persist_state=KEEP)
        st.button(f"Generate {int(chunk)}", key="generate.many", on_click=add_steps, args=(int(chunk),),
                  disabled=done)
        st.button("Reset", key="generate.reset", on_click=reset_steps)
    if at_limit:
        st.caption(f"The page generates at most {MAX_STEPS} tokens (each step reruns the model on the whole "
                   "sequence); the command line goes further: python -m vizcore generate --max-new-tokens N.")


# ---- what is shown --------------------------------------------------------------------------------

def explain_tokens(loaded: LoadedModel, banned: Banned, whole_words: bool) -> None:
    """Word pieces, what "whole words only" removes, and the tokens never drawn, for this model's vocabulary."""
    tokenizer = loaded.tokenizer
    pieces = " + ".join(f"`{t}`" for t in tokenizer.tokenize(" windowsill"))
    size = len(banned.never)
    marks = ("`##` marks a piece that continues the word before it" if any(
        t.startswith("##") for t in tokenizer.tokenize(" windowsill")) else
             "`Ġ` marks a token that starts with a space, so one without it continues the word before it")
    with st.expander("Word pieces, and the tokens never drawn", expanded=False):
        st.markdown(
            f"The model writes **tokens**, not words: its vocabulary has {size:,}. A common word is one token, a "
            f"rarer one several pieces: here *windowsill* is {pieces}; {marks}. Sampling can draw a piece after a "
            "whole word and the text glues them (*the* + *##written* → *thewritten*). **Whole words only** removes "
            f"the {int(banned.continuation.sum()):,} tokens that continue a word, so every token starts a word or is "
            "punctuation; the price: a word the vocabulary has only in pieces, or an ending such as a plural *-s*, "
            f"cannot be written. {'It is on.' if whole_words else 'It is off.'}\n\n"
            f"**Never drawn**, in every mode: {banned.describe()}. Training never had the model produce them, so "
            "their probabilities are noise that a high temperature would turn into draws; they get probability 0, "
            "in the bars too. The end token stays: it ends the text.")


def token_chip(token: str, new: bool) -> str:
    """A token as a markdown code span; generated ones on an orange background."""
    text = token.replace("`", "ˋ").replace("\n", "\\n") or " "
    return f":orange-background[`{text}`]" if new else f"`{text}`"


def show_sequence(view: StepView, p: Progress, c: Controls) -> None:
    tokens = [token_chip(t, i >= view.prompt_length) for i, t in enumerate(view.tokens)]
    st.markdown(f"**Tokens ({p.steps} generated):** " + " ".join(tokens))
    if p.finished:
        st.info("The generation has ended here: the model produced its end token, the beams are all finished, "
                "or there is no room left. Reset, or change a control.")
    elif c.mode == "beam":
        st.caption(f"The best of {c.width} beam{'s' if c.width > 1 else ''} after {p.steps} step(s). "
                   "Beam search does not sample: temperature, top-k and top-p play no part.")


def show_bars(view: StepView, p: Progress, c: Controls, loaded: LoadedModel) -> None:
    from ui.feedback import CHART
    from vizcore.decoder.figures import next_token_bars
    from vizcore.decoder.steps import candidates

    top = candidates(loaded, view, count=BAR_COUNT, drawn=p.drawn)
    title = "Next token: the model (grey) and after the controls (blue)"
    if p.drawn is not None:
        drawn = loaded.tokenizer.decode([p.drawn])
        title += f" · next: '{drawn}'" + (f" (rank {top.drawn_rank + 1})" if top.drawn_rank >= BAR_COUNT else "")
    st.plotly_chart(for_screen(next_token_bars(top, view.settings, title)), key="generate.bars", config=CHART)
    st.caption(f"{top.kept:,} of {len(view.next.plain):,} tokens are kept (never-trained entries are never kept"
               f"{'; nor are word pieces, with whole words only' if view.settings.whole_words else ''}); "
               "the dashed red line is the cut-off, "
               "orange the token the next step takes. Temperature reshapes the heights; top-k and top-p move the "
               "cut-off; greedy keeps one token. Hover a bar for its probability.")


def layer_and_head(view: StepView) -> tuple[int, int]:
    """1-based, from the shared steppers under this page's keys (this page's model is its own)."""
    layers, heads = view.attention.shape[:2]
    return layer_head(layers, heads, (K["layer"], K["head"]), labels=("Layer", "Head (for the causal mask)"))


def show_attention(view: StepView, layer: int, head: int) -> None:
    from ui.feedback import CHART
    from vizcore.decoder.figures import causal_mask_heatmap, new_token_attention

    newest = view.tokens[-1]
    left, right = st.columns(2)
    # a short title: the chart has half of a 1024-px laptop's width
    left.plotly_chart(for_screen(new_token_attention(view.newest_attention, view.tokens, layer - 1,
                                                     f"Where '{html.escape(newest)}' looks · layer {layer}")),
                      key="generate.attention", config=CHART)
    right.plotly_chart(for_screen(causal_mask_heatmap(view.attention[layer - 1, head - 1], view.tokens,
                                                      f"The causal mask · layer {layer}, head {head}")),
                       key="generate.mask", config=CHART)
    st.caption("Left: each head of the layer, the newest token's attention over the sequence so far (each row sums "
               "to 1): what the next-token prediction reads. Right: every token's attention; grey ✕ cells are "
               "later tokens, masked (weight exactly 0), so a token never sees the future. The framed row is the "
               "newest token. Layers and heads count from 1.")


def show_lens(view: StepView) -> None:
    from ui.feedback import CHART
    from vizcore.decoder.figures import lens_curve, lens_heatmap

    if view.lens is None:
        st.info(view.lens_note)
        return
    st.markdown("The model's own head reads the hidden state of the newest token after each layer (row 0: the "
                "embeddings, before any attention). The last row is the model's prediction: the grey bars above.")
    st.plotly_chart(for_screen(lens_heatmap(view.lens, "Layer by layer: the top next tokens")), key="generate.lens",
                    config=CHART)
    word = view.lens.tokens[-1][0].strip()
    st.plotly_chart(for_screen(lens_curve(view.lens, f"How sure each layer is of '{word}'")), key="generate.lens_curve",
                    config=CHART)


def show_beams(search: BeamSearch, steps: int) -> None:
    from ui.feedback import CHART
    from vizcore.decoder.figures import beam_table, beam_tree

    if steps == 0:
        st.info("Press Next token: each step keeps the best continuations of all the beams.")
        return
    st.plotly_chart(for_screen(beam_tree(search, steps, f"Beam search, width {search.width}: {steps} step(s)")),
                    key="generate.beam_tree", config=CHART)
    table = beam_table(search, steps)
    st.dataframe(table, hide_index=True, key="generate.beam_table", width="stretch",
                 column_config={"log-probability": st.column_config.NumberColumn(format="%.3f"),
                                "score (length-normalised)": st.column_config.NumberColumn(format="%.3f")})
    st.caption("A beam's log-probability is the sum of its tokens' log-probabilities. Stars are finished "
               "hypotheses (an end token, or the length limit), scored by log-probability / length, as transformers' "
               "beam search with early_stopping=True and length_penalty=1.")


def download(p: Progress) -> None:
    import json

    record = p.beams.to_dict() if p.beams is not None else p.generation.to_dict() if p.generation else None
    st.download_button("Download the generation (JSON)", data=json.dumps(record or {}, indent=1, ensure_ascii=False),
                       file_name="generation.json", mime="application/json", key="generate.download",
                       disabled=record is None, help=None if record else "Generate a token first.")
