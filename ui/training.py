"""Streamlit side of the Fine-tuning lab: data and settings widgets, the live training panel, results.

The training job (``vizcore.finetune.TrainingJob``) lives in this session's state and trains its own
copy of the model in a background thread. It goes through the server's one job queue (``ui/jobs.py``):
a server-wide cap on running jobs keeps the server usable when a whole class presses Train, and the
others wait in line, seeing their place.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import streamlit as st

from ui import jobs
from vizcore.errors import VizError
from vizcore.finetune.datasets import (
    MAX_BYTES,
    MAX_ROWS,
    TrainTestData,
    builtin_data,
    frame_to_train_test,
    read_csv_bytes,
)
from vizcore.finetune.training import DEFAULT_LR, MODE_LABELS, MODES, FinetuneConfig, TrainingJob
from vizcore.model.loading import LoadedModel

KEY_JOB = "finetune.job"
KEY_ANALYSIS = "finetune.analysis"


@st.cache_data(show_spinner=False, max_entries=1)
def get_builtin_data() -> TrainTestData:
    return builtin_data()


@st.cache_data(show_spinner="Reading the CSV…", max_entries=4)
def get_csv_frame(payload: bytes, name: str) -> pd.DataFrame:
    return read_csv_bytes(payload, name)


def plain(text: str) -> str:
    """User text (CSV labels) for st.markdown: markdown and HTML characters shown as themselves."""
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|<>~$])", r"\\\1", str(text))


def data_section() -> TrainTestData | None:
    """Built-in set or an uploaded CSV with chosen columns; shows counts. None (with a message) if unusable."""
    source = st.radio("Data", ["Built-in sentiment set", "Upload a CSV"], horizontal=True, key="finetune.source")
    if source == "Built-in sentiment set":
        data = get_builtin_data()
        st.caption("436 short English sentences written for this project (food, films, travel, products, "
                   "weather, service, work), labelled negative/positive, with a fixed held-out split.")
    else:
        data = _uploaded_data()
        if data is None:
            return None
    counts = ", ".join(f"{plain(name)} {n}" for name, n in data.train.counts().items())
    st.markdown(f"**{len(data.train)} training** ({counts}) and **{len(data.test)} held-out** examples; "
                f"held out by {data.split_note}.")
    if data.train.dropped_empty:
        st.warning(f"{data.train.dropped_empty} row(s) with an empty text or label were skipped.")
    return data


def _uploaded_data() -> TrainTestData | None:
    upload = st.file_uploader(
        f"CSV with a header row (UTF-8, at most {MAX_BYTES // 1_000_000} MB and {MAX_ROWS:,} rows); a column "
        "'split' with train/test values sets the held-out set, otherwise 20 % of each label is held out",
        type=["csv"], key="finetune.upload")
    if upload is None:
        st.info("Upload a CSV to continue, or pick the built-in set.")
        return None
    try:
        frame = get_csv_frame(upload.getvalue(), upload.name)
    except VizError as error:
        st.error(str(error))
        return None
    columns = list(frame.columns)
    left, right = st.columns(2)
    text_column = left.selectbox("Text column", columns, index=_guess(columns, ("text", "sentence", "review")),
                                 key="finetune.text_column")
    label_column = right.selectbox("Label column", columns,
                                   index=_guess(columns, ("label", "sentiment", "class", "target"), fallback=1),
                                   key="finetune.label_column")
    try:
        return frame_to_train_test(frame, text_column, label_column, upload.name)
    except VizError as error:
        st.error(str(error))
        return None


def _guess(columns: list[str], names: tuple[str, ...], fallback: int = 0) -> int:
    lowered = [c.lower() for c in columns]
    for name in names:
        if name in lowered:
            return lowered.index(name)
    return min(fallback, len(columns) - 1)


def settings_section(num_layers: int) -> FinetuneConfig:
    mode = st.radio("What to train", MODES, format_func=MODE_LABELS.get, horizontal=True, key="finetune.mode",
                    help="Head only: the encoder is frozen and only a linear layer on the sentence vector "
                         "learns. Full: every weight moves (the usual recipe, learning rate 2e-5 to 5e-5).")
    columns = st.columns(6)
    last_n = columns[0].number_input("N (last layers)", 1, num_layers, min(2, num_layers), key="finetune.last_n",
                                     disabled=mode != "last_n")
    lr = columns[1].number_input("Learning rate", 1e-6, 1.0, DEFAULT_LR[mode], format="%.0e",
                                 key=f"finetune.lr_{mode}", help="Each mode keeps its own value; default "
                                 + ", ".join(f"{MODE_LABELS[m].split(' (')[0]} {v:g}" for m, v in DEFAULT_LR.items()))
    epochs = columns[2].number_input("Epochs", 1, 100, 3, key="finetune.epochs")
    batch = columns[3].number_input("Batch size", 1, 512, 16, key="finetune.batch_size")
    length = columns[4].number_input("Max length (tokens)", 8, 512, 64, key="finetune.max_length")
    seed = columns[5].number_input("Seed", 0, 2**31 - 1, 0, key="finetune.seed")
    return FinetuneConfig(mode=mode, last_n=int(last_n), lr=float(lr), epochs=int(epochs), batch_size=int(batch),
                          max_length=int(length), seed=int(seed))


def model_or_error(name: str, device: str) -> LoadedModel | None:
    """The shared model (read only), or None after showing why it cannot be loaded."""
    from ui.state import get_model

    try:
        return get_model(name, device)
    except VizError as error:
        st.error(str(error))
        return None


def current_job() -> TrainingJob | None:
    return jobs.current(KEY_JOB)


def start_job(loaded: LoadedModel, data: TrainTestData, config: FinetuneConfig) -> None:
    """Queue this session's job (replacing an ended one); it starts when the server has a free slot."""
    if jobs.active(current_job()):
        st.warning("This session already has a fine-tuning run: stop it first.")
        return
    try:
        jobs.submit(KEY_JOB, TrainingJob(loaded, data, config))
    except VizError as error:
        st.error(str(error))
        return
    st.session_state.pop(KEY_ANALYSIS, None)


def stop_job() -> None:
    jobs.stop(KEY_JOB)


def progress_text(job: TrainingJob) -> tuple[float, str]:
    progress, _ = job.snapshot()
    if progress is None:
        if job.finished:
            return 0.0, "Ended before the first measurement."
        return 0.0, "Copying the model and measuring the held-out set before training…"
    parts = [f"step {progress.step}/{progress.total_steps}", f"epoch {progress.epoch}/{progress.epochs}"]
    if progress.loss is not None:
        parts.append(f"loss {progress.loss:.3f}")
    if progress.eval_accuracy is not None:
        parts.append(f"held-out accuracy {progress.eval_accuracy:.1%}")
    parts.append(f"{_clock(progress.elapsed_s)} elapsed")
    if progress.eta_s is not None and job.running:
        parts.append(f"about {_clock(progress.eta_s)} left")
    return progress.fraction, " · ".join(parts)


def _clock(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 60}:{seconds % 60:02d}"


def mistakes_first(records: list[dict]) -> pd.DataFrame:
    table = pd.DataFrame(records)
    table["correct"] = np.where(table["correct"], "✓", "✗")
    return table.sort_values(["correct", "confidence"], ascending=[False, False], kind="stable")
