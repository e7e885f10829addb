"""What fine-tuning did: held-out accuracy, confusion matrix, per-example predictions, a sentence's
prediction, how each attention head changed, and pooled embeddings before/after (PCA).

"Before" is the shared, untouched encoder (read only, under ``inference_mode``); "after" is the
session's fine-tuned copy. Every function returns numpy arrays or plain records.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch

from vizcore.attention.extract import extract_attention
from vizcore.finetune.classify import encode_pairs, macro_f1, pool, predict_proba
from vizcore.finetune.datasets import LabelledTexts
from vizcore.finetune.tasks import collate, pad_id_of
from vizcore.finetune.training import FinetuneResult
from vizcore.model.loading import LoadedModel
from vizcore.model.run import check_text, forward


@dataclass(frozen=True)
class Evaluation:
    """Predictions on a labelled set. ``confusion[i, j]`` counts true label i predicted as j."""

    label_names: tuple[str, ...]
    labels: np.ndarray  # int [N]
    probabilities: np.ndarray  # float32 [N, C]
    texts: tuple[str, ...]
    second: tuple[str, ...] | None = None  # the pairs' second texts

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
        """One row per example: text (and second text), label, prediction, confidence (probability of the
        prediction), correct."""
        rows = []
        for i, (text, label, probs) in enumerate(zip(self.texts, self.labels, self.probabilities)):
            predicted = int(probs.argmax())
            pair = {} if self.second is None else {"second": self.second[i]}
            rows.append({"text": text, **pair, "label": self.label_names[label],
                         "prediction": self.label_names[predicted], "confidence": float(probs[predicted]),
                         "correct": bool(predicted == label)})
        return rows

    def to_dict(self) -> dict:
        return {"accuracy": self.accuracy,
                "macro_f1": macro_f1(self.labels, self.predictions, len(self.label_names)),
                "label_names": list(self.label_names),
                "confusion": self.confusion.tolist(), "examples": int(len(self.labels)),
                "confusion_axes": "[true label][predicted label]"}


def evaluate(result: FinetuneResult, data: LabelledTexts) -> Evaluation:
    probs = predict_proba(result.classifier, result.tokenizer, data.texts, result.config.max_length,
                          second=data.second)
    return Evaluation(result.label_names, np.asarray(data.labels), probs.astype(np.float32), tuple(data.texts),
                      data.second)


def predict_sentence(result: FinetuneResult, text: str, pair: str | None = None) -> dict[str, float]:
    """Label name -> probability for one sentence (or one pair of sentences)."""
    second = None if pair is None else [check_text(pair, "second sentence")]
    probs = predict_proba(result.classifier, result.tokenizer, [check_text(text, "sentence")],
                          result.config.max_length, second=second)[0]
    return {name: float(p) for name, p in zip(result.label_names, probs)}


def finetuned_model(before: LoadedModel, result: FinetuneResult) -> LoadedModel:
    """The fine-tuned encoder wrapped like the shared one, so attention extraction works on both."""
    return replace(before, model=result.classifier.encoder.eval(), name=f"{before.name} (fine-tuned)")


def same_weights(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    """True when two models hold exactly the same parameters (same names, bit-identical values)."""
    left, right = dict(a.named_parameters()), dict(b.named_parameters())
    return left.keys() == right.keys() and all(torch.equal(left[n], right[n]) for n in left)


def js_divergence(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Jensen-Shannon divergence in bits (0 = same, 1 = disjoint) between rows: (..., K) -> (...)."""
    p, q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    m = 0.5 * (p + q)

    def kl(a: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(a > 0, a * np.log2(a / m), 0.0)
        return terms.sum(-1)

    return np.clip(0.5 * kl(p) + 0.5 * kl(q), 0.0, 1.0)


@dataclass(frozen=True)
class HeadChange:
    """How much each head's attention moved, averaged over sentences: both arrays are [layer, head]."""

    mean_abs_diff: np.ndarray  # mean |after - before| over every (query, key) weight
    js: np.ndarray  # mean Jensen-Shannon divergence (bits) between before/after rows, over queries
    sentences: int

    def top_heads(self, k: int = 3, metric: str = "js") -> list[tuple[int, int, float]]:
        """The k most-changed heads as (layer, head, value), 0-based, largest first."""
        values = self.js if metric == "js" else self.mean_abs_diff
        order = np.argsort(values, axis=None)[::-1][:k]
        return [(int(i // values.shape[1]), int(i % values.shape[1]), float(values.flat[i])) for i in order]


def attention_change(before: LoadedModel, after: LoadedModel, texts: list[str] | tuple[str, ...],
                     limit: int = 40, pairs: list[str] | tuple[str, ...] | None = None) -> HeadChange:
    """Per-head change of attention on (at most ``limit``) sentences (or pairs), each run alone (no padding).

    An encoder whose weights did not move (head-only training) has exactly the same attention: zeros,
    without running either model.
    """
    texts = list(texts)[:limit]
    seconds = [None] * len(texts) if pairs is None else list(pairs)[:limit]
    if same_weights(before.model, after.model):
        zeros = np.zeros((before.num_layers, before.num_heads), dtype=np.float32)
        return HeadChange(zeros, zeros.copy(), len(texts))
    abs_diff, js = [], []
    for text, pair in zip(texts, seconds):
        a = extract_attention(before, text, pair).attention  # (L, H, T, T)
        b = extract_attention(after, text, pair).attention
        abs_diff.append(np.abs(b - a).mean(axis=(2, 3)))
        js.append(js_divergence(a, b).mean(axis=2))
    return HeadChange(np.mean(abs_diff, 0).astype(np.float32), np.mean(js, 0).astype(np.float32), len(abs_diff))


def pooled_embeddings(loaded: LoadedModel, texts: list[str] | tuple[str, ...], pooling: str,
                      max_length: int, batch_size: int = 32, second=None) -> np.ndarray:
    """The sentence (or pair) vectors a classifier head would see: (N, hidden)."""
    ids, segments = encode_pairs(loaded.tokenizer, texts, second, max_length)
    pad, out = pad_id_of(loaded.tokenizer), []
    for start in range(0, len(ids), batch_size):
        end = start + batch_size
        batch = collate(ids[start:end], pad, loaded.device, loaded.model, segments[start:end])
        hidden = forward(loaded, batch, hidden=False, attention=False).last_hidden_state  # (B, T, H)
        out.append(pool(hidden, batch["attention_mask"], pooling).float().cpu().numpy())
    return np.concatenate(out)


def pca_2d(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Project (N, D) onto its first two principal components: (N, 2) coords and explained ratios (2,).

    Each component's sign is fixed (largest loading positive) so reruns give the same picture.
    """
    centred = points - points.mean(0, keepdims=True)
    _, singular, components = np.linalg.svd(centred, full_matrices=False)
    components = components[:2]
    signs = np.sign(components[np.arange(2), np.abs(components).argmax(1)])
    components = components * signs[:, None]
    variance = singular ** 2
    return centred @ components.T, variance[:2] / variance.sum()


@dataclass(frozen=True)
class EmbeddingMap:
    before: np.ndarray  # (N, 2)
    after: np.ndarray  # (N, 2)
    explained_before: np.ndarray  # (2,)
    explained_after: np.ndarray  # (2,)
    separation_before: float  # between-class / within-class spread of the pooled vectors
    separation_after: float


def class_separation(points: np.ndarray, labels: np.ndarray) -> float:
    """Mean squared distance of class centroids from the overall mean over mean within-class variance."""
    overall = points.mean(0)
    between = np.mean([np.sum((points[labels == c].mean(0) - overall) ** 2) for c in np.unique(labels)])
    within = np.mean([np.sum(points[labels == c].var(0)) for c in np.unique(labels)])
    return float(between / within) if within > 0 else float("inf")


def _map(x_before: np.ndarray, x_after: np.ndarray, labels: np.ndarray) -> EmbeddingMap:
    (p_before, e_before), (p_after, e_after) = pca_2d(x_before), pca_2d(x_after)
    return EmbeddingMap(p_before, p_after, e_before, e_after, class_separation(x_before, labels),
                        class_separation(x_after, labels))


def embedding_map(before: LoadedModel, after: LoadedModel, data: LabelledTexts, pooling: str,
                  max_length: int) -> EmbeddingMap:
    x_before = pooled_embeddings(before, data.texts, pooling, max_length, second=data.second)
    unchanged = same_weights(before.model, after.model)
    x_after = x_before if unchanged else pooled_embeddings(after, data.texts, pooling, max_length,
                                                           second=data.second)
    return _map(x_before, x_after, data.labels)


def token_vectors(loaded: LoadedModel, inputs: dict[str, torch.Tensor], chosen: torch.Tensor,
                  batch_size: int = 16) -> np.ndarray:
    """The last layer's vectors at the ``chosen`` positions of a padded batch, row by row: (N, hidden)."""
    out = []
    for start in range(0, chosen.shape[0], batch_size):
        rows = {k: v[start:start + batch_size] for k, v in inputs.items()}
        hidden = forward(loaded, rows, hidden=False, attention=False).last_hidden_state  # (B, T, H)
        out.append(hidden[chosen[start:start + batch_size]].float().cpu().numpy())
    return np.concatenate(out)


def token_map(before: LoadedModel, after: LoadedModel, inputs: dict[str, torch.Tensor], chosen: torch.Tensor,
              labels: np.ndarray) -> EmbeddingMap:
    """``embedding_map`` for token vectors: the encoder's last layer at the ``chosen`` (B, T) positions of
    ``inputs``, before and after fine-tuning, with one class label per chosen position (row by row)."""
    x_before = token_vectors(before, inputs, chosen)
    x_after = x_before if same_weights(before.model, after.model) else token_vectors(after, inputs, chosen)
    return _map(x_before, x_after, labels)
