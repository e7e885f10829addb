"""Sentence and sentence-pair classification: a pooled vector of the encoder -> dropout -> linear -> classes.

A pair is read as BERT reads it: ``[CLS] A [SEP] B [SEP]`` with segment (token type) ids 0 for the
first part and 1 for the second, so the model can tell which sentence a token belongs to. The pooled
vector is the mean over real tokens (what sentence-transformers uses) or the [CLS] token's.
Held-out figures: accuracy and macro-F1 (the unweighted mean of the classes' F1, so a small class
counts as much as a large one).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from vizcore.finetune import POOLINGS as POOLINGS  # the page reads it here, beside POOLING_LABELS
from vizcore.finetune.datasets import LabelledTexts, load_train_test
from vizcore.finetune.tasks import Batch, Task, TaskModel, collate, hidden_size, pad_id_of, register

POOLING_LABELS = {"mean": "mean of the tokens", "cls": "[CLS] token"}


def pool(hidden: torch.Tensor, mask: torch.Tensor, pooling: str) -> torch.Tensor:
    """``hidden`` (B, T, H), ``mask`` (B, T) -> (B, H): mean over real tokens, or the first token."""
    if pooling == "cls":
        return hidden[:, 0]
    weights = mask.unsqueeze(-1).to(hidden.dtype)  # (B, T, 1)
    return (hidden * weights).sum(1) / weights.sum(1).clamp(min=1.0)


class SequenceClassifier(TaskModel):
    """Encoder -> pooled (B, H) -> dropout -> linear -> logits (B, C)."""

    def __init__(self, encoder: nn.Module, num_labels: int, pooling: str = "mean", dropout: float = 0.1):
        super().__init__(encoder, nn.Linear(hidden_size(encoder), num_labels))
        self.pooling = pooling
        self.dropout = nn.Dropout(dropout)

    def pooled(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return pool(self.hidden(batch), batch["attention_mask"], self.pooling)  # (B, H)

    def from_hidden(self, hidden: torch.Tensor, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        pooled = pool(hidden, inputs["attention_mask"], self.pooling)  # (B, H)
        return self.head(self.dropout(pooled))  # (B, C)


def encode_pairs(tokenizer, texts, second, max_length: int) -> tuple[list[list[int]], list[list[int]]]:
    """Token ids and segment ids per example: ``[CLS] A [SEP]`` (segment 0) then ``B [SEP]`` (segment 1)
    when ``second`` is given; truncation shortens the longer text first."""
    if second is None:
        encoded = tokenizer(list(texts), truncation=True, max_length=max_length, verbose=False)
        return encoded["input_ids"], [[0] * len(row) for row in encoded["input_ids"]]
    encoded = tokenizer(list(texts), list(second), truncation="longest_first", max_length=max_length,
                        verbose=False, return_token_type_ids=True)
    return encoded["input_ids"], encoded["token_type_ids"]


def encode_texts(tokenizer, texts, max_length: int) -> list[list[int]]:
    """Token ids per single text, with special tokens, truncated to ``max_length``."""
    return encode_pairs(tokenizer, texts, None, max_length)[0]


def predict_proba(classifier: SequenceClassifier, tokenizer, texts, max_length: int, batch_size: int = 32,
                  second=None) -> np.ndarray:
    """Class probabilities (N, C) of the classifier in eval mode (dropout off); pairs when ``second``."""
    was_training = classifier.training
    classifier.eval()
    device = next(classifier.parameters()).device
    ids, segments = encode_pairs(tokenizer, texts, second, max_length)
    pad, out = pad_id_of(tokenizer), []
    with torch.inference_mode():
        for start in range(0, len(ids), batch_size):
            end = start + batch_size
            batch = collate(ids[start:end], pad, device, classifier.encoder, segments[start:end])
            out.append(torch.softmax(classifier(batch).float(), dim=-1).cpu().numpy())
    classifier.train(was_training)
    return np.concatenate(out) if out else np.zeros((0, classifier.head.out_features), dtype=np.float32)


def macro_f1(labels: np.ndarray, predictions: np.ndarray, num_labels: int) -> float:
    """Unweighted mean of the per-class F1 over the classes that occur in ``labels`` or ``predictions``."""
    scores = []
    for c in range(num_labels):
        true, predicted = labels == c, predictions == c
        if not true.any() and not predicted.any():
            continue
        hits = float((true & predicted).sum())
        scores.append(2 * hits / (true.sum() + predicted.sum()))
    return float(np.mean(scores)) if scores else float("nan")


class ClassificationTask(Task):
    """One label per text (``sentence``) or per pair of texts (``pair``): ``LabelledTexts`` splits."""

    metric = "accuracy"
    metric_label = "accuracy"
    extra_metrics = {"macro_f1": "macro-F1"}

    columns: dict[str, str | None] = {}  # the CLI's default columns

    def load_data(self, train: str, eval_path: str | None, seed: int, columns: dict[str, str | None]) -> Any:
        chosen = {**self.columns, **{k: v for k, v in columns.items() if v is not None}}
        return load_train_test(train, eval_path, chosen["text"], chosen["label"], seed, chosen.get("second"))

    def build(self, encoder: nn.Module, data: Any, config: Any) -> SequenceClassifier:
        return SequenceClassifier(encoder, len(data.train.label_names), config.pooling)

    def encode(self, tokenizer, split: LabelledTexts, max_length: int) -> list[dict]:
        ids, segments = encode_pairs(tokenizer, split.texts, split.second, max_length)
        return [{"ids": i, "segments": s, "label": int(y)} for i, s, y in zip(ids, segments, split.labels)]

    def collate(self, features: list[dict], pad_id: int, device, encoder: nn.Module) -> Batch:
        inputs = collate([f["ids"] for f in features], pad_id, device, encoder, [f["segments"] for f in features])
        return Batch(inputs, torch.tensor([f["label"] for f in features], device=device))

    def loss(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(outputs, targets)

    def batch_score(self, outputs: torch.Tensor, targets: torch.Tensor) -> float:
        return float((outputs.argmax(1) == targets).float().mean())

    def evaluate(self, model: SequenceClassifier, tokenizer, split: LabelledTexts, max_length: int) -> dict:
        if not len(split):
            return {"accuracy": float("nan"), "macro_f1": float("nan")}
        probs = predict_proba(model, tokenizer, split.texts, max_length, second=split.second)
        predictions = probs.argmax(1)
        return {"accuracy": float((predictions == split.labels).mean()),
                "macro_f1": macro_f1(split.labels, predictions, len(split.label_names))}


class SentenceTask(ClassificationTask):
    name = "sentence"
    title = "Sentence classification"
    columns = {"text": "text", "label": "label"}


class PairTask(ClassificationTask):
    name = "pair"
    title = "Sentence-pair classification"
    # Measured on the built-in pairs (docs/FINETUNE.md): 3 epochs at 5e-5 reach 47 % held-out accuracy,
    # 10 epochs at 5e-5 53 %, 10 epochs at 1e-4 60 % (about 4 minutes on 2 cores).
    defaults = {"max_length": 128, "epochs": 10}
    learning_rates = {"full": 1e-4}
    columns = {"text": "premise", "second": "hypothesis", "label": "label"}


SENTENCE = register(SentenceTask())
PAIR = register(PairTask())
