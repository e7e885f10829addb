"""The Translate page's views of one answer: decoding step by step, the three attentions, alignment per head."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import streamlit as st

from ui import url_state
from ui.feedback import CHART
from ui.layout import for_screen
from ui.seq2seq.page import SHIPPED, TRAINED, K, View, chips, trained_job
from vizcore.seq2seq.alignment import aligned, alignment_accuracy
from vizcore.seq2seq.dates import OUTPUT_VOCAB, START
from vizcore.seq2seq.decoding import Beam
from vizcore.seq2seq.figures import (
    alignment_accuracy_heatmap,
    cross_attention_heatmap,
    decoder_attention_heatmap,
    encoder_attention_heatmap,
    in_a_column,
    step_distribution_bars,
)
from vizcore.seq2seq.record import Seq2SeqRun
from vizcore.seq2seq.translator import CARD

BARS = 10  # of the date model's 14 output tokens (the rest, <pad> and <s>, are never written)
SIDE, STACKED = "Side by side", "One under another"
ROLES = ("year", "month", "day")


# ---- decoding, step by step -------------------------------------------------------------------------

def move_step(delta: int, count: int) -> None:
    state = st.session_state
    state[K["step"]] = min(max(int(state.get(K["step"], count)) + delta, 1), count)


def step_control(view: View) -> int:
    """The step (0-based) from Previous / the slider / Next; a link may have set it (kept in range)."""
    count, state = view.step_count, st.session_state
    url_state.settle(K["step"], count, 1, count)
    with st.container(horizontal=True, vertical_alignment="bottom"):
        step = int(state[K["step"]])
        st.button("◀ Previous", key="translate.previous", on_click=move_step, args=(-1, count), disabled=step <= 1)
        if count > 1:
            step = int(st.slider("Step", 1, count, key=K["step"], width=520))
        st.button("Next ▶", key="translate.next", on_click=move_step, args=(1, count), disabled=step >= count)
    return step - 1


def run_up_to(run: Seq2SeqRun, rows: int) -> Seq2SeqRun:
    """The record's first ``rows`` decoder rows: the decoder is causal, so they are exactly what the first
    ``rows`` steps saw."""
    return replace(run, decoder_tokens=run.decoder_tokens[:rows], output_tokens=run.output_tokens[:rows],
                   decoder=run.decoder[:, :, :rows, :rows], cross=run.cross[:, :, :rows],
                   gold=None if run.gold is None else run.gold[:rows])


def show_steps(view: View, layer: int, head: int) -> None:
    step = step_control(view)
    left, right = st.columns(2)
    with left:
        if view.translation is None:
            hub_step(view, step)
        elif view.translation.decoding.width == 0:
            greedy_step(view, step)
        else:
            beam_step(view, step)
    rows = min(step + 1, len(view.run.output_tokens))
    if rows:
        fig = cross_attention_heatmap(run_up_to(view.run, rows), layer - 1, head - 1)
        fig.update_layout(title_text=f"Cross-attention so far · layer {layer}, head {head}")
        right.plotly_chart(for_screen(fig), key="translate.step_cross", config=CHART)
        right.caption("Row i: where the decoder looked while writing output i; a dot marks the most attended "
                      "input" + ("; squares, the gold alignment." if view.run.gold is not None else ".")
                      + (" Beam search: the rows of the answer, the best finished beam." if _is_beam(view) else ""))


def _is_beam(view: View) -> bool:
    return view.translation is not None and view.translation.decoding.width > 0


def greedy_step(view: View, step: int) -> None:
    steps = view.translation.decoding.steps
    now = steps[step]
    read = [START] + [s.token for s in steps[:step]]
    st.markdown(f"**Step {step + 1} of {len(steps)}.** The decoder reads {chips(read)} and writes "
                f"**`{now.token}`**, probability {now.probability:.1%}.")
    order = np.argsort(-now.distribution)[:BARS]
    st.plotly_chart(for_screen(step_distribution_bars([OUTPUT_VOCAB[i] for i in order], now.distribution[order],
                                                      now.token,
                                                      f"Step {step + 1}: the next character")),
                    key="translate.step_bars", config=CHART)
    st.caption("Greedy decoding writes the most probable token (orange). </s> is the end token.")


def beam_step(view: View, step: int) -> None:
    decoding = view.translation.decoding
    now = decoding.steps[step]
    read = decoding.steps[step - 1].beams if step else [Beam((), 0.0, -1)]
    st.markdown(f"**Step {step + 1} of {len(decoding.steps)}.** Each of the {len(read)} beam(s) gives a distribution; "
                f"every (beam, character) pair is scored by the beam's score plus the character's log-probability, "
                f"and the best {decoding.width} go on (orange: what this beam went on with).")
    state = st.session_state
    if int(state.get(K["beam_read"], 0)) >= len(read):
        state[K["beam_read"]] = 0
    shown = st.selectbox("The distribution of beam", range(len(read)), key=K["beam_read"],
                         format_func=lambda r: f"{r + 1}: <s> {' '.join(read[r].tokens)} (score {read[r].score:.3f})")
    children = [b for b in now.beams + now.finished if step == 0 or b.parent == shown]
    order = np.argsort(-now.distributions[shown])[:BARS]
    st.plotly_chart(for_screen(step_distribution_bars([OUTPUT_VOCAB[i] for i in order], now.distributions[shown][order],
                                                      [b.tokens[-1] for b in children],
                                                      f"Step {step + 1}, beam {shown + 1}: the next character")),
                    key="translate.step_bars", config=CHART)
    st.dataframe(beam_table(now), hide_index=True, key="translate.beams", width="stretch",
                 column_config={"score": st.column_config.NumberColumn(format="%.4f")})
    if step == len(decoding.steps) - 1:
        st.caption(f"Search ended. The answer is the best finished hypothesis, `{decoding.text}` "
                   f"(score {decoding.score:.4f}).")


def beam_table(now) -> list[dict]:
    rows = [{"status": "goes on", "written": " ".join(b.tokens), "score": b.score,
             "from beam": b.parent + 1 if b.parent >= 0 else None} for b in now.beams]
    return rows + [{"status": "finished", "written": " ".join(b.tokens), "score": b.score,
                    "from beam": b.parent + 1 if b.parent >= 0 else None} for b in now.finished]


def hub_step(view: View, step: int) -> None:
    now = view.steps[step]
    st.markdown(f"**Step {step + 1} of {len(view.steps)}.** The decoder reads "
                f"{chips(view.run.decoder_tokens[: step + 1])} and writes **`{now.chosen}`**, probability "
                f"{now.chosen_probability:.1%}" + (f" (rank {now.chosen_rank + 1})" if now.chosen_rank else "") + ".")
    bars = step_distribution_bars(now.tokens, now.probabilities, now.chosen,
                                  f"Step {step + 1}: the {len(now.tokens)} most probable next tokens")
    st.plotly_chart(for_screen(bars), key="translate.step_bars", config=CHART)


# ---- the three attentions ---------------------------------------------------------------------------

def show_attentions(view: View, layer: int, enc_layer: int, head: int) -> None:
    run = view.run
    # One under another by default: side by side, each chart has a third of a 1024-px laptop's page and the
    # column labels of a 9-word input ran into each other (screenshot, issue 35 D)
    arrangement = st.radio("Arrangement", (STACKED, SIDE), key=K["arrangement"], horizontal=True,
                           help="Side by side compares the three at a glance on a wide screen and for short texts; "
                                "one under another gives each the page's width (a laptop, a projector).")
    figures = {"encoder": encoder_attention_heatmap(run, enc_layer - 1, head - 1),
               "decoder": decoder_attention_heatmap(run, layer - 1, head - 1),
               "cross": cross_attention_heatmap(run, layer - 1, head - 1)}
    places = st.columns(3) if arrangement == SIDE else [st.container() for _ in figures]
    for place, (name, fig) in zip(places, figures.items()):
        place.plotly_chart(for_screen(in_a_column(fig) if arrangement == SIDE else fig), key=f"translate.{name}",
                           config=CHART)
    if arrangement == SIDE:
        st.caption("Rows attend, columns are attended to; hover a cell for its tokens and weight.")
    st.markdown(
        "- **Encoder self-attention** (input × input): every input token reads every other; no mask.\n"
        "- **Decoder masked self-attention** (decoder input × decoder input): position i reads the start token "
        "and the outputs before i; the grey ✕ cells are later outputs, masked (weight exactly 0).\n"
        "- **Cross-attention** (output × input): queries from the decoder, keys and values from the encoder's "
        "last layer. Row i is where the decoder looked while writing output i; it sums to 1 over the input. "
        + ("Orange squares: the gold alignment (year digits ↔ year words, month ↔ month word, day ↔ day words); "
           "red dots: each row's most attended input." if run.gold is not None else
           "Red dots: each row's most attended input."))


# ---- alignment per head -----------------------------------------------------------------------------

@st.cache_data(show_spinner=False)
def card() -> dict:
    return json.loads(CARD.read_text(encoding="utf-8"))


def show_alignment(view: View, layer: int, head: int) -> None:
    run = view.run
    st.markdown("A cross-attention head **aligns** an output character when the input word it attends to most is "
                "one the character comes from (the dashes come from none and are not counted). The share of "
                "characters that align is the head's **alignment accuracy**.")
    left, right = st.columns(2)
    with left:
        if run.gold is None:
            st.info(no_gold_reason(view))
        else:
            accuracy = alignment_accuracy(run.cross, run.gold)
            st.plotly_chart(for_screen(alignment_accuracy_heatmap(accuracy, "On this input")), key="translate.accuracy",
                            config=CHART)
            counted = run.gold.any(-1)  # [O]: not the dashes
            hits = aligned(run.cross[layer - 1, head - 1], run.gold)[counted]
            st.markdown(f"Layer {layer}, head {head}: **{int(hits.sum())} of {hits.size}** characters look most "
                        f"at a word they come from ({hits.mean():.0%}).")
    with right:
        held_out(view)


def no_gold_reason(view: View) -> str:
    if view.translation is None:
        return ("A hub model's text has no known alignment, so nothing can be measured here: read the "
                "cross-attention for what it is, a pattern, not a checked one.")
    if not view.translation.parsed.in_grammar:
        return f"No gold alignment: {view.translation.parsed.reason}"
    return "No gold alignment: the answer does not have the 10 characters of YYYY-MM-DD."


def held_out(view: View) -> None:
    """The per-head figures on held-out dates: the shipped model's from its card, a page-trained one's
    measured now on 200."""
    choice = st.session_state.get(K["model_choice"])
    if choice not in (SHIPPED, TRAINED):
        return
    measured = card()["heldout"] if choice == SHIPPED else trained_heldout()
    where = (f"{measured['dates']:,} held-out dates (model card)" if choice == SHIPPED
             else "200 held-out dates (measured now)")  # one line in half of a 1024-px laptop's width
    st.plotly_chart(for_screen(alignment_accuracy_heatmap(np.array(measured["alignment"]), where)),
                    key="translate.heldout",
                    config=CHART)
    by_role = {role: np.array(measured["alignment_by_role"][role]) for role in ROLES}
    st.dataframe(role_table(by_role, np.array(measured["year_alignment"])), hide_index=True,
                 key="translate.roles", width="stretch")
    st.caption(f"Held-out exact match {measured['exact_match']:.1%}. Year, month, day: the share of those digits "
               "that align; whole year: the share of dates whose four year digits all align. The year is always the "
               "last words of the input, so a head that looks at the end of the input aligns the year by position "
               "alone; the month and day columns are the harder test (their place differs between the two forms). "
               "Measured with teacher forcing on the right answer.")


def role_table(by_role: dict[str, np.ndarray], year_all: np.ndarray) -> list[dict]:
    """One row per head: the share of year, month and day characters that align, and of dates whose four
    year digits all align; from [L, H] arrays."""
    layers, heads = year_all.shape
    return [{"layer": i + 1, "head": h + 1, **{role: f"{by_role[role][i, h]:.1%}" for role in ROLES},
             "whole year": f"{year_all[i, h]:.1%}"} for i in range(layers) for h in range(heads)]


def trained_heldout() -> dict:
    """The page-trained model on 200 held-out dates, measured once per trained model (kept in the session)."""
    from vizcore.seq2seq.dates import heldout_pairs
    from vizcore.seq2seq.training import evaluate, make_batch

    job, key = trained_job(), "translate.trained_heldout"
    kept = st.session_state.get(key)
    if kept is None or kept[0] is not job:
        kept = (job, evaluate(job.result.model, make_batch(heldout_pairs(200))))
        st.session_state[key] = kept
    return kept[1]
