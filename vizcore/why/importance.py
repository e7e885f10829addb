"""Head importance: rank every head by what removing it costs, two ways, and prune heads in that order.

* Ablation: each head alone is zeroed (its output at the input of W_O) and a metric is measured over a
  set of examples; the importance is the drop of the metric (the rise, for a loss).
* Gradient (Michel, Levy & Neubig 2019, "Are Sixteen Heads Really Better than One?"): a gate xi_h = 1
  multiplies each head's output; I_h = mean over examples x of |dL(x)/dxi_h|. Michel et al. normalise
  each layer's scores by their L2 norm before ranking across layers; both are kept, the normalised
  ones rank the heads.
* Pruning curve: the metric as heads are removed cumulatively, least important first, for each
  ranking and for a seeded random order (the baseline): how many heads can go?

Targets: the masked-LM on held-out sentences (metric: mean log-probability of the masked words, see
``vizcore.why.heldout``), or the session's fine-tuned classifier on its held-out set (metrics: mean
cross-entropy loss, accuracy; the loss ranks the heads). Every measurement runs many configurations of
heads in one batched forward: rows = example x configuration, each row with its own head scale
``[layer, head]`` (``head_scale_hooks``). Arrays are ``[layer, head]``, 0-based; a flat head index is
``layer * heads + head``.

``ImportanceJob`` runs it all in the background with progress and Stop (checked between batches).
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, ClassVar, Iterator, Sequence

import numpy as np
import torch

from vizcore.errors import VizError
from vizcore.finetune.analysis import finetuned_model
from vizcore.finetune.classify import SequenceClassifier, encode_texts
from vizcore.finetune.datasets import LabelledTexts
from vizcore.finetune.tasks import collate, pad_id_of
from vizcore.finetune.training import FinetuneResult
from vizcore.jobs import BackgroundJob
from vizcore.model.loading import LoadedModel
from vizcore.model.run import head_scale_hooks, hooks
from vizcore.why.heldout import DEFAULT_RATE, MaskedBatch, heldout_sentences, log_prob_sums, masked_batch

CHUNK_ROWS = 64  # rows per forward pass: about 0.25 s on one core for the shipped model; Stop waits for one
GRADIENT_COST = 3  # a forward and backward pass costs about three forwards (for the progress bar)
DEFAULT_CURVE_POINTS = 25  # points per pruning curve: every head up to 24 heads, else even steps
RANKINGS = ("ablation", "gradient", "random")
ReportFn = Callable[[float, str], None]
Scores = tuple[torch.Tensor, torch.Tensor]  # per row: the metrics' sums (B, M), what they average over (B,)


class Stopped(Exception):
    """Raised between batches when the run was asked to stop."""


# ---- targets -----------------------------------------------------------------------------------

def _rows(inputs: dict[str, torch.Tensor], examples: np.ndarray) -> dict[str, torch.Tensor]:
    """These examples' rows, cut to the longest of them (the set is right-padded): each (B, T')."""
    index = torch.as_tensor(examples, device=inputs["attention_mask"].device)
    width = int(inputs["attention_mask"][index].sum(1).max())
    return {name: value[index, :width] for name, value in inputs.items()}


@dataclass(frozen=True, eq=False)
class MaskedLMTarget:
    """The masked-LM on masked held-out sentences; metric: mean log p(original piece) at the masks."""

    loaded: LoadedModel
    batch: MaskedBatch
    kind: ClassVar[str] = "masked-lm"
    metrics: ClassVar[tuple[str, ...]] = ("log_prob",)
    higher_is_better: ClassVar[tuple[bool, ...]] = (True,)

    @property
    def size(self) -> int:
        return len(self.batch.sentences)

    @property
    def lengths(self) -> np.ndarray:
        return self.batch.lengths

    @property
    def averaged_over(self) -> int:
        return self.batch.masked

    def scores(self, examples: np.ndarray, scale: torch.Tensor, grad: bool = False) -> Scores:
        """Per row (example ``examples[i]`` with head scale ``scale[i]``, ``[B, layer, head]``): the metric's
        sums ``(B, M)`` and what they average over ``(B,)`` (its masked words)."""
        inputs = _rows({**self.batch.inputs, "labels": self.batch.labels}, examples)
        labels = inputs.pop("labels")
        sums, counts = log_prob_sums(self.loaded, inputs, labels, head_scale_hooks(self.loaded, scale),
                                     grad=grad)
        return sums[:, None], counts


@dataclass(frozen=True, eq=False)
class ClassifierTarget:
    """A fine-tuned classifier on labelled held-out texts; metrics: mean cross-entropy loss, accuracy."""

    loaded: LoadedModel  # its encoder wrapped like the shared model (``finetuned_model``): hooks apply to it
    classifier: SequenceClassifier  # in eval mode (no dropout)
    inputs: dict[str, torch.Tensor]  # each (N, T), right-padded
    labels: torch.Tensor  # (N,)
    kind: ClassVar[str] = "classifier"
    metrics: ClassVar[tuple[str, ...]] = ("loss", "accuracy")
    higher_is_better: ClassVar[tuple[bool, ...]] = (False, True)

    @property
    def size(self) -> int:
        return int(self.labels.shape[0])

    @property
    def lengths(self) -> np.ndarray:
        return self.inputs["attention_mask"].sum(1).cpu().numpy()

    @property
    def averaged_over(self) -> int:
        return self.size

    def scores(self, examples: np.ndarray, scale: torch.Tensor, grad: bool = False) -> Scores:
        """Per row: (loss, correct) ``(B, 2)`` and ones ``(B,)``; see ``MaskedLMTarget.scores``."""
        batch = _rows(self.inputs, examples)
        labels = self.labels[torch.as_tensor(examples, device=self.labels.device)]
        specs = head_scale_hooks(self.loaded, scale)
        with (torch.enable_grad() if grad else torch.inference_mode()), hooks(self.loaded.model, specs):
            logits = self.classifier(batch).float()  # (B, C)
            loss = torch.nn.functional.cross_entropy(logits, labels, reduction="none")
            correct = (logits.argmax(1) == labels).to(loss.dtype)
        return torch.stack([loss, correct], 1), torch.ones_like(loss)


Target = MaskedLMTarget | ClassifierTarget


def masked_lm_target(loaded: LoadedModel, sentences: int | Sequence[str] | None = None, rate: float = DEFAULT_RATE,
                     seed: int = 0) -> MaskedLMTarget:
    """The masked-LM on ``sentences`` (a number: the first that many held-out sentences; None: all)."""
    if sentences is None or isinstance(sentences, int):
        sentences = heldout_sentences(sentences)
    return MaskedLMTarget(loaded, masked_batch(loaded, sentences, rate, seed))


def classifier_target(base: LoadedModel, result: FinetuneResult, data: LabelledTexts, limit: int | None = None,
                      seed: int = 0) -> ClassifierTarget:
    """The fine-tuned classifier on its held-out set ``data`` (at most ``limit`` examples, a seeded sample
    in the set's order: a held-out set is often sorted by label)."""
    if data is None or len(data) == 0:
        raise VizError("The classifier has no held-out examples to measure on: train it on data with a "
                       "held-out split (the built-in set has one).")
    if limit is not None and limit < 1:
        raise VizError(f"Choose at least one held-out example, not {limit}.")
    chosen = np.arange(len(data))
    if limit is not None and limit < len(data):
        chosen = np.sort(np.random.default_rng(seed).choice(len(data), size=limit, replace=False))
    classifier = result.classifier.eval()
    device = next(classifier.parameters()).device
    ids = encode_texts(result.tokenizer, [data.texts[i] for i in chosen], result.config.max_length)
    inputs = collate(ids, pad_id_of(result.tokenizer), device, classifier.encoder)
    labels = torch.as_tensor(np.asarray(data.labels)[chosen], dtype=torch.long, device=device)
    return ClassifierTarget(finetuned_model(base, result), classifier, inputs, labels)


def shape_of(target: Target) -> tuple[int, int]:
    """(layers, heads) of the target's model."""
    return target.loaded.num_layers, target.loaded.num_heads


# ---- measuring configurations of heads ------------------------------------------------------------

class Meter:
    """Counts rows done of a planned total: reports progress and ends the run between batches on Stop."""

    def __init__(self, total: int, report: ReportFn | None = None, stop: threading.Event | None = None):
        self.total, self.done, self.stage = max(1, total), 0, ""
        self.report, self.stop = report, stop

    def check(self) -> None:
        if self.stop is not None and self.stop.is_set():
            raise Stopped

    def advance(self, rows: int) -> None:
        self.done += rows
        self.total = max(self.total, self.done)
        if self.report is not None:
            self.report(self.done / self.total, f"{self.stage} · {self.done / self.total:.0%}")
        self.check()


def _blocks(lengths: np.ndarray, configs: int, chunk_rows: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(examples, configurations) per batch: examples of similar length together (less padding), then
    as many configurations as fill ``chunk_rows`` rows."""
    order = np.argsort(lengths, kind="stable")
    group = max(1, min(len(order), chunk_rows // 4))
    for start in range(0, len(order), group):
        examples = order[start: start + group]
        per = max(1, chunk_rows // len(examples))
        for first in range(0, configs, per):
            yield examples, np.arange(first, min(configs, first + per))


def evaluate(target: Target, keep: np.ndarray, meter: Meter | None = None, chunk_rows: int = CHUNK_ROWS) -> np.ndarray:
    """The target's metrics over its whole set for each configuration: ``keep`` ``[C, layer, head]`` is 1
    for a head kept and 0 for a head ablated. Returns ``[C, M]`` (M = len(target.metrics))."""
    keep = np.asarray(keep, dtype=np.float32)
    if keep.ndim != 3 or keep.shape[1:] != shape_of(target):
        raise VizError(f"Head configurations must have shape [C, {target.loaded.num_layers}, "
                       f"{target.loaded.num_heads}], not {list(keep.shape)}.")
    sums = np.zeros((len(keep), len(target.metrics)))
    counts = np.zeros(len(keep))
    for examples, configs in _blocks(target.lengths, len(keep), chunk_rows):
        if meter is not None:
            meter.check()
        rows, row_configs = np.tile(examples, len(configs)), np.repeat(configs, len(examples))
        scale = torch.as_tensor(keep[row_configs], device=target.loaded.device)
        values, weights = target.scores(rows, scale)
        np.add.at(sums, row_configs, values.double().cpu().numpy())
        np.add.at(counts, row_configs, weights.double().cpu().numpy())
        if meter is not None:
            meter.advance(len(rows))
    return sums / counts[:, None]


def _keys(keep: np.ndarray) -> list[bytes]:
    return [np.asarray(row, dtype=bool).tobytes() for row in keep]


def _fresh(keep: np.ndarray, known: dict[bytes, np.ndarray]) -> list[bytes]:
    """The configurations of ``keep`` not yet measured, each once, in order."""
    return list(dict.fromkeys(key for key in _keys(keep) if key not in known))


def _evaluate_new(target: Target, keep: np.ndarray, known: dict[bytes, np.ndarray], meter: Meter | None) -> np.ndarray:
    """``evaluate``, measuring only the configurations not already in ``known`` (which it fills)."""
    keys, fresh = _keys(keep), _fresh(keep, known)
    if fresh:
        first = {key: i for i, key in reversed(list(enumerate(keys)))}
        values = evaluate(target, keep[[first[key] for key in fresh]], meter)
        known.update(zip(fresh, values))
    return np.stack([known[key] for key in keys])


# ---- ablation importance -----------------------------------------------------------------------

def single_ablations(layers: int, heads: int) -> np.ndarray:
    """``[1 + layers * heads, layer, head]``: all heads kept, then each head alone ablated (flat order)."""
    keep = np.ones((1 + layers * heads, layers, heads), dtype=bool)
    keep[1:].reshape(layers * heads, -1)[np.arange(layers * heads), np.arange(layers * heads)] = False
    return keep


def ablation_importance(target: Target, meter: Meter | None = None,
                        known: dict[bytes, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(plain ``[M]``, ablated ``[M, layer, head]``): each metric of the intact model, and with each head
    alone ablated. ``drop`` turns them into importances."""
    layers, heads = shape_of(target)
    values = _evaluate_new(target, single_ablations(layers, heads), {} if known is None else known, meter)
    return values[0], values[1:].T.reshape(len(target.metrics), layers, heads)


def drop(plain: np.ndarray, ablated: np.ndarray, higher_is_better: Sequence[bool]) -> np.ndarray:
    """How much worse each metric gets when a head is ablated: ``[M, layer, head]``, positive = it hurts."""
    sign = np.where(np.asarray(higher_is_better), 1.0, -1.0)[:, None, None]
    return sign * (np.asarray(plain)[:, None, None] - ablated)


# ---- gradient importance (Michel et al. 2019) ---------------------------------------------------

def gradient_importance(target: Target, meter: Meter | None = None, chunk_rows: int = CHUNK_ROWS) -> np.ndarray:
    """``[layer, head]``: mean over examples of |dL(x)/dxi_h| with every gate xi at 1, L(x) the example's
    loss (masked-LM: mean negative log-probability of its masked words; classifier: cross-entropy). Each
    row of a batch has its own gate, so one backward pass gives every example's own gradient."""
    layers, heads = shape_of(target)
    total = np.zeros((layers, heads))
    sign = -1.0 if target.higher_is_better[0] else 1.0  # the loss falls as the primary metric improves
    order = np.argsort(target.lengths, kind="stable")
    for start in range(0, len(order), chunk_rows):
        if meter is not None:
            meter.check()
        examples = order[start: start + chunk_rows]
        gate = torch.ones(len(examples), layers, heads, device=target.loaded.device, requires_grad=True)
        sums, counts = target.scores(examples, gate, grad=True)
        losses = sign * sums[:, 0] / counts  # (B,)
        (grad,) = torch.autograd.grad(losses.sum(), gate)  # the weights get no gradient
        total += grad.abs().sum(0).double().cpu().numpy()
        if meter is not None:
            meter.advance(GRADIENT_COST * len(examples))
    return total / target.size


def normalise_per_layer(scores: np.ndarray) -> np.ndarray:
    """Michel et al.'s normalisation: each layer's scores divided by their L2 norm, ``[layer, head]``."""
    scores = np.asarray(scores, dtype=np.float64)
    norms = np.linalg.norm(scores, axis=1, keepdims=True)
    return scores / np.where(norms > 0, norms, 1.0)


# ---- pruning -----------------------------------------------------------------------------------

def least_important_first(scores: np.ndarray) -> np.ndarray:
    """Flat head indices ``[layers * heads]`` from the smallest score to the largest (ties: flat order)."""
    return np.argsort(np.asarray(scores).ravel(), kind="stable")


def curve_steps(total_heads: int, points: int = DEFAULT_CURVE_POINTS) -> np.ndarray:
    """How many heads are removed at each point of a curve: 0, ..., ``total_heads``; every head when
    ``points`` allows, else ``points`` evenly spaced counts."""
    if points < 2:
        raise VizError(f"A pruning curve needs at least 2 points (none and all heads removed), not {points}.")
    if total_heads + 1 <= points:
        return np.arange(total_heads + 1)
    return np.unique(np.round(np.linspace(0, total_heads, points)).astype(int))


def pruning_keep(order: np.ndarray, removed: Sequence[int], layers: int, heads: int) -> np.ndarray:
    """``[K, layer, head]``: at point k the first ``removed[k]`` heads of ``order`` (flat indices) are ablated."""
    keep = np.ones((len(removed), layers * heads), dtype=bool)
    for k, count in enumerate(removed):
        keep[k, np.asarray(order)[:count]] = False
    return keep.reshape(len(removed), layers, heads)


def pruning_curve(target: Target, order: np.ndarray, removed: Sequence[int], meter: Meter | None = None,
                  known: dict[bytes, np.ndarray] | None = None) -> np.ndarray:
    """``[K, M]``: the target's metrics with the first ``removed[k]`` heads of ``order`` ablated together."""
    layers, heads = shape_of(target)
    if sorted(np.asarray(order).tolist()) != list(range(layers * heads)):
        raise VizError(f"A pruning order must list each of the {layers * heads} heads once.")
    keep = pruning_keep(order, removed, layers, heads)
    return _evaluate_new(target, keep, {} if known is None else known, meter)


def rank_correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rank correlation of two score arrays (ties get their average rank); NaN when either
    is constant."""
    ranks = [_average_ranks(np.asarray(x, dtype=np.float64).ravel()) for x in (a, b)]
    if ranks[0].size < 2 or ranks[0].std() == 0 or ranks[1].std() == 0:
        return float("nan")
    return float(np.corrcoef(ranks[0], ranks[1])[0, 1])


def _average_ranks(values: np.ndarray) -> np.ndarray:
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(1, len(values) + 1)
    for value in np.unique(values):
        tied = values == value
        ranks[tied] = ranks[tied].mean()
    return ranks


# ---- everything at once, and the background job -------------------------------------------------

@dataclass(frozen=True, eq=False)
class HeadImportance:
    """Both rankings of every head of one model on one target, and the pruning curves. ``M`` metrics
    (``metrics[0]`` ranks the heads by ablation), ``K`` curve points; 0-based ``[layer, head]``."""

    model: str
    target: str  # "masked-lm" or "classifier"
    metrics: tuple[str, ...]
    higher_is_better: tuple[bool, ...]
    examples: int  # sentences or held-out examples measured on
    averaged_over: int  # masked words (masked-LM) or examples (classifier): what a metric is the mean of
    plain: np.ndarray  # [M]: the intact model
    ablated: np.ndarray  # [M, layer, head]: with that head alone ablated
    gradient: np.ndarray  # [layer, head]: Michel et al.'s score, raw
    removed: np.ndarray  # [K]: heads removed at each curve point
    curves: dict[str, np.ndarray] = field(default_factory=dict)  # ranking -> [K, M]
    orders: dict[str, np.ndarray] = field(default_factory=dict)  # ranking -> [layers * heads], least important first
    seed: int = 0  # of the random order
    seconds: float = 0.0

    @property
    def ablation(self) -> np.ndarray:
        """[M, layer, head]: how much worse each metric gets without the head (positive = it hurts)."""
        return drop(self.plain, self.ablated, self.higher_is_better)

    @property
    def gradient_normalised(self) -> np.ndarray:
        return normalise_per_layer(self.gradient)

    def correlation(self, metric: int = 0, normalised: bool = True) -> float:
        """Spearman's rank correlation between the ablation importance on ``metrics[metric]`` and the
        gradient importance (per-layer normalised, or raw)."""
        return rank_correlation(self.ablation[metric], self.gradient_normalised if normalised else self.gradient)

    def to_dict(self) -> dict:
        heads = self.gradient.shape[1]
        by_metric = lambda array: {m: _plain(array[i]) for i, m in enumerate(self.metrics)}  # noqa: E731
        return {
            "model": self.model, "target": self.target, "metrics": list(self.metrics),
            "higher_is_better": dict(zip(self.metrics, self.higher_is_better)),
            "examples": self.examples, "averaged_over": self.averaged_over,
            "axes": "[layer][head], 0-based",
            "plain": by_metric(self.plain),
            "ablated": by_metric(self.ablated),
            "ablation_importance": by_metric(self.ablation),
            "gradient_importance": {"raw": _plain(self.gradient), "normalised": _plain(self.gradient_normalised),
                                    "ranks_by": "normalised"},
            "rank_correlation": {"spearman": _plain(self.correlation()),
                                 "spearman_raw": _plain(self.correlation(normalised=False)),
                                 "between": f"ablation importance ({self.metrics[0]}) and gradient importance"},
            "pruning": {"removed": _plain(self.removed),
                        "curves": {r: by_metric(curve.T) for r, curve in self.curves.items()},
                        "orders": {r: [[int(i // heads), int(i % heads)] for i in order]
                                   for r, order in self.orders.items()},
                        "random_seed": self.seed},
            "seconds": round(self.seconds, 3),
        }


def _plain(value):
    """numpy -> JSON: lists of floats and ints, NaN as null."""
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value] if value.ndim else _plain(value.item())
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else float(value)
    if isinstance(value, np.integer):
        return int(value)
    return value


def head_importance(target: Target, curve_points: int = DEFAULT_CURVE_POINTS, seed: int = 0,
                    report: ReportFn | None = None, stop: threading.Event | None = None) -> HeadImportance:
    """Gradient importance, every single-head ablation, then the pruning curves of the three rankings
    (each configuration measured once). ``report(fraction, text)`` after each batch; ``stop`` ends the run
    between batches with ``Stopped``."""
    started = time.perf_counter()
    layers, heads = shape_of(target)
    n, size = layers * heads, target.size
    removed = curve_steps(n, curve_points)
    meter = Meter(size * (GRADIENT_COST + 1 + n + len(RANKINGS) * max(0, len(removed) - 3)), report, stop)
    meter.stage = "gradient importance"
    gradient = gradient_importance(target, meter)
    meter.stage = "each head ablated alone"
    known: dict[bytes, np.ndarray] = {}
    plain, ablated = ablation_importance(target, meter, known)
    orders = {"ablation": least_important_first(drop(plain, ablated, target.higher_is_better)[0]),
              "gradient": least_important_first(normalise_per_layer(gradient)),
              "random": np.random.default_rng(seed).permutation(n)}
    keep = np.concatenate([pruning_keep(order, removed, layers, heads) for order in orders.values()])
    meter.stage = "pruning curves"
    meter.total = meter.done + len(_fresh(keep, known)) * size
    values = _evaluate_new(target, keep, known, meter)
    curves = dict(zip(orders, np.split(values, len(orders))))
    return HeadImportance(
        model=target.loaded.name, target=target.kind, metrics=target.metrics,
        higher_is_better=target.higher_is_better, examples=size,
        averaged_over=target.averaged_over,
        plain=plain, ablated=ablated, gradient=gradient, removed=removed, curves=curves, orders=orders,
        seed=seed, seconds=time.perf_counter() - started)


class ImportanceJob(BackgroundJob):
    """``head_importance`` in a background thread with one torch thread; poll ``progress()``; ``result``
    is set when it has run to its end (a stopped run keeps nothing: a half-ranked model says little)."""

    name = "vizcore-importance"
    kind = "head-importance run"
    failure = "The importance run failed"
    again = "Start again"
    done_word = "ranked"

    def __init__(self, target: Target, curve_points: int = DEFAULT_CURVE_POINTS, seed: int = 0, threads: int = 1):
        curve_steps(target.loaded.num_layers * target.loaded.num_heads, curve_points)  # bad settings fail here
        super().__init__()
        self.target, self.curve_points, self.seed, self.threads = target, curve_points, seed, threads
        self._lock = threading.Lock()
        self._progress: tuple[float, str] = (0.0, "Starting…")
        self.result: HeadImportance | None = None

    def progress(self) -> tuple[float, str]:
        """(fraction done, what it is doing), safe from any thread."""
        with self._lock:
            return self._progress

    def _report(self, fraction: float, text: str) -> None:
        self.check_released()
        with self._lock:
            self._progress = (fraction, text)

    def _run(self) -> None:
        try:
            self.result = head_importance(self.target, self.curve_points, self.seed, self._report, self._stop)
        except Stopped:
            self.result = None
            return
        self._report(1.0, f"Done in {self.result.seconds:.0f} s.")

    def _release(self) -> None:
        self.result = None
        self.target = None  # its batch, and for a classifier the session's model copy
