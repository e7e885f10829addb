"""The Translate page's last tab: the date translator trained from scratch as a background job, watched live."""

from __future__ import annotations

import numpy as np
import streamlit as st

from ui import jobs
from ui.feedback import CHART
from ui.layout import for_screen
from ui.seq2seq.page import KEY_JOB, TRAINED, K, reset_step, trained_job
from vizcore.seq2seq.alignment import alignment_accuracy
from vizcore.seq2seq.dates import START, gold_alignment, parse_date
from vizcore.seq2seq.figures import alignment_accuracy_heatmap, cross_attention_heatmap, training_curves
from vizcore.seq2seq.record import Seq2SeqRun
from vizcore.seq2seq.training import EXAMPLE, DateJob, DateTrainConfig

T = {name: f"translate.train_{name}" for name in ("steps", "batch", "seed", "head", "layer", "replay")}


def panel() -> None:
    st.markdown(
        "The same model as the shipped one (post-norm, sinusoidal positions, 2 encoder layers, 1 decoder layer, "
        "4 heads, d_model 64), from random weights. Each step draws a fresh batch of generated dates (never a "
        "held-out one) and learns the right characters with teacher forcing. The curves show the training loss "
        "and the exact match on 200 held-out dates; on the right, the cross-attention of "
        f"*{EXAMPLE}* as it forms. 1,200 steps, 64 dates a batch, seed 0 is the shipped model's recipe.")
    config = settings()
    with st.container(horizontal=True):
        busy = jobs.start_stop(KEY_JOB, lambda: DateJob(config), "Train from scratch",
                               ("translate.train", "translate.stop"))
        if not busy and trained_job() is not None:
            st.button("Use the trained model above", key="translate.use_trained", on_click=use_trained,
                      help="Chooses it in the Model menu at the top; the shipped translator stays there too.")
    jobs.live(KEY_JOB, draw)


def use_trained() -> None:
    st.session_state[K["model_choice"]] = TRAINED
    reset_step()


def settings() -> DateTrainConfig:
    left, middle, right = st.columns(3)
    steps = int(left.number_input("Steps", 10, 3000, 600, step=50, key=T["steps"],
                                  help="The shipped model's held-out exact match passed 98% at step 200."))
    batch = int(middle.number_input("Dates per batch", 8, 256, 64, step=8, key=T["batch"]))
    seed = int(right.number_input("Seed", 0, 10_000, 0, key=T["seed"]))
    every = max(5, steps // 20)  # about 20 points on the curves and 20 snapshots to replay
    return DateTrainConfig(steps=steps, batch_size=batch, seed=seed, warmup=min(100, steps // 5),
                           eval_every=every, snapshot_every=every)


def draw(job: DateJob) -> None:
    if job.error:
        st.error(job.error)
        return
    history = job.snapshot()
    if not history.snapshots:  # the first is taken before step 1
        if job.finished:
            st.warning(jobs.stopped_text(job, "Stopped before its first snapshot."))
        else:
            st.progress(0.0, text="Building the model…")
        return
    total, last = job.config.steps, history.steps[-1] if history.steps else None
    text = f"step {job.step:,}/{total:,}"
    if last is not None:
        text += f" · loss {last['loss']:.3f} · held-out exact match {last['exact_match']:.0%}"
    if job.result is not None:
        text += f" · trained in {job.result.seconds:.1f} s" + (" (stopped)" if job.result.stopped else "")
    st.progress(min(1.0, job.step / total), text=text)
    left, right = st.columns(2)
    steps = [s["step"] for s in history.steps]
    curves = training_curves(steps, [s["loss"] for s in history.steps], steps,
                             [s["exact_match"] for s in history.steps], "Loss and held-out exact match")
    left.plotly_chart(for_screen(curves), key="translate.curves", config=CHART)
    with right:
        show_snapshot(job, history.snapshots)


def show_snapshot(job: DateJob, snapshots: list[tuple[int, np.ndarray]]) -> None:
    """The fixed example's cross-attention at the newest snapshot (any one to replay once the run has ended)."""
    index = len(snapshots) - 1
    if job.finished and len(snapshots) > 1:
        taken = [step for step, _ in snapshots]
        if st.session_state.get(T["replay"]) not in taken:  # a step of an earlier run
            st.session_state.pop(T["replay"], None)
        index = taken.index(st.select_slider("Replay: the cross-attention at step", taken, value=taken[-1],
                                             key=T["replay"]))
    step, cross = snapshots[index]
    run = example_run(cross)
    layers, heads = cross.shape[:2]
    columns = st.columns(2)
    head = int(columns[0].radio("Head", range(1, heads + 1), key=T["head"], horizontal=True))
    layer = int(columns[1].radio("Decoder layer", range(1, layers + 1), key=T["layer"], horizontal=True)
                if layers > 1 else 1)
    fig = cross_attention_heatmap(run, layer - 1, head - 1)
    fig.update_layout(title_text=f"Step {step:,}: cross-attention · layer {layer}, head {head}")
    st.plotly_chart(for_screen(fig), key="translate.train_cross", config=CHART)
    st.plotly_chart(for_screen(alignment_accuracy_heatmap(alignment_accuracy(cross, run.gold),
                                                          f"Step {step:,}: alignment accuracy on this example")),
                    key="translate.train_accuracy", config=CHART)


def example_run(cross: np.ndarray) -> Seq2SeqRun:
    """A record around a snapshot: the fixed example with its right answer; only the cross-attention was kept
    (the other two have no layers here)."""
    parsed = parse_date(EXAMPLE)
    tokens, outputs = list(parsed.tokens), list(parsed.iso)
    n, o = len(tokens), len(outputs)
    return Seq2SeqRun(model="training", text=EXAMPLE, input_tokens=tokens, decoder_tokens=[START] + outputs[:-1],
                      output_tokens=outputs, encoder=np.zeros((0, 0, n, n), np.float32),
                      decoder=np.zeros((0, 0, o, o), np.float32), cross=cross, gold=gold_alignment(parsed))
