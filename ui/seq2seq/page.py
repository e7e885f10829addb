"""Streamlit side of the Translate page: its model, source text and controls, the cached runs, the link.

Two kinds of model give the page the same record (``vizcore.seq2seq.record.Seq2SeqRun``): the date
translator trained in this repository (the shipped one, or one trained on this page in this session),
decoded greedily or by beam search with every step's full distribution; and a hub encoder-decoder
(T5, BART, Marian opus-mt), decoded greedily, with each step's most probable tokens. What is on
screen is a function of the controls alone, so a link reproduces the view (the model trained on the
page excepted: it lives only in the session that trained it).
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from ui import jobs, url_state
from ui.feedback import or_none, plain
from ui.layer_head import layer_head
from ui.state import import_model_stack, selection
from vizcore.model.catalog import SUGGESTED_HUB_SEQ2SEQ
from vizcore.model.heads import default_head
from vizcore.seq2seq.dates import EXAMPLES, random_text
from vizcore.seq2seq.decoding import MAX_WIDTH
from vizcore.seq2seq.record import Seq2SeqRun
from vizcore.seq2seq.translator import MODEL_NAME, Translation, Translator, translate

SHIPPED = MODEL_NAME  # "date-translator", also its name in links
TRAINED = "trained-here"
OTHER = "Other: hub id or local folder…"
HUB_CHOICES = tuple(SUGGESTED_HUB_SEQ2SEQ)
KEY_JOB = "translate.job"
K = {name: f"translate.{name}" for name in ("model_choice", "model_other", "source", "target", "example", "seed",
                                            "beam", "step", "layer", "enc_layer", "head", "arrangement", "beam_read")}
DEFAULTS = {"model_choice": SHIPPED, "source": EXAMPLES[0], "target": "", "seed": 0, "beam": 1}
MAX_SOURCE = 1_000  # characters: a date has at most 62; a hub model's views take a paragraph


@dataclass(frozen=True)
class View:
    """What the page shows: the record of the answer and how it was decoded."""

    run: Seq2SeqRun
    translation: Translation | None  # date models: each step's distribution, the beams, what the grammar says
    steps: list | None  # hub models: per output, the most probable next tokens (``hub.StepDistribution``)

    @property
    def step_count(self) -> int:
        return len(self.translation.decoding.steps) if self.translation is not None else len(self.steps)

    def to_dict(self) -> dict:
        """The download: the run, and the decoding step by step (as ``translate-date --steps`` prints it)."""
        if self.translation is not None:
            return {**self.translation.to_dict(), "decoding": self.translation.decoding.to_dict()}
        return {**self.run.to_dict(), "steps": [s.to_dict() for s in self.steps]}


# ---- the model ------------------------------------------------------------------------------------

def trained_job():
    """This session's finished training run with a model (stopped runs keep theirs), or None."""
    job = jobs.current(KEY_JOB)
    return job if job is not None and job.finished and job.result is not None else None


def trained_label(job) -> str:
    stopped = " (stopped)" if job.result.stopped else ""
    return f"Date translator trained on this page: {job.step:,} steps, seed {job.config.seed}{stopped}"


def choices() -> tuple[str, ...]:
    return (SHIPPED, *((TRAINED,) if trained_job() is not None else ()), *HUB_CHOICES, OTHER)


def model_label(choice: str) -> str:
    if choice == SHIPPED:
        return "Date translator, trained in this repository (offline)"
    if choice == TRAINED:
        return trained_label(trained_job())
    return choice if choice == OTHER else f"{choice} (hub: needs internet or a cache)"


def is_date_model(choice: str) -> bool:
    return choice in (SHIPPED, TRAINED)


def model_name() -> str:
    """The hub id or folder for hub choices; SHIPPED or TRAINED for the date models."""
    state = st.session_state
    choice = state.get(K["model_choice"], SHIPPED)
    return (state.get(K["model_other"]) or "").strip() if choice == OTHER else choice


def set_model_from_link(raw: str) -> str:
    name = raw.strip()
    if name == TRAINED:
        raise ValueError("a model trained on the page lives only in the session that trained it; train one in "
                         "'Train from scratch' (the shipped translator is shown).")
    if name and name not in (SHIPPED, *HUB_CHOICES):
        st.session_state[K["model_other"]] = name
        return OTHER
    return name or SHIPPED


def model_changed() -> None:
    """A new model keeps the text unless it was another model's example: then it gets its own."""
    state, hub_texts = st.session_state, set(SUGGESTED_HUB_SEQ2SEQ.values())
    source = state.get(K["source"], "")
    if is_date_model(state[K["model_choice"]]):
        if source in hub_texts:
            state[K["source"]] = EXAMPLES[0]
    elif source in hub_texts | set(EXAMPLES) and model_name() in SUGGESTED_HUB_SEQ2SEQ:
        state[K["source"]] = SUGGESTED_HUB_SEQ2SEQ[model_name()]
    reset_step()


def choose_model() -> str:
    """The model selectbox (and the Other box); returns the choice."""
    state, options = st.session_state, choices()
    if state.get(K["model_choice"]) not in options:  # the run trained here is gone (a new one started)
        st.info("The model trained on this page is no longer available; showing the shipped translator.")
        state[K["model_choice"]] = SHIPPED
    choice = st.selectbox("Model", options, key=K["model_choice"], format_func=model_label, on_change=model_changed)
    if choice == OTHER:
        st.text_input("Hub id or local folder of an encoder-decoder", key=K["model_other"], on_change=reset_step,
                      placeholder="t5-base, Helsinki-NLP/opus-mt-en-fr, ./my-t5")
    return choice


# ---- the source text -----------------------------------------------------------------------------

def reset_step() -> None:
    """A new answer: the step slider goes back to its last step (the whole output)."""
    st.session_state.pop(K["step"], None)


def use_example() -> None:
    state = st.session_state
    if state.get(K["example"]):
        state[K["source"]] = state[K["example"]]
    state[K["example"]] = None  # a menu, not a state: the same example can be picked again
    reset_step()


def use_random() -> None:
    state = st.session_state
    seed = int(state.get(K["seed"], 0))
    state[K["source"]] = random_text(seed)
    state[K["seed"]] = seed + 1  # the next press draws another date; the link keeps the text
    reset_step()


def source_controls(date_model: bool) -> tuple[str, str | None]:
    """The text box, and for the date models the examples and the seeded random date; for hub models an
    optional target. Returns (source, target or None)."""
    source = st.text_input("A date in words" if date_model else "Source text", key=K["source"],
                           max_chars=MAX_SOURCE, on_change=reset_step)
    if not date_model:
        target = st.text_input("Target (optional): the model reads this answer instead of writing its own",
                               key=K["target"], max_chars=MAX_SOURCE, on_change=reset_step)
        return source, target.strip() or None
    with st.container(horizontal=True, vertical_alignment="bottom"):
        st.selectbox("Examples", EXAMPLES, index=None, key=K["example"], placeholder="Pick an example…",
                     on_change=use_example, width=520)
        st.number_input("Seed", 0, 1_000_000, key=K["seed"], width=130,
                        help="Random date draws a date the way the training data is drawn, from this seed; "
                             "the seed then moves on by one.")
        st.button("Random date", key="translate.random", on_click=use_random)
    return source, None


BEAM_PX = 360  # under the model box: a slider of 1 to 5 needs no more than this


def beam_control(date_model: bool) -> int:
    if not date_model:
        st.slider("Beam width", 1, MAX_WIDTH, 1, key="translate.beam_hub", disabled=True, width=BEAM_PX,
                  help="Hub models are decoded greedily here; beam search is the date translator's.")
        return 1
    return int(st.slider("Beam width (1 = greedy)", 1, MAX_WIDTH, key=K["beam"], on_change=reset_step, width=BEAM_PX,
                         help="Greedy takes the most probable character at each step; beam search keeps the "
                              "best few partial outputs by their summed log-probability."))


# ---- the runs (cached where shared) ----------------------------------------------------------------

@st.cache_resource(show_spinner=False, max_entries=128)
def shipped_view(text: str, beam: int) -> View:
    # The shipped model is the process's one read-only copy (translator.load_translator); a View is frozen.
    translation = translate(text, beam)
    return View(translation.run, translation, None)


def trained_view(text: str, beam: int) -> View:
    job = trained_job()  # the session's own model: not in a server-wide cache (11 ms a run)
    translation = translate(text, beam, Translator(job.result.model, f"{SHIPPED} (trained on the page)"))
    return View(translation.run, translation, None)


@st.cache_resource(show_spinner="Loading the encoder-decoder (once per server)…", max_entries=2)
def seq2seq_model(name: str, device: str):
    import_model_stack()
    from vizcore.seq2seq.hub import load_seq2seq

    return load_seq2seq(name, device)


@st.cache_resource(show_spinner="Translating…", max_entries=16)
def hub_view(name: str, device: str, text: str, target: str | None) -> View:
    from vizcore.seq2seq.hub import next_token_steps
    from vizcore.seq2seq.hub import translate as hub_translate

    loaded = seq2seq_model(name, device)
    run = hub_translate(loaded, text, target)
    return View(run, None, next_token_steps(loaded, run))


def view_or_none(choice: str, source: str, target: str | None, beam: int) -> View | None:
    """The view of the controls, or None after a clear message (bad text, no network, not an encoder-decoder)."""
    name = model_name()
    if choice == SHIPPED:
        return or_none(shipped_view, source, beam)
    if choice == TRAINED:
        return or_none(trained_view, source, beam)
    if not name:
        st.warning("Type a hub id (needs internet or a cache) or a local folder of an encoder-decoder.")
        return None
    return or_none(hub_view, name, selection().device, source, target)


# ---- the link ------------------------------------------------------------------------------------

# step, layers and head: their top depends on the answer and the model, checked where their controls are drawn
LINK = url_state.Link("translate", {
    "source": (K["source"], url_state.Text()),
    "translator": (K["model_choice"], url_state.Text(set_model_from_link)),
    "target": (K["target"], url_state.Text()),
    "beam": (K["beam"], url_state.Integer(1, MAX_WIDTH)),
    "step": (K["step"], url_state.Integer(1)),
    "layer": (K["layer"], url_state.Integer(1)),
    "enc_layer": (K["enc_layer"], url_state.Integer(1)),
    "head": (K["head"], url_state.Integer(1)),
})


def init_state() -> None:
    for name, value in DEFAULTS.items():
        st.session_state.setdefault(K[name], value)


def url_params(choice: str, source: str, target: str | None, beam: int, view: View | None,
               where: tuple[int, int, int, int] | None) -> dict[str, object]:
    """The link: model, text, beam width (date models), target (hub models); step, decoder layer, encoder
    layer and head (1-based) when a view is on screen."""
    date_model = is_date_model(choice)
    params = {"source": source, "translator": choice if date_model else model_name(),
              "beam": beam if date_model else None, "target": None if date_model else target}
    if view is not None and where is not None:
        params.update(zip(("step", "layer", "enc_layer", "head"), where))
    return params


# ---- what is shown above the views ----------------------------------------------------------------

def chips(tokens: list[str], marked: set[str] = frozenset()) -> str:
    """Tokens as code spans; ``marked`` ones (words the model does not know) on red."""
    def one(token: str) -> str:
        text = f"`{token.replace('`', 'ˋ') or ' '}`"
        return f":red-background[{text}]" if token in marked else text
    return " ".join(one(t) for t in tokens)


def show_output(view: View) -> None:
    run, translation = view.run, view.translation
    unknown = set(translation.unknown_words) if translation is not None else set()
    st.markdown(f"**The encoder reads** ({len(run.input_tokens)} tokens): {chips(run.input_tokens, unknown)}")
    if translation is None:
        st.markdown(f"**The decoder writes** ({len(run.output_tokens)} tokens): {chips(run.output_tokens)}")
        st.caption("Greedy decoding, one token per step; the end token is not shown. Pieces are as the "
                   "model's tokenizer spells them (▁ or Ġ starts a word).")
        return
    st.markdown(f"## Output: `{run.output or '(nothing)'}`")
    decoding = translation.decoding
    how = "greedy" if decoding.width == 0 else f"beam search of width {decoding.width}"
    st.caption(f"Decoded one character per step ({how}); log-probability of the whole answer "
               f"{decoding.score:.4f}" + ("" if decoding.finished else "; no end token within the step limit") + ".")
    if translation.outside_training:
        words = plain(", ".join(f"'{w}'" for w in translation.unknown_words))  # user text: no markdown
        st.warning("**Outside what the model was trained on.** " + plain(translation.parsed.reason)
                   + (f" Unknown words (read as <unk>): {words}." if words else "")
                   + f" It still answers, `{run.output}`: a model always writes something, and nothing in it "
                     "knows which inputs it has not seen.")
    elif translation.correct:
        st.success(f"Right: the grammar reads this date as {translation.parsed.iso}.")
    else:
        st.error(f"Wrong: the grammar reads this date as {translation.parsed.iso}.")


def layers_and_head(run: Seq2SeqRun) -> tuple[int, int, int]:
    """(decoder layer, encoder layer, head), 1-based: the shared steppers under this page's keys (its model is
    its own), and the encoder's layer beside them."""
    layers, enc_layers = run.cross.shape[0], run.encoder.shape[0]
    heads = min(run.cross.shape[1], run.encoder.shape[1])
    left, right = st.columns([2, 1])
    layer, head = layer_head(layers, heads, (K["layer"], K["head"]), labels=("Decoder layer", "Head"), where=left)
    url_state.settle(K["enc_layer"], default_head(enc_layers, heads)[0] + 1, 1, enc_layers)
    enc_layer = right.number_input("Encoder layer", 1, enc_layers, step=1, key=K["enc_layer"],
                                   help=f"1 to {enc_layers}")
    return layer, int(enc_layer), head


def download(view: View) -> None:
    import json

    st.download_button("Download this run (JSON)", data=json.dumps(view.to_dict(), ensure_ascii=False),
                       file_name="translation.json", mime="application/json", key="translate.download",
                       help="The three attentions [layer][head][row][column] (0-based), the tokens, the gold "
                            "alignment, and every decoding step.")
