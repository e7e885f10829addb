"""The Fine-tuning lab's second tab: a tiny Transformer trained from scratch, its heads forming live."""

from __future__ import annotations

import streamlit as st

from ui import jobs
from ui.feedback import CHART
from ui.layout import for_screen
from vizcore.errors import VizError
from vizcore.finetune.figures import tiny_accuracy_curve, tiny_attention_grid
from vizcore.finetune.tiny import TASKS, TinyConfig, TinyJob, anti_diagonal_mass, example_digits, predict_tiny

KEY_TINY_JOB = "finetune.tiny_job"
TASK_LABELS = {"reverse": "reverse the digits", "sort": "sort the digits"}


def tiny_panel() -> None:
    st.markdown(
        "A Transformer encoder written from scratch in `vizcore/finetune/tiny.py` (multi-head attention, "
        "sinusoidal positional encoding, post-norm encoder layers, LayerNorm(x + sublayer(x)), as in the "
        "tutorials and BERT) learns a toy task in seconds. Each output position must find the right input "
        "digit, and the heads learn where to look: for **reversal**, position *i* looks at position "
        "*n − 1 − i*, the anti-diagonal.")
    config = _settings()
    left, right, _ = st.columns([2, 1, 4])
    jobs.start_stop(KEY_TINY_JOB, lambda: TinyJob(config), "Train from scratch",
                    ("finetune.tiny_train", "finetune.tiny_stop"), where=(left, right))
    jobs.live(KEY_TINY_JOB, _draw)


def _settings() -> TinyConfig:
    columns = st.columns(5)
    task = columns[0].selectbox("Task", TASKS, format_func=TASK_LABELS.get, key="finetune.tiny_task")
    length = columns[1].number_input("Digits", 4, 12, 8, key="finetune.tiny_length")
    steps = columns[2].number_input("Steps", 50, 3000, 300, step=50, key="finetune.tiny_steps")
    layers = columns[3].number_input("Layers", 1, 3, 2, key="finetune.tiny_layers")
    seed = columns[4].number_input("Seed", 0, 10_000, 0, key="finetune.tiny_seed")
    return TinyConfig(task=task, length=int(length), steps=int(steps), layers=int(layers), seed=int(seed))


def _draw(job: TinyJob) -> None:
    if job.error:
        st.error(job.error)
        return
    history = job.snapshot()
    if not history.snapshots:  # the first one is taken before step 1
        if job.finished:
            st.warning(jobs.stopped_text(job, "Stopped before its first snapshot."))
        else:
            st.progress(0.0, text="Building the model…")
        return
    total = job.config.steps
    accuracy = history.steps[-1]["sequence_accuracy"] if history.steps else 0.0
    text = f"step {job.step}/{total} · whole sequences right {accuracy:.1%}"
    if job.result is not None:
        text += f" · trained in {job.result.seconds:.1f} s" + (" (stopped)" if job.result.stopped else "")
    st.progress(min(1.0, job.step / total), text=text)
    st.altair_chart(for_screen(tiny_accuracy_curve(history.steps, total)), width="stretch", key="finetune.tiny_curve")
    right = st.container()
    snapshots = history.snapshots
    index = len(snapshots) - 1
    if job.result is not None and len(snapshots) > 1:
        steps = [step for step, _ in snapshots]
        chosen = right.select_slider("Replay: attention at step", steps, value=steps[-1], key="finetune.tiny_replay")
        index = steps.index(chosen)
    step, maps = snapshots[index]
    right.plotly_chart(for_screen(tiny_attention_grid(maps, example_digits(job.config), step)),
                       key="finetune.tiny_grid",
                       config=CHART)
    right.caption("Rows are query positions (position:digit), columns the keys they attend to; "
                  "hover a cell for its weight.")
    if job.config.task == "reverse":
        best = max(anti_diagonal_mass(maps[layer, head]) for layer in range(maps.shape[0])
                   for head in range(maps.shape[1]))
        right.caption(f"The most mirror-like head puts {best:.0%} of its attention on the mirrored position "
                      f"(chance: {1 / job.config.length:.0%}).")
    if job.result is not None:
        _try_digits(job)


def _try_digits(job: TinyJob) -> None:
    n = job.config.length
    default = " ".join(str((3 * i + 1) % 10) for i in range(n))
    text = st.text_input(f"Try {n} digits (0-9, separated by spaces)", default, key=f"finetune.tiny_try_{n}")
    try:
        digits = [int(part) for part in text.replace(",", " ").split()]
        output = predict_tiny(job.result, digits)
    except ValueError:
        st.warning(f"Type {n} digits from 0 to 9, separated by spaces.")
        return
    except VizError as error:
        st.warning(str(error))
        return
    expected = digits[::-1] if job.config.task == "reverse" else sorted(digits)
    verdict = "right" if output == expected else f"wrong (expected {' '.join(map(str, expected))})"
    st.markdown(f"Model output: **{' '.join(map(str, output))}**, {verdict}.")
