"""What fine-tuning did: held-out accuracy, confusion matrix, per-example predictions, a sentence's
prediction, how each attention head changed, and pooled embeddings before/after (PCA).

"Before" is the shared, untouched encoder (read only, under ``inference_mode``); "after" is the
session's fine-tuned copy. Every function returns numpy arrays or plain records.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from vizcore.datasets import LabelledTexts
from vizcore.finetune import FinetuneResult, collate, encode_texts, pad_id_of, pool, predict_proba


@dataclass(frozen=True)
class Evaluation:
    """Predictions on a labelled set. ``confusion[i, j]`` counts true label i predicted as j."""

    label_names: tuple[str, ...]
    labels: np.ndarray  # int [N]
    probabilities: np.ndarray  # float32 [N, C]
    texts: tuple[str, ...]

    @property
    def predictions(self) -> np.ndarray:
        return self.probabilities.argmax(1)

    @property
    def accuracy(self) -> float:
        return float((self.predictions == self.labels).mean()) if len(self.labels) else float("nan")

    @property
    def confusion(self) -> np.ndarray:
        size = len(self.label_names)
        return np.bincount(self.labels * size + self.predictions, minlength=size * size).reshape(size, size)

    def records(self) -> list[dict]:
        """One row per example: text, label, prediction, confidence (probability of the prediction)."""
        rows = []
        for text, label, probs in zip(self.texts, self.labels, self.probabilities):
            predicted = int(probs.argmax())
            rows.append({"text": text, "label": self.label_names[label],
                         "prediction": self.label_names[predicted], "confidence": float(probs[predicted]),
                         "correct": bool(predicted == label)})
        return rows

    def to_dict(self) -> dict:
        return {"accuracy": self.accuracy, "label_names": list(self.label_names),
                "confusion": self.confusion.tolist(), "examples": int(len(self.labels)),
                "confusion_axes": "[true label][predicted label]"}


def evaluate(result: FinetuneResult, data: LabelledTexts) -> Evaluation:
    probs = predict_proba(result.classifier, result.tokenizer, data.texts, result.config.max_length)
    return Evaluation(result.label_names, np.asarray(data.labels), probs.astype(np.float32), tuple(data.texts))


def predict_sentence(result: FinetuneResult, text: str) -> dict[str, float]:
    """Label name -> probability for one sentence."""
    from vizcore.attention import check_text

    probs = predict_proba(result.classifier, result.tokenizer, [check_text(text, "sentence")],
                          result.config.max_length)[0]
    return {name: float(p) for name, p in zip(result.label_names, probs)}
