"""The Fine-tuning lab's live panel and results: drawn from the session's job, polled while it runs."""

from __future__ import annotations

import streamlit as st

from ui import jobs
from ui.feedback import CHART
from ui.state import selection
from ui.training import (
    KEY_ANALYSIS,
    KEY_JOB,
    current_job,
    data_section,
    mistakes_first,
    model_or_error,
    plain,
    progress_text,
    settings_section,
    start_job,
    stop_job,
)
from vizcore.attention.extract import extract_attention
from vizcore.errors import VizError
from vizcore.finetune.analysis import attention_change, embedding_map, evaluate, finetuned_model, predict_sentence
from vizcore.finetune.figures import confusion_heatmap, head_change_heatmap, pca_scatter, training_curves
from vizcore.finetune.training import MODE_LABELS, TrainingJob
from vizcore.plot import attention_heatmap

METRICS = {"js": "Jensen-Shannon divergence (bits)", "abs": "mean absolute difference"}


def finetune_tab() -> None:
    """Data, settings, Train/Stop, then the live panel and the results of this session's job."""
    sel = selection()
    loaded = model_or_error(sel.model, sel.device)
    if loaded is None:
        return
    data = data_section()
    config = settings_section(loaded.num_layers)
    job = current_job()
    busy = jobs.active(job)
    left, right, note = st.columns([1, 1, 5], vertical_alignment="center")
    if left.button("Train", type="primary", key="finetune.train", disabled=busy or data is None,
                   help=f"Train a copy of {loaded.name} on this data with these settings"):
        start_job(loaded, data, config)
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
        results_section()


def live_panel() -> None:
    """Place in line while waiting; then progress bar with ETA and the curves, refreshed every second."""
    jobs.live(KEY_JOB, _draw_live)


def _draw_live(job: TrainingJob) -> None:
    config = job.config
    last_n = f", N = {config.last_n}" if config.mode == "last_n" else ""
    st.subheader(f"Training: {MODE_LABELS[config.mode]}{last_n}")
    fraction, text = progress_text(job)
    st.progress(min(1.0, fraction), text=text)
    if job.status == "error":
        st.error(job.error)
    elif job.status == "stopped":
        st.warning(jobs.stopped_text(job, "Stopped: the results below are those of the partly trained model."))
    progress, history = job.snapshot()
    if progress is not None:
        st.altair_chart(training_curves(history, progress.total_steps), width="stretch", key="finetune.curves")
    st.caption(f"Learning rate {config.learning_rate:g}, {config.epochs} epoch(s), batch size {config.batch_size}, "
               f"max length {config.max_length}, seed {config.seed}; held-out accuracy is measured before "
               "training (step 0) and after every epoch.")


def _analysis(job: TrainingJob) -> dict:
    """Everything the results show, computed once per finished job and kept in this session."""
    cached = st.session_state.get(KEY_ANALYSIS)
    if cached is not None and cached["job"] is job:
        return cached
    result, test = job.result, job.data.test
    after = finetuned_model(job.loaded, result)
    with st.spinner("Measuring what changed: predictions, attention of every head, sentence vectors…"):
        analysis = {
            "job": job,
            "after": after,
            "evaluation": evaluate(result, test),
            "change": attention_change(job.loaded, after, test.texts),
            "map": embedding_map(job.loaded, after, test, result.config.pooling, result.config.max_length),
        }
    st.session_state[KEY_ANALYSIS] = analysis
    return analysis


def results_section() -> None:
    job = current_job()
    if job is None or not job.finished or job.result is None:
        return
    result = job.result
    analysis = _analysis(job)
    evaluation = analysis["evaluation"]
    st.header("Results")
    first = result.history.evals[0]["accuracy"]
    columns = st.columns(4)
    columns[0].metric("Held-out accuracy", f"{evaluation.accuracy:.1%}",
                      f"{evaluation.accuracy - first:+.1%} vs before")
    columns[1].metric("Held-out examples", len(evaluation.labels))
    columns[2].metric("Steps", f"{result.steps_done}/{result.total_steps}")
    columns[3].metric("Trained weights", f"{result.trainable_parameters:,}",
                      help=f"{result.trainable_parameters / result.total_parameters:.3%} of the classifier's "
                           f"{result.total_parameters:,} weights")
    st.caption(f"Before training (step 0), the new head guessed at random: {first:.1%}. "
               f"Training took {result.seconds:.0f} s.")
    left, right = st.columns([2, 3])
    left.plotly_chart(confusion_heatmap(evaluation.confusion, evaluation.label_names), key="finetune.confusion",
                      config=CHART)
    with right:
        _try_sentence(result)
    _examples_table(evaluation)
    _attention_changes(job, analysis)
    _embeddings(job, analysis)


def _try_sentence(result) -> None:
    st.subheader("Try your own sentence")
    text = st.text_input("Sentence", "The staff were friendly, but the food was cold.", key="finetune.try")
    try:
        probabilities = predict_sentence(result, text)
    except VizError as error:
        st.warning(str(error))
        return
    best = max(probabilities, key=probabilities.get)
    st.markdown(f"Prediction: **{plain(best)}** ({probabilities[best]:.1%})")
    for name, value in sorted(probabilities.items(), key=lambda item: -item[1]):
        st.progress(value, text=f"{name}: {value:.1%}")


def _examples_table(evaluation) -> None:
    st.subheader("Every held-out example")
    table = mistakes_first(evaluation.records())
    only_wrong = st.checkbox(f"Only the {int((table['correct'] == '✗').sum())} mistakes", key="finetune.only_wrong")
    if only_wrong:
        table = table[table["correct"] == "✗"]
    st.dataframe(table, hide_index=True, width="stretch", key="finetune.examples", column_config={
        "text": st.column_config.TextColumn("text", width="large"),
        "confidence": st.column_config.ProgressColumn("confidence", min_value=0.0, max_value=1.0, format="percent"),
        "correct": st.column_config.TextColumn("correct", width="small"),
    })


def _attention_changes(job: TrainingJob, analysis: dict) -> None:
    change = analysis["change"]
    st.subheader("Which attention heads changed?")
    metric = st.radio("Change measured as", list(METRICS), format_func=METRICS.get, horizontal=True,
                      key="finetune.metric")
    values = change.js if metric == "js" else change.mean_abs_diff
    st.plotly_chart(head_change_heatmap(values, "JS (bits)" if metric == "js" else "mean |Δ|",
                                        f"Change of each head's attention, mean over {change.sentences} held-out "
                                        "sentences"), key="finetune.change", config=CHART)
    st.caption("For each sentence and head, the attention row of every query token before and after is compared "
               "(Jensen-Shannon divergence: 0 = the same distribution, 1 = no overlap), then averaged. "
               "Head-only training leaves every head unchanged, which this map shows as all zeros.")
    if float(values.max()) == 0.0:
        st.info("No head changed: with a frozen encoder only the classifier head learns, so every attention "
                "weight is exactly what it was. Train the last N layers or the full model to see heads move.")
        return
    top = change.top_heads(3, "js" if metric == "js" else "abs")
    labels = [f"layer {layer + 1}, head {head + 1} ({value:.3f})" for layer, head, value in top]
    left, right = st.columns(2)
    choice = left.radio("Most-changed heads", range(len(top)), format_func=lambda i: labels[i], horizontal=True,
                        key="finetune.top_head")
    texts = list(job.data.test.texts)
    text = right.selectbox("Sentence", texts, key="finetune.sentence")
    layer, head, _ = top[choice]
    before = extract_attention(job.loaded, text)
    after = extract_attention(analysis["after"], text)
    columns = st.columns(2)
    for column, result, when in ((columns[0], before, "before"), (columns[1], after, "after")):
        column.plotly_chart(attention_heatmap(result.attention[layer, head], result.tokens,
                                              title=f"{when} fine-tuning · layer {layer + 1}, head {head + 1}"),
                            key=f"finetune.head_{when}", config=CHART)


def _embeddings(job: TrainingJob, analysis: dict) -> None:
    emap = analysis["map"]
    test = job.data.test
    st.subheader("Where the held-out sentences sit")
    st.plotly_chart(pca_scatter(emap.before, emap.after, test.labels, test.label_names, test.texts,
                                (emap.explained_before, emap.explained_after)), key="finetune.pca", config=CHART)
    st.caption(f"Each dot is a held-out sentence's pooled vector (the classifier's input), projected on its "
               f"first two principal components. Class separation (between-class over within-class spread "
               f"in the full space): {emap.separation_before:.2f} before, {emap.separation_after:.2f} after.")

