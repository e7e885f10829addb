"""Fine-tune a session's own copy of an encoder for text classification, optionally in a background thread.

The shared model (``LoadedModel.model``, cached for every session) is only ever *read*: training
works on ``copy.deepcopy`` of it, so its weights stay byte-identical. The classifier is the encoder
plus a dropout + linear head over the pooled hidden states (mean over real tokens, or [CLS]).

Modes: ``head`` (encoder frozen), ``last_n`` (the last N encoder layers and the head), ``full``
(everything). AdamW with a linear warm-up/decay schedule and gradient clipping, as in BERT's recipe.

``TrainingJob`` runs ``train_classifier`` in a daemon thread limited to one torch thread (so other
users of the same server stay responsive), reports progress through a lock-protected snapshot, and
ends cleanly at the next step when its stop event is set, keeping the partial model. The app runs
it through the server's ``vizcore.jobs.JobQueue``.
"""

from __future__ import annotations

import copy
import inspect
import math
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch
from torch import nn

from vizcore.errors import VizError
from vizcore.finetune.datasets import LabelledTexts, TrainTestData
from vizcore.jobs import BackgroundJob
from vizcore.model.loading import LoadedModel

MODES = ("head", "last_n", "full")
MODE_LABELS = {"head": "head only (encoder frozen)", "last_n": "last N layers + head", "full": "full model"}
# The usual recipes: a frozen encoder's head learns fast at 1e-3..1e-2; all layers at 2e-5..5e-5.
DEFAULT_LR = {"head": 2e-3, "last_n": 1e-4, "full": 5e-5}
POOLINGS = ("mean", "cls")
ProgressCallback = Callable[["Progress"], None]


@dataclass(frozen=True)
class FinetuneConfig:
    mode: str = "full"
    last_n: int = 2
    lr: float | None = None  # None: DEFAULT_LR[mode]
    epochs: int = 3
    batch_size: int = 16
    max_length: int = 64
    seed: int = 0
    pooling: str = "mean"
    weight_decay: float = 0.01
    warmup_fraction: float = 0.1

    @property
    def learning_rate(self) -> float:
        return float(self.lr if self.lr is not None else DEFAULT_LR.get(self.mode, 5e-5))

    def validate(self, num_layers: int) -> "FinetuneConfig":
        if self.mode not in MODES:
            raise VizError(f"Unknown mode '{self.mode}': choose one of {', '.join(MODES)}.")
        if self.mode == "last_n" and not 1 <= self.last_n <= num_layers:
            raise VizError(f"N must be between 1 and {num_layers} (the model's layers); got {self.last_n}.")
        if not 0 < self.learning_rate <= 1:
            raise VizError(f"The learning rate must be in (0, 1]; got {self.learning_rate:g}.")
        if not 1 <= self.epochs <= 100:
            raise VizError(f"Epochs must be between 1 and 100; got {self.epochs}.")
        if not 1 <= self.batch_size <= 512:
            raise VizError(f"The batch size must be between 1 and 512; got {self.batch_size}.")
        if not 8 <= self.max_length <= 512:
            raise VizError(f"The maximum length must be between 8 and 512 tokens; got {self.max_length}.")
        if self.pooling not in POOLINGS:
            raise VizError(f"Unknown pooling '{self.pooling}': choose mean or cls.")
        return self


def pool(hidden: torch.Tensor, mask: torch.Tensor, pooling: str) -> torch.Tensor:
    """``hidden`` (B, T, H), ``mask`` (B, T) -> (B, H): mean over real tokens, or the first token."""
    if pooling == "cls":
        return hidden[:, 0]
    weights = mask.unsqueeze(-1).to(hidden.dtype)  # (B, T, 1)
    return (hidden * weights).sum(1) / weights.sum(1).clamp(min=1.0)


class SequenceClassifier(nn.Module):
    """Encoder -> pooled (B, H) -> dropout -> linear -> logits (B, C)."""

    def __init__(self, encoder: nn.Module, num_labels: int, pooling: str = "mean", dropout: float = 0.1):
        super().__init__()
        self.encoder = encoder
        self.pooling = pooling
        hidden = int(getattr(encoder.config, "hidden_size", 0) or getattr(encoder.config, "dim", 0)
                     or encoder.config.n_embd)
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(hidden, num_labels)

    def pooled(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        hidden = self.encoder(**batch).last_hidden_state  # (B, T, H)
        return pool(hidden, batch["attention_mask"], self.pooling)

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.head(self.dropout(self.pooled(batch)))  # (B, C)


def encoder_layers(model: nn.Module) -> nn.ModuleList:
    """The stack of Transformer blocks of a BERT/RoBERTa, DistilBERT or GPT-2-like model."""
    for path in ("encoder.layer", "transformer.layer", "h", "layers", "encoder.layers"):
        module = model
        for part in path.split("."):
            module = getattr(module, part, None)
            if module is None:
                break
        if isinstance(module, nn.ModuleList):
            return module
    raise VizError(f"Cannot find the layer stack of a {type(model).__name__}: use mode head or full.")


def set_trainable(classifier: SequenceClassifier, mode: str, last_n: int = 2) -> int:
    """Freeze what the mode does not train; returns the number of trainable parameters."""
    classifier.encoder.requires_grad_(mode == "full")
    if mode == "last_n":
        for layer in list(encoder_layers(classifier.encoder))[-last_n:]:
            layer.requires_grad_(True)
    classifier.head.requires_grad_(True)
    return sum(p.numel() for p in classifier.parameters() if p.requires_grad)


def new_classifier(loaded: LoadedModel, num_labels: int, config: FinetuneConfig) -> SequenceClassifier:
    """A fresh classifier on a deep copy of the shared encoder (the shared one is never touched)."""
    torch.manual_seed(config.seed)
    encoder = copy.deepcopy(loaded.model)
    classifier = SequenceClassifier(encoder, num_labels, config.pooling).to(loaded.device)
    set_trainable(classifier, config.mode, config.last_n)
    return classifier


def encode_texts(tokenizer, texts: tuple[str, ...] | list[str], max_length: int) -> list[list[int]]:
    """Token ids per text, with special tokens, truncated to ``max_length``."""
    return tokenizer(list(texts), truncation=True, max_length=max_length, verbose=False)["input_ids"]


def collate(ids: list[list[int]], pad_id: int, device: torch.device, model: nn.Module) -> dict[str, torch.Tensor]:
    """Right-pad to the longest in the batch. Adds token_type_ids only when the model takes them."""
    width = max(len(row) for row in ids)
    input_ids = torch.full((len(ids), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(ids), width), dtype=torch.long)
    for i, row in enumerate(ids):
        input_ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
        mask[i, : len(row)] = 1
    batch = {"input_ids": input_ids.to(device), "attention_mask": mask.to(device)}
    if "token_type_ids" in inspect.signature(model.forward).parameters:
        batch["token_type_ids"] = torch.zeros_like(input_ids).to(device)
    return batch


def pad_id_of(tokenizer) -> int:
    for candidate in (tokenizer.pad_token_id, tokenizer.eos_token_id, 0):
        if candidate is not None:
            return int(candidate)
    return 0


@dataclass(frozen=True)
class Progress:
    """A snapshot for progress bars and curves. ``eval_accuracy`` is the latest held-out accuracy."""

    step: int
    total_steps: int
    epoch: int  # 1-based epoch of the current step
    epochs: int
    loss: float | None
    train_accuracy: float | None  # accuracy on the current batch
    eval_accuracy: float | None
    elapsed_s: float
    eta_s: float | None

    @property
    def fraction(self) -> float:
        return self.step / self.total_steps if self.total_steps else 0.0


@dataclass
class History:
    """Per step: loss and batch accuracy; per evaluation: held-out accuracy (step 0 = before training)."""

    steps: list[dict] = field(default_factory=list)  # {"step", "epoch", "loss", "train_accuracy"}
    evals: list[dict] = field(default_factory=list)  # {"step", "epoch", "accuracy"}

    def copy(self) -> "History":
        return History(list(self.steps), list(self.evals))


@dataclass
class FinetuneResult:
    classifier: SequenceClassifier  # eval mode, on the model's device; the session's own copy
    tokenizer: object
    label_names: tuple[str, ...]
    config: FinetuneConfig
    history: History
    steps_done: int
    total_steps: int
    stopped: bool
    seconds: float
    trainable_parameters: int
    total_parameters: int
    model_name: str

    @property
    def final_eval_accuracy(self) -> float | None:
        return self.history.evals[-1]["accuracy"] if self.history.evals else None


def predict_proba(classifier: SequenceClassifier, tokenizer, texts: list[str] | tuple[str, ...],
                  max_length: int, batch_size: int = 32) -> np.ndarray:
    """Class probabilities (N, C) of the classifier in eval mode (dropout off)."""
    was_training = classifier.training
    classifier.eval()
    device = next(classifier.parameters()).device
    ids, pad = encode_texts(tokenizer, texts, max_length), pad_id_of(tokenizer)
    out = []
    with torch.inference_mode():
        for start in range(0, len(ids), batch_size):
            batch = collate(ids[start: start + batch_size], pad, device, classifier.encoder)
            out.append(torch.softmax(classifier(batch).float(), dim=-1).cpu().numpy())
    classifier.train(was_training)
    return np.concatenate(out) if out else np.zeros((0, classifier.head.out_features), dtype=np.float32)


def accuracy_on(classifier: SequenceClassifier, tokenizer, data: LabelledTexts, max_length: int) -> float:
    probs = predict_proba(classifier, tokenizer, data.texts, max_length)
    return float((probs.argmax(1) == data.labels).mean()) if len(data) else float("nan")


def linear_schedule(total_steps: int, warmup_fraction: float) -> Callable[[int], float]:
    warmup = max(1, int(total_steps * warmup_fraction))

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (total_steps - step) / max(1, total_steps - warmup))

    return factor


def _train_mode(classifier: SequenceClassifier, mode: str) -> None:
    # A frozen encoder stays in eval mode (no dropout), so the head sees the same features each epoch.
    classifier.train()
    if mode == "head":
        classifier.encoder.eval()


def train_classifier(
    loaded: LoadedModel, data: TrainTestData, config: FinetuneConfig,
    on_progress: ProgressCallback | None = None, stop: threading.Event | None = None,
    history: History | None = None,
) -> FinetuneResult:
    """Train a copy of ``loaded.model`` with a new head on ``data.train``; evaluate on ``data.test``.

    Evaluates before training (step 0), after every epoch and where it stops. ``stop`` ends the run
    at the next step; the partial model is returned with ``stopped=True``. ``history``, when given,
    is filled in place (rows are appended before each ``on_progress`` call).
    """
    config = config.validate(loaded.num_layers)
    started = time.perf_counter()
    classifier = new_classifier(loaded, len(data.train.label_names), config)
    params = [p for p in classifier.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=config.learning_rate, weight_decay=config.weight_decay)
    steps_per_epoch = math.ceil(len(data.train) / config.batch_size)
    total = steps_per_epoch * config.epochs
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, linear_schedule(total, config.warmup_fraction))
    ids = encode_texts(loaded.tokenizer, data.train.texts, config.max_length)
    labels = torch.as_tensor(data.train.labels, device=loaded.device)
    pad, rng = pad_id_of(loaded.tokenizer), np.random.default_rng(config.seed)
    history = History() if history is None else history
    loop = _Loop(classifier, loaded, data, config, history, on_progress, started, total)
    features = _Features(classifier, ids, pad, loaded.device, cache=config.mode == "head")
    loop.evaluate(0, 0)
    step, stopped = 0, False
    for epoch in range(1, config.epochs + 1):
        order = rng.permutation(len(ids))
        _train_mode(classifier, config.mode)
        for start in range(0, len(order), config.batch_size):
            if stop is not None and stop.is_set():
                stopped = True
                break
            chosen = order[start: start + config.batch_size]
            logits = features.logits(chosen)  # (B, C)
            loss = nn.functional.cross_entropy(logits, labels[chosen])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optimizer.step()
            scheduler.step()
            step += 1
            correct = float((logits.argmax(1) == labels[chosen]).float().mean())
            loop.record_step(step, epoch, loss.item(), correct)
        if stopped or step == 0:
            break
        loop.evaluate(step, epoch)
    if stopped and step > 0 and history.evals[-1]["step"] != step:
        loop.evaluate(step, max(1, math.ceil(step / steps_per_epoch)))
    classifier.eval()
    return FinetuneResult(
        classifier=classifier, tokenizer=loaded.tokenizer, label_names=data.train.label_names,
        config=config, history=history, steps_done=step, total_steps=total, stopped=stopped,
        seconds=time.perf_counter() - started, trainable_parameters=sum(p.numel() for p in params),
        total_parameters=sum(p.numel() for p in classifier.parameters()), model_name=loaded.name)


class _Features:
    """Logits for a batch of training examples. With a frozen encoder (``cache``), each example's
    pooled vector is computed once, in the first epoch, and reused: later epochs train only the head."""

    def __init__(self, classifier: SequenceClassifier, ids: list[list[int]], pad: int,
                 device: torch.device, cache: bool):
        self.classifier, self.ids, self.pad, self.device, self.cache = classifier, ids, pad, device, cache
        self.pooled: dict[int, torch.Tensor] = {}

    def logits(self, chosen: np.ndarray) -> torch.Tensor:
        if not self.cache:
            batch = collate([self.ids[i] for i in chosen], self.pad, self.device, self.classifier.encoder)
            return self.classifier(batch)
        missing = [int(i) for i in chosen if int(i) not in self.pooled]
        if missing:
            batch = collate([self.ids[i] for i in missing], self.pad, self.device, self.classifier.encoder)
            with torch.no_grad():
                for i, vector in zip(missing, self.classifier.pooled(batch)):
                    self.pooled[i] = vector
        pooled = torch.stack([self.pooled[int(i)] for i in chosen])  # (B, H)
        return self.classifier.head(self.classifier.dropout(pooled))


class _Loop:
    """Bookkeeping of one run: history rows, evaluations, progress snapshots with an ETA."""

    def __init__(self, classifier, loaded, data, config, history, on_progress, started, total):
        self.classifier, self.loaded, self.data, self.config = classifier, loaded, data, config
        self.history, self.on_progress, self.started, self.total = history, on_progress, started, total
        self.train_started: float | None = None

    def evaluate(self, step: int, epoch: int) -> None:
        accuracy = accuracy_on(self.classifier, self.loaded.tokenizer, self.data.test, self.config.max_length)
        self.history.evals.append({"step": step, "epoch": epoch, "accuracy": accuracy})
        _train_mode(self.classifier, self.config.mode)
        if step == 0:
            self.train_started = time.perf_counter()
        self._report(step, max(epoch, 1), None, None)

    def record_step(self, step: int, epoch: int, loss: float, accuracy: float) -> None:
        self.history.steps.append({"step": step, "epoch": epoch, "loss": loss, "train_accuracy": accuracy})
        self._report(step, epoch, loss, accuracy)

    def _report(self, step: int, epoch: int, loss: float | None, accuracy: float | None) -> None:
        if self.on_progress is None:
            return
        now = time.perf_counter()
        eta = None
        if step > 0 and self.train_started is not None:
            eta = (now - self.train_started) / step * (self.total - step)
        evals = self.history.evals
        self.on_progress(Progress(step, self.total, epoch, self.config.epochs, loss, accuracy,
                                  evals[-1]["accuracy"] if evals else None, now - self.started, eta))


class TrainingJob(BackgroundJob):
    """``train_classifier`` in a background thread with one torch thread; poll ``snapshot()``.

    Submit it to a ``vizcore.jobs.JobQueue`` (or ``start()`` it). ``status`` is ``waiting``, ``running``,
    ``done``, ``stopped`` or ``error`` (then ``error`` holds the message); ``result`` is set when it ends.
    """

    name = "vizcore-finetune"
    kind = "fine-tuning run"
    failure = "Training failed"

    def __init__(self, loaded: LoadedModel, data: TrainTestData, config: FinetuneConfig, threads: int = 1):
        config.validate(loaded.num_layers)  # bad settings fail here, in the caller, not in the thread
        super().__init__()
        self.loaded, self.data, self.config, self.threads = loaded, data, config, threads
        self._lock = threading.Lock()
        self._history = History()
        self._progress: Progress | None = None
        self.result: FinetuneResult | None = None

    def snapshot(self) -> tuple[Progress | None, History]:
        """The latest progress and a copy of the history so far (safe to call from any thread)."""
        with self._lock:
            return self._progress, self._history.copy()

    def _on_progress(self, progress: Progress) -> None:
        self.check_released()
        with self._lock:  # the training thread appends rows only before calling this
            self._progress = progress

    def _run(self) -> None:
        self.result = train_classifier(self.loaded, self.data, self.config, on_progress=self._on_progress,
                                       stop=self._stop, history=self._history)

    def _was_stopped(self) -> bool:
        return self.result.stopped if self.result is not None else super()._was_stopped()

    def _release(self) -> None:
        self.result = None  # the session's model copy: the only large thing a run makes
