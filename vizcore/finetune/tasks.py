"""One interface for every fine-tuning task, so one training loop (``training.train_task``) runs them all.

A task says how its examples become tensors (``encode`` once, ``collate`` per batch), what head sits on
the encoder (``build`` -> a ``TaskModel``), what is minimised (``loss``) and how held-out data is scored
(``evaluate``, whose ``metric`` key is the figure the curves and the CLI report). The tasks:

- ``sentence`` and ``pair`` (vizcore/finetune/classify.py): a pooled vector -> classes;
- ``token`` (vizcore/finetune/token_task.py): every word's first piece -> a BIO tag;
- ``qa`` (vizcore/finetune/qa_task.py): every passage token -> start and end logits.

Each task module adds its task to ``TASKS`` when imported; ``get_task`` imports them all.
"""

from __future__ import annotations

import importlib
import inspect
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import nn

from vizcore.errors import VizError
from vizcore.finetune import TASK_NAMES

TASK_MODULES = ("vizcore.finetune.classify", "vizcore.finetune.token_task", "vizcore.finetune.qa_task")


class TaskModel(nn.Module):
    """The session's copy of an encoder plus a task head: ``forward(inputs) = from_hidden(hidden(inputs))``.

    Split in two so that a frozen encoder's hidden states can be computed once and reused (mode head).
    """

    def __init__(self, encoder: nn.Module, head: nn.Module):
        super().__init__()
        self.encoder = encoder
        self.head = head

    def hidden(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.encoder(**inputs).last_hidden_state  # (B, T, H)

    def from_hidden(self, hidden: torch.Tensor, inputs: dict[str, torch.Tensor]) -> Any:
        raise NotImplementedError

    def forward(self, inputs: dict[str, torch.Tensor]) -> Any:
        return self.from_hidden(self.hidden(inputs), inputs)


@dataclass(frozen=True)
class Batch:
    inputs: dict[str, torch.Tensor]  # input_ids, attention_mask (B, T); token_type_ids when the encoder takes them
    targets: Any  # a tensor or a tuple of tensors, as the task's loss expects


class Task(ABC):
    """One fine-tuning task. Stateless: every call gets what it needs."""

    name: ClassVar[str]  # "sentence" | "pair" | "token" | "qa"
    title: ClassVar[str]  # for the UI
    metric: ClassVar[str]  # key of the main held-out figure in evaluate()'s dict
    metric_label: ClassVar[str]  # e.g. "accuracy", "entity F1"
    batch_label: ClassVar[str] = "accuracy"  # what batch_score measures, for the training curve
    extra_metrics: ClassVar[dict[str, str]] = {}  # more evaluate() keys shown beside the metric: key -> label
    defaults: ClassVar[dict[str, Any]] = {}  # FinetuneConfig fields this task sets otherwise (max_length, epochs...)
    learning_rates: ClassVar[dict[str, float]] = {}  # mode -> default learning rate, where the task needs another

    @abstractmethod
    def load_data(self, train: str, eval_path: str | None, seed: int, columns: dict[str, str | None]) -> Any:
        """The CLI's data: ``train`` is ``builtin`` or a file, ``eval_path`` an optional held-out file;
        ``columns`` the CLI's column options (None = the task's default). Returns an object with
        ``.train``, ``.test`` (each with ``len()``), ``.source`` and ``.split_note``."""

    @abstractmethod
    def build(self, encoder: nn.Module, data: Any, config: Any) -> TaskModel: ...

    @abstractmethod
    def encode(self, tokenizer: Any, split: Any, max_length: int) -> list:
        """One feature per example of ``split``, in order (token ids and targets, as plain lists)."""

    @abstractmethod
    def collate(self, features: list, pad_id: int, device: torch.device, encoder: nn.Module) -> Batch: ...

    @abstractmethod
    def loss(self, outputs: Any, targets: Any) -> torch.Tensor: ...

    @abstractmethod
    def batch_score(self, outputs: Any, targets: Any) -> float: ...

    @abstractmethod
    def evaluate(self, model: TaskModel, tokenizer: Any, split: Any, max_length: int) -> dict[str, float]:
        """Held-out figures (``self.metric`` among them); ``model`` is in eval mode."""

    def held_out_records(self, model: TaskModel, tokenizer: Any, split: Any, max_length: int) -> list[dict]:
        """One plain record per example of ``split`` with the model's prediction beside the gold one, for
        the CLI's JSON (classification tasks report theirs through ``analysis.evaluate``)."""
        return []


TASKS: dict[str, Task] = {}


def register(task: Task) -> Task:
    TASKS[task.name] = task
    return task


def _registered() -> dict[str, Task]:
    """Every task, its module imported on first use (they import this module, so not at import time)."""
    for module in TASK_MODULES:
        importlib.import_module(module)
    return TASKS


def get_task(name: str) -> Task:
    if name not in _registered():
        raise VizError(f"Unknown task '{name}': choose one of {', '.join(task_names())}.")
    return TASKS[name]


def task_names() -> tuple[str, ...]:
    return tuple(sorted(_registered(), key=lambda n: TASK_NAMES.index(n) if n in TASK_NAMES else len(TASK_NAMES)))


def hidden_size(encoder: nn.Module) -> int:
    config = encoder.config
    return int(getattr(config, "hidden_size", 0) or getattr(config, "dim", 0) or config.n_embd)


def pad_id_of(tokenizer) -> int:
    for candidate in (tokenizer.pad_token_id, tokenizer.eos_token_id, 0):
        if candidate is not None:
            return int(candidate)
    return 0


def takes_segments(encoder: nn.Module) -> bool:
    return "token_type_ids" in inspect.signature(encoder.forward).parameters


def collate(ids: list[list[int]], pad_id: int, device: torch.device, model: nn.Module,
            segments: list[list[int]] | None = None) -> dict[str, torch.Tensor]:
    """Right-pad to the longest in the batch: input_ids, attention_mask (B, T), and token_type_ids
    (``segments``, or zeros) when the model takes them."""
    width = max(len(row) for row in ids)
    input_ids = torch.full((len(ids), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(ids), width), dtype=torch.long)
    types = torch.zeros((len(ids), width), dtype=torch.long)
    for i, row in enumerate(ids):
        input_ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
        mask[i, : len(row)] = 1
        if segments is not None:
            types[i, : len(row)] = torch.tensor(segments[i], dtype=torch.long)
    batch = {"input_ids": input_ids.to(device), "attention_mask": mask.to(device)}
    if takes_segments(model):
        batch["token_type_ids"] = types.to(device)
    return batch


def pad_targets(rows: list[list[int]], width: int, fill: int, device: torch.device) -> torch.Tensor:
    """Per-token targets right-padded with ``fill`` (e.g. -100, which cross-entropy ignores): (B, width)."""
    out = torch.full((len(rows), width), fill, dtype=torch.long)
    for i, row in enumerate(rows):
        out[i, : len(row)] = torch.tensor(row, dtype=torch.long)
    return out.to(device)
