"""Fine-tune a session's own copy of an encoder for any task (vizcore/finetune/tasks.py), optionally in a
background thread.

The shared model (``LoadedModel.model``, cached for every session) is only ever *read*: training
works on ``copy.deepcopy`` of it, so its weights stay byte-identical. The task puts its head on the
copy (a pooled-vector classifier, a per-token tagger, a start/end span head).

Modes: ``head`` (encoder frozen), ``last_n`` (the last N encoder layers and the head), ``full``
(everything). AdamW with a linear warm-up/decay schedule and gradient clipping, as in BERT's recipe.

``TrainingJob`` runs ``train_task`` in a daemon thread limited to one torch thread (so other users of
the same server stay responsive), reports progress through a lock-protected snapshot, and ends cleanly
at the next step when its stop event is set, keeping the partial model. The app runs it through the
server's ``vizcore.jobs.JobQueue``.
"""

from __future__ import annotations

import copy
import math
import threading
import time
from dataclasses import dataclass, field, fields
from typing import Any, Callable

import numpy as np
import torch
from torch import nn

from vizcore.errors import VizError
from vizcore.finetune import DEFAULT_LR, MODES, POOLINGS
from vizcore.finetune import MODE_LABELS as MODE_LABELS  # the page reads it here
from vizcore.finetune.classify import SENTENCE, SequenceClassifier
from vizcore.finetune.tasks import Task, TaskModel, pad_id_of
from vizcore.jobs import BackgroundJob
from vizcore.model.loading import LoadedModel

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
    pooling: str = "mean"  # sentence and pair tasks
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


def task_config(task: Task, **settings: Any) -> FinetuneConfig:
    """The task's defaults (``task.defaults``, its learning rate for the mode) overridden by every setting
    that is not None."""
    names = {f.name for f in fields(FinetuneConfig)}
    given = {k: v for k, v in settings.items() if v is not None}
    chosen = {k: v for k, v in {**task.defaults, **given}.items() if k in names}
    if "lr" not in chosen:
        chosen["lr"] = default_lr(task, chosen.get("mode", FinetuneConfig.mode))
    return FinetuneConfig(**chosen)


def default_lr(task: Task, mode: str) -> float:
    return task.learning_rates.get(mode, DEFAULT_LR.get(mode, 5e-5))


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


def set_trainable(model: TaskModel, mode: str, last_n: int = 2) -> int:
    """Freeze what the mode does not train; returns the number of trainable parameters."""
    model.encoder.requires_grad_(mode == "full")
    if mode == "last_n":
        for layer in list(encoder_layers(model.encoder))[-last_n:]:
            layer.requires_grad_(True)
    model.head.requires_grad_(True)
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def new_model(loaded: LoadedModel, task: Task, data: Any, config: FinetuneConfig) -> TaskModel:
    """The task's model on a deep copy of the shared encoder (the shared one is never touched)."""
    torch.manual_seed(config.seed)
    model = task.build(copy.deepcopy(loaded.model), data, config).to(loaded.device)
    set_trainable(model, config.mode, config.last_n)
    return model


def new_classifier(loaded: LoadedModel, num_labels: int, config: FinetuneConfig) -> SequenceClassifier:
    """A fresh sentence classifier on a deep copy of the shared encoder."""
    torch.manual_seed(config.seed)
    classifier = SequenceClassifier(copy.deepcopy(loaded.model), num_labels, config.pooling).to(loaded.device)
    set_trainable(classifier, config.mode, config.last_n)
    return classifier


@dataclass(frozen=True)
class Progress:
    """A snapshot for progress bars and curves. ``eval_score`` is the latest held-out figure of the task's
    metric (``metric_label``)."""

    step: int
    total_steps: int
    epoch: int  # 1-based epoch of the current step
    epochs: int
    loss: float | None
    train_score: float | None  # the task's batch score (e.g. accuracy) on the current batch
    eval_score: float | None
    elapsed_s: float
    eta_s: float | None
    metric_label: str = "accuracy"

    @property
    def fraction(self) -> float:
        return self.step / self.total_steps if self.total_steps else 0.0


@dataclass
class History:
    """Per step: loss and batch score; per evaluation: the task's held-out figures (step 0 = before training).

    ``evals`` rows are ``{"step", "epoch", "score", **task.evaluate()}``, ``score`` being the main metric.
    """

    steps: list[dict] = field(default_factory=list)  # {"step", "epoch", "loss", "train_score"}
    evals: list[dict] = field(default_factory=list)
    metric_label: str = "accuracy"
    batch_label: str = "accuracy"

    def copy(self) -> "History":
        return History(list(self.steps), list(self.evals), self.metric_label, self.batch_label)


@dataclass
class FinetuneResult:
    model: TaskModel  # eval mode, on the model's device; the session's own copy
    tokenizer: object
    label_names: tuple[str, ...]  # classes or tags; () for QA
    config: FinetuneConfig
    history: History
    steps_done: int
    total_steps: int
    stopped: bool
    seconds: float
    trainable_parameters: int
    total_parameters: int
    model_name: str
    task: Task = SENTENCE

    @property
    def classifier(self) -> TaskModel:
        """The model, by the name the classification pages use."""
        return self.model

    @property
    def scores(self) -> dict[str, float]:
        """The last held-out figures (the task's ``evaluate`` dict)."""
        last = self.history.evals[-1] if self.history.evals else {}
        return {k: v for k, v in last.items() if k not in ("step", "epoch", "score")}

    @property
    def final_score(self) -> float | None:
        return self.history.evals[-1]["score"] if self.history.evals else None


def linear_schedule(total_steps: int, warmup_fraction: float) -> Callable[[int], float]:
    warmup = max(1, int(total_steps * warmup_fraction))

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (total_steps - step) / max(1, total_steps - warmup))

    return factor


def _train_mode(model: TaskModel, mode: str) -> None:
    # A frozen encoder stays in eval mode (no dropout), so the head sees the same features each epoch.
    model.train()
    if mode == "head":
        model.encoder.eval()


def train_task(
    loaded: LoadedModel, task: Task, data: Any, config: FinetuneConfig,
    on_progress: ProgressCallback | None = None, stop: threading.Event | None = None,
    history: History | None = None,
) -> FinetuneResult:
    """Train a copy of ``loaded.model`` with ``task``'s head on ``data.train``; evaluate on ``data.test``.

    Evaluates before training (step 0), after every epoch and where it stops. ``stop`` ends the run
    at the next step; the partial model is returned with ``stopped=True``. ``history``, when given,
    is filled in place (rows are appended before each ``on_progress`` call).
    """
    config = config.validate(loaded.num_layers)
    started = time.perf_counter()
    model = new_model(loaded, task, data, config)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=config.learning_rate, weight_decay=config.weight_decay)
    features = task.encode(loaded.tokenizer, data.train, config.max_length)
    steps_per_epoch = math.ceil(len(features) / config.batch_size)
    total = steps_per_epoch * config.epochs
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, linear_schedule(total, config.warmup_fraction))
    rng = np.random.default_rng(config.seed)
    history = History() if history is None else history
    history.metric_label, history.batch_label = task.metric_label, task.batch_label
    loop = _Loop(model, task, loaded, data, config, history, on_progress, started, total)
    batches = _Batches(model, task, features, pad_id_of(loaded.tokenizer), loaded.device, cache=config.mode == "head")
    loop.evaluate(0, 0)
    step, stopped = 0, False
    for epoch in range(1, config.epochs + 1):
        order = rng.permutation(len(features))
        _train_mode(model, config.mode)
        for start in range(0, len(order), config.batch_size):
            if stop is not None and stop.is_set():
                stopped = True
                break
            outputs, targets = batches.outputs(order[start: start + config.batch_size])
            loss = task.loss(outputs, targets)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optimizer.step()
            scheduler.step()
            step += 1
            loop.record_step(step, epoch, loss.item(), task.batch_score(outputs, targets))
        if stopped or step == 0:
            break
        loop.evaluate(step, epoch)
    if stopped and step > 0 and history.evals[-1]["step"] != step:
        loop.evaluate(step, max(1, math.ceil(step / steps_per_epoch)))
    model.eval()
    return FinetuneResult(
        model=model, tokenizer=loaded.tokenizer, label_names=tuple(getattr(data.train, "label_names", ())),
        config=config, history=history, steps_done=step, total_steps=total, stopped=stopped,
        seconds=time.perf_counter() - started, trainable_parameters=sum(p.numel() for p in params),
        total_parameters=sum(p.numel() for p in model.parameters()), model_name=loaded.name, task=task)


def train_classifier(loaded: LoadedModel, data: Any, config: FinetuneConfig,
                     on_progress: ProgressCallback | None = None, stop: threading.Event | None = None,
                     history: History | None = None) -> FinetuneResult:
    """``train_task`` for sentence classification (the lab's first task)."""
    return train_task(loaded, SENTENCE, data, config, on_progress, stop, history)


class _Batches:
    """A training batch's outputs and targets. With a frozen encoder (``cache``), each example's hidden
    states are computed once, in the first epoch, and reused: later epochs train only the head."""

    def __init__(self, model: TaskModel, task: Task, features: list, pad: int, device: torch.device, cache: bool):
        self.model, self.task, self.features, self.pad, self.device = model, task, features, pad, device
        self.cache = cache
        self.hidden: dict[int, torch.Tensor] = {}  # example -> (T_i, H), its real tokens only

    def outputs(self, chosen: np.ndarray) -> tuple[Any, Any]:
        chosen = [int(i) for i in chosen]
        batch = self.task.collate([self.features[i] for i in chosen], self.pad, self.device, self.model.encoder)
        if not self.cache:
            return self.model(batch.inputs), batch.targets
        missing = [i for i in chosen if i not in self.hidden]
        if missing:
            fresh = self.task.collate([self.features[i] for i in missing], self.pad, self.device, self.model.encoder)
            lengths = fresh.inputs["attention_mask"].sum(1).tolist()
            with torch.no_grad():
                for i, states, n in zip(missing, self.model.hidden(fresh.inputs), lengths):
                    self.hidden[i] = states[: int(n)]
        width = batch.inputs["input_ids"].shape[1]
        hidden = torch.stack([nn.functional.pad(self.hidden[i], (0, 0, 0, width - len(self.hidden[i])))
                              for i in chosen])  # (B, T, H), zeros where the mask is 0
        return self.model.from_hidden(hidden, batch.inputs), batch.targets


class _Loop:
    """Bookkeeping of one run: history rows, evaluations, progress snapshots with an ETA."""

    def __init__(self, model, task, loaded, data, config, history, on_progress, started, total):
        self.model, self.task, self.loaded, self.data, self.config = model, task, loaded, data, config
        self.history, self.on_progress, self.started, self.total = history, on_progress, started, total
        self.train_started: float | None = None

    def evaluate(self, step: int, epoch: int) -> None:
        self.model.eval()
        scores = self.task.evaluate(self.model, self.loaded.tokenizer, self.data.test, self.config.max_length)
        self.history.evals.append({"step": step, "epoch": epoch, "score": scores[self.task.metric], **scores})
        _train_mode(self.model, self.config.mode)
        if step == 0:
            self.train_started = time.perf_counter()
        self._report(step, max(epoch, 1), None, None)

    def record_step(self, step: int, epoch: int, loss: float, score: float) -> None:
        self.history.steps.append({"step": step, "epoch": epoch, "loss": loss, "train_score": score})
        self._report(step, epoch, loss, score)

    def _report(self, step: int, epoch: int, loss: float | None, score: float | None) -> None:
        if self.on_progress is None:
            return
        now = time.perf_counter()
        eta = None
        if step > 0 and self.train_started is not None:
            eta = (now - self.train_started) / step * (self.total - step)
        evals = self.history.evals
        self.on_progress(Progress(step, self.total, epoch, self.config.epochs, loss, score,
                                  evals[-1]["score"] if evals else None, now - self.started, eta,
                                  self.task.metric_label))


class TrainingJob(BackgroundJob):
    """``train_task`` in a background thread with one torch thread; poll ``snapshot()``.

    Submit it to a ``vizcore.jobs.JobQueue`` (or ``start()`` it). ``status`` is ``waiting``, ``running``,
    ``done``, ``stopped`` or ``error`` (then ``error`` holds the message); ``result`` is set when it ends.
    """

    name = "vizcore-finetune"
    kind = "fine-tuning run"
    failure = "Training failed"

    def __init__(self, loaded: LoadedModel, data: Any, config: FinetuneConfig, threads: int = 1,
                 task: Task = SENTENCE):
        config.validate(loaded.num_layers)  # bad settings fail here, in the caller, not in the thread
        super().__init__()
        self.loaded, self.data, self.config, self.threads, self.task = loaded, data, config, threads, task
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
        self.result = train_task(self.loaded, self.task, self.data, self.config, on_progress=self._on_progress,
                                 stop=self._stop, history=self._history)

    def _was_stopped(self) -> bool:
        return self.result.stopped if self.result is not None else super()._was_stopped()

    def _release(self) -> None:
        self.result = None  # the session's model copy: the only large thing a run makes
