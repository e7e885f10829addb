"""Training speed of our fine-tuning loop vs a plain transformers loop, and what the CLI reaches.

Run: ``.venv/bin/python -m bench.finetune`` (``make bench``). Writes its section of docs/BENCHMARKS.md.
Both loops train all-MiniLM-L6-v2 with a 2-label head on the same batches of the built-in set
(batch 16, AdamW lr 5e-5, dynamic padding, CPU), in the same process, alternating, median of
``REPEATS`` runs of ``STEPS`` steps each (after a warm-up step):

* ours: ``vizcore.finetune.training.train_classifier`` (deep copy of the shared model, mean pooling, clipping,
  schedule), timed between step reports so its evaluations are not counted;
* plain: ``AutoModelForSequenceClassification`` + ``tokenizer(padding=True)`` + AdamW, the loop of
  the transformers docs.
"""

from __future__ import annotations

import statistics
import time

import numpy as np
import torch

from bench.report import load_note, machine, markdown_table, write_section
from vizcore.finetune.datasets import LabelledTexts, TrainTestData, builtin_data
from vizcore.finetune.training import FinetuneConfig, train_classifier
from vizcore.model.loading import BUILTIN_MODELS, DEFAULT_MODEL, load_model

STEPS = 12
BATCH = 16
REPEATS = 3


def our_steps_per_second(loaded, data: TrainTestData) -> float:
    times: list[float] = []
    config = FinetuneConfig(mode="full", lr=5e-5, epochs=1, batch_size=BATCH, max_length=64, seed=0)
    # One epoch of exactly STEPS + 1 batches: the first is the warm-up.
    subset = data.train.subset(np.arange(BATCH * (STEPS + 1)))
    small = TrainTestData(subset, LabelledTexts(data.test.texts[:2], data.test.labels[:2], data.test.label_names),
                          data.source, data.split_note)

    def on_progress(progress) -> None:
        if progress.loss is not None:
            times.append(time.perf_counter())

    train_classifier(loaded, small, config, on_progress=on_progress)
    return (len(times) - 1) / (times[-1] - times[0])


def plain_steps_per_second(folder: str, data: TrainTestData) -> float:
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder, num_labels=2, attn_implementation="eager")
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
    texts, labels = list(data.train.texts), torch.as_tensor(data.train.labels)
    stamps = []
    for step in range(STEPS + 1):
        chunk = slice(step * BATCH, (step + 1) * BATCH)
        batch = tokenizer(texts[chunk], padding=True, truncation=True, max_length=64, return_tensors="pt")
        loss = model(**batch, labels=labels[chunk]).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        stamps.append(time.perf_counter())
    return STEPS / (stamps[-1] - stamps[0])


def main() -> None:
    data = builtin_data()
    loaded = load_model(DEFAULT_MODEL, device="cpu")
    folder = str(BUILTIN_MODELS[DEFAULT_MODEL].source())
    ours, plain = [], []
    for _ in range(REPEATS):
        ours.append(our_steps_per_second(loaded, data))
        plain.append(plain_steps_per_second(folder, data))
    o, p = statistics.median(ours), statistics.median(plain)
    rows = [[i + 1, f"{a:.3f}", f"{b:.3f}", f"{a / b:.2f}"] for i, (a, b) in enumerate(zip(ours, plain))]
    rows.append(["median", f"{o:.3f}", f"{p:.3f}", f"{o / p:.2f}"])
    body = (
        "## Fine-tuning loop speed (bench/finetune.py)\n\n"
        f"all-MiniLM-L6-v2, full fine-tuning, batch {BATCH}, AdamW lr 5e-5, {STEPS} timed steps after a "
        f"warm-up, CPU; {machine()}; {load_note()}"
        + ". Ours = `train_classifier` (deep copy, mean pooling, gradient "
        "clipping, linear schedule); plain = `AutoModelForSequenceClassification` + AdamW. Ratio > 1 means "
        "our loop is faster.\n\n"
        + markdown_table(["run", "ours (steps/s)", "plain transformers (steps/s)", "ratio ours/plain"], rows)
    )
    print(body)
    write_section("finetune", body)


if __name__ == "__main__":
    main()
