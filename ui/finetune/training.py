"""The Fine-tuning lab's settings and its job: the built-in data and CSVs (cached), the settings widgets, and
starting, stopping and describing this session's training job (also read by the Why? page).

The training job (``vizcore.finetune.TrainingJob``) lives in this session's state and trains its own
copy of the model in a background thread. It goes through the server's one job queue (``ui/jobs.py``):
a server-wide cap on running jobs keeps the server usable when a whole class presses Train, and the
others wait in line, seeing their place.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from ui import jobs
from vizcore.errors import VizError
from vizcore.finetune.classify import POOLING_LABELS, POOLINGS
from vizcore.finetune.datasets import TrainTestData, builtin_data, read_csv_bytes
from vizcore.finetune.tasks import Task
from vizcore.finetune.training import MODE_LABELS, MODES, FinetuneConfig, TrainingJob, default_lr, task_config
from vizcore.model.loading import LoadedModel

KEY_JOB = "finetune.job"
KEY_ANALYSIS = "finetune.analysis"


@st.cache_data(show_spinner=False, max_entries=2)
def get_builtin_data(kind: str = "sentence") -> TrainTestData:
    return builtin_data(kind)


@st.cache_data(show_spinner="Reading the CSV…", max_entries=4)
def get_csv_frame(payload: bytes, name: str) -> pd.DataFrame:
    return read_csv_bytes(payload, name)


INPUT_PX = 168  # the widest label, "Max length (tokens)", on one line with its help icon


def _key(task: Task, name: str) -> str:
    """Settings a task sets otherwise (``task.defaults``) keep a value per task; the rest is shared."""
    return f"finetune.{task.name}.{name}" if name in task.defaults else f"finetune.{name}"


def settings_section(num_layers: int, task: Task) -> FinetuneConfig:
    defaults = task_config(task)
    mode = st.radio("What to train", MODES, format_func=MODE_LABELS.get, horizontal=True, key="finetune.mode",
                    help="Head only: the encoder is frozen and only the task's small head learns. Full: every "
                         "weight moves (the usual recipe, learning rate 2e-5 to 5e-5).")
    # Inputs as wide as their labels, wrapping onto a second row on a narrow screen (six columns broke the
    # labels inside words at 1024 px: "Learnin g rate")
    with st.container(horizontal=True, wrap=True):
        last_n = st.number_input("N (last layers)", 1, num_layers, min(2, num_layers), key="finetune.last_n",
                                 disabled=mode != "last_n", width=INPUT_PX)
        own = f"finetune.{task.name}.lr_{mode}" if mode in task.learning_rates else f"finetune.lr_{mode}"
        lr = st.number_input("Learning rate", 1e-6, 1.0, default_lr(task, mode), format="%.0e", key=own,
                             width=INPUT_PX, help="Each mode keeps its own value; default for this task " + ", ".join(
                                 f"{MODE_LABELS[m].split(' (')[0]} {default_lr(task, m):g}" for m in MODES))
        epochs = st.number_input("Epochs", 1, 100, defaults.epochs, key=_key(task, "epochs"), width=INPUT_PX)
        batch = st.number_input("Batch size", 1, 512, defaults.batch_size, key=_key(task, "batch_size"),
                                width=INPUT_PX)
        length = st.number_input("Max length (tokens)", 8, 512, defaults.max_length, key=_key(task, "max_length"),
                                 width=INPUT_PX,
                                 help=f"Longer inputs are cut; default for this task {defaults.max_length}")
        seed = st.number_input("Seed", 0, 2**31 - 1, 0, key="finetune.seed", width=INPUT_PX)
    pooling = defaults.pooling
    if task.name in ("sentence", "pair"):
        pooling = st.radio("Sentence vector (what the classifier reads)", POOLINGS, format_func=POOLING_LABELS.get,
                           horizontal=True, key="finetune.pooling",
                           help="Mean: the average of the last layer's token vectors (what sentence-transformers "
                                "uses). [CLS]: the first token's vector, BERT's original recipe.")
    return task_config(task, mode=mode, last_n=int(last_n), lr=float(lr), epochs=int(epochs), batch_size=int(batch),
                       max_length=int(length), seed=int(seed), pooling=pooling)


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


def start_job(loaded: LoadedModel, data: Any, config: FinetuneConfig, task: Task) -> None:
    """Queue this session's job (replacing an ended one); it starts when the server has a free slot."""
    if jobs.active(current_job()):
        st.warning("This session already has a fine-tuning run: stop it first.")
        return
    try:
        jobs.submit(KEY_JOB, TrainingJob(loaded, data, config, task=task))
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
    if progress.eval_score is not None:
        parts.append(f"held-out {progress.metric_label} {progress.eval_score:.1%}")
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
