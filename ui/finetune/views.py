"""The Fine-tuning lab's task tab: which task, its data, the shared settings, Train/Stop, the live panel
and the results of this session's job (polled while it runs).

Each task's own data and results live in one module beside this one (``task_ui()``): classify.py
(sentence, pair), token.py, qa.py; what every task shares (curves, the headline figures, which attention
heads changed) is here, the settings and the job in training.py.
"""

from __future__ import annotations

import streamlit as st

from ui import jobs
from ui.feedback import CHART
from ui.finetune import qa, token
from ui.finetune.classify import PAIR_UI, SENTENCE_UI
from ui.finetune.training import (
    KEY_ANALYSIS,
    KEY_JOB,
    current_job,
    model_or_error,
    progress_text,
    settings_section,
    start_job,
    stop_job,
)
from ui.layout import for_screen
from ui.state import selection
from vizcore.attention.extract import extract_attention
from vizcore.finetune.analysis import attention_change, finetuned_model
from vizcore.finetune.figures import head_change_heatmap, training_curves
from vizcore.finetune.tasks import get_task, task_names
from vizcore.finetune.training import MODE_LABELS, TrainingJob
from vizcore.plot import attention_heatmap

METRICS = {"js": "Jensen-Shannon divergence (bits)", "abs": "mean absolute difference"}
KEY_TASK = "finetune.task"
TASK_HELP = {
    "sentence": "one label per sentence (sentiment)",
    "pair": "one label per pair of sentences (entailment / neutral / contradiction)",
    "token": "a tag per word (named entities: people, places, organisations)",
    "qa": "the answer's span in a passage (extractive question answering)",
}


def task_ui() -> dict[str, object]:
    """Task name -> its UI (``data_section()``, ``results_section(result, data)``, optionally
    ``attention_inputs(data) -> (texts, pairs or None)``), in the order of the registry."""
    found = {"sentence": SENTENCE_UI, "pair": PAIR_UI, "token": token, "qa": qa}
    return {name: found[name] for name in task_names()}


def finetune_tab() -> None:
    """Task, data, settings, Train/Stop, then the live panel and the results of this session's job."""
    sel = selection()
    loaded = model_or_error(sel.model, sel.device)
    if loaded is None:
        return
    uis = task_ui()
    name = st.radio("Task", list(uis), format_func=lambda n: get_task(n).title, horizontal=True, key=KEY_TASK,
                    captions=[TASK_HELP.get(n, "") for n in uis])
    task = get_task(name)
    data = uis[name].data_section()
    config = settings_section(loaded.num_layers, task)
    job = current_job()
    busy = jobs.active(job)
    left, right, note = st.columns([1, 1, 5], vertical_alignment="center")
    if left.button("Train", type="primary", key="finetune.train", disabled=busy or data is None,
                   help=f"Train a copy of {loaded.name} for {task.title.lower()} on this data with these settings"):
        start_job(loaded, data, config, task)
        job = current_job()
        busy = jobs.active(job)
    right.button("Stop", key="finetune.stop", disabled=not busy, on_click=stop_job,
                 help="Ends after the current step and keeps the partly trained model; a run still "
                      "waiting in line leaves the line")
    note.caption("Training runs in the background on one CPU core (or the GPU), so the rest of the "
                 "app stays usable; a full run of the default model takes a few minutes. Runs of every "
                 "user share one line, and a run ends when its tab is closed.")
    if job is not None:
        live_panel()
        results_section(uis)


def live_panel() -> None:
    """Place in line while waiting; then progress bar with ETA and the curves, refreshed every second."""
    jobs.live(KEY_JOB, _draw_live)


def _draw_live(job: TrainingJob) -> None:
    config = job.config
    last_n = f", N = {config.last_n}" if config.mode == "last_n" else ""
    st.subheader(f"Training {job.task.title.lower()}: {MODE_LABELS[config.mode]}{last_n}")
    fraction, text = progress_text(job)
    st.progress(min(1.0, fraction), text=text)
    if job.status == "error":
        st.error(job.error)
    elif job.status == "stopped":
        st.warning(jobs.stopped_text(job, "Stopped: the results below are those of the partly trained model."))
    progress, history = job.snapshot()
    if progress is not None:
        st.altair_chart(for_screen(training_curves(history, progress.total_steps)), width="stretch",
                        key="finetune.curves")
    st.caption(f"Learning rate {config.learning_rate:g}, {config.epochs} epoch(s), batch size {config.batch_size}, "
               f"max length {config.max_length}, seed {config.seed}; the held-out {job.task.metric_label} is "
               "measured before training (step 0) and after every epoch.")


def _after(job: TrainingJob):
    """The fine-tuned encoder and how each head's attention changed, once per finished job."""
    cached = st.session_state.get(KEY_ANALYSIS)
    if cached is not None and cached["job"] is job:
        return cached
    texts, pairs = _attention_inputs(job)
    after = finetuned_model(job.loaded, job.result)
    with st.spinner("Measuring how the attention of every head changed…"):
        analysis = {"job": job, "after": after, "texts": texts, "pairs": pairs,
                    "change": attention_change(job.loaded, after, texts, pairs=pairs)}
    st.session_state[KEY_ANALYSIS] = analysis
    return analysis


def _attention_inputs(job: TrainingJob) -> tuple[list[str], list[str] | None]:
    ui = task_ui().get(job.task.name)
    if hasattr(ui, "attention_inputs"):
        return ui.attention_inputs(job.data)
    test = job.data.test
    return list(test.texts), None if getattr(test, "second", None) is None else list(test.second)


def results_section(uis: dict[str, object]) -> None:
    job = current_job()
    if job is None or not job.finished or job.result is None:
        return
    result, task = job.result, job.task
    st.header("Results")
    first, last = result.history.evals[0]["score"], result.final_score
    extras = [(label, result.history.evals[0].get(key), result.scores.get(key))
              for key, label in task.extra_metrics.items()]
    columns = iter(st.columns(4 + len(extras)))
    next(columns).metric(f"Held-out {task.metric_label}", f"{last:.1%}", f"{last - first:+.1%} vs before")
    for label, before, after in extras:
        delta = f"{after - before:+.3f} vs before" if before is not None and after is not None else None
        next(columns).metric(f"Held-out {label}", "–" if after is None else f"{after:.3f}", delta)
    next(columns).metric("Held-out examples", len(job.data.test))
    next(columns).metric("Steps", f"{result.steps_done}/{result.total_steps}")
    trained = result.trainable_parameters
    next(columns).metric("Trained weights", f"{trained:,}" if trained < 100_000 else f"{trained / 1e6:.1f} M",
                         help=f"{trained:,} weights: {trained / result.total_parameters:.3%} of the model's "
                              f"{result.total_parameters:,}")
    st.caption(f"Before training (step 0), with its new untrained head: {first:.1%}. "
               f"Training took {result.seconds:.0f} s.")
    uis[task.name].results_section(result, job.data)
    analysis = _after(job)
    if hasattr(uis[task.name], "vectors_section"):  # token and QA; classification draws its own in results
        uis[task.name].vectors_section(job, analysis["after"])
    _attention_changes(job, analysis)


def _attention_changes(job: TrainingJob, analysis: dict) -> None:
    change = analysis["change"]
    st.subheader("Which attention heads changed?")
    metric = st.radio("Change measured as", list(METRICS), format_func=METRICS.get, horizontal=True,
                      key="finetune.metric")
    values = change.js if metric == "js" else change.mean_abs_diff
    figure = head_change_heatmap(values, "JS (bits)" if metric == "js" else "mean |Δ|",
                                 f"Change of each head's attention, mean over {change.sentences} held-out examples")
    st.plotly_chart(for_screen(figure), key="finetune.change", config=CHART)
    st.caption("For each example and head, the attention row of every query token before and after is compared "
               "(Jensen-Shannon divergence: 0 = the same distribution, 1 = no overlap), then averaged. "
               "Head-only training leaves every head unchanged, which this map shows as all zeros.")
    if float(values.max()) == 0.0:
        st.info("No head changed: with a frozen encoder only the task's head learns, so every attention "
                "weight is exactly what it was. Train the last N layers or the full model to see heads move.")
        return
    top = change.top_heads(3, "js" if metric == "js" else "abs")
    labels = [f"layer {layer + 1}, head {head + 1} ({value:.3f})" for layer, head, value in top]
    left, right = st.columns(2)
    choice = left.radio("Most-changed heads", range(len(top)), format_func=lambda i: labels[i], horizontal=True,
                        key="finetune.top_head")
    texts, pairs = analysis["texts"], analysis["pairs"]
    shown = texts if pairs is None else [f"{a} | {b}" for a, b in zip(texts, pairs)]
    index = right.selectbox("Example", range(len(shown)), format_func=lambda i: shown[i][:120],
                            key="finetune.sentence")
    layer, head, _ = top[choice]
    pair = None if pairs is None else pairs[index]
    before = extract_attention(job.loaded, texts[index], pair)
    after = extract_attention(analysis["after"], texts[index], pair)
    columns = st.columns(2)
    for column, result, when in ((columns[0], before, "before"), (columns[1], after, "after")):
        figure = attention_heatmap(result.attention[layer, head], result.tokens,
                                   title=f"{when} fine-tuning · layer {layer + 1}, head {head + 1}")
        column.plotly_chart(for_screen(figure), key=f"finetune.head_{when}", config=CHART)
