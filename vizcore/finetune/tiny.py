"""A Transformer encoder written from scratch, as in the tutorials, trained on toy digit tasks in seconds.

Pieces follow *The Annotated Transformer*: ``attention`` returns ``(output, weights)``,
``MultiHeadAttention``, ``PositionalEncoding`` (the sinusoidal table of ``vizcore.positional.encoding``) and a
post-norm ``EncoderLayer``, LayerNorm(x + sublayer(x)), as in its text, the paper and BERT (its code
puts the norm first "for code simplicity"). The model reads digits and writes one digit per position:

* ``reverse``: position i outputs input digit n-1-i, so a head learns to look at the mirrored
  position (the anti-diagonal of its attention map);
* ``sort``: position i outputs the i-th smallest input digit.

``train_tiny`` snapshots the attention of a fixed example during training so a page can show the
pattern forming; ``TinyJob`` runs it in a background thread with one torch thread.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
from torch import nn

from vizcore.errors import VizError
from vizcore.jobs import TrainingHistory, TrainingJob
from vizcore.positional.encoding import sinusoidal_encoding

TASKS = ("reverse", "sort")
DIGITS = 10


@dataclass(frozen=True)
class TinyConfig:
    task: str = "reverse"
    length: int = 8  # digits per sequence
    d_model: int = 64
    heads: int = 4
    layers: int = 2
    d_ff: int = 128
    steps: int = 300
    batch_size: int = 64
    lr: float = 3e-3
    seed: int = 0
    snapshot_every: int = 25

    def validate(self) -> "TinyConfig":
        if self.task not in TASKS:
            raise VizError(f"Unknown task '{self.task}': choose reverse or sort.")
        if not 2 <= self.length <= 16:
            raise VizError(f"The sequence length must be 2 to 16 digits; got {self.length}.")
        if self.d_model % self.heads or not 1 <= self.heads <= 8:
            raise VizError(f"d_model ({self.d_model}) must split evenly over 1 to 8 heads; got {self.heads}.")
        if not 1 <= self.layers <= 4 or not 10 <= self.steps <= 5000:
            raise VizError("Use 1 to 4 layers and 10 to 5,000 steps.")
        return self


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Scaled dot-product attention. q, k, v (B, H, T, d_k) -> output (B, H, T, d_k), weights (B, H, T, T)."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (B, H, T, T)
    weights = scores.softmax(dim=-1)
    return weights @ v, weights


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, heads: int):
        super().__init__()
        self.heads, self.d_k = heads, d_model // heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x (B, T, D) -> output (B, T, D), weights (B, H, T, T)."""
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, self.d_k).permute(2, 0, 3, 1, 4)  # 3 x (B, H, T, d_k)
        mixed, weights = attention(q, k, v)
        return self.out(mixed.transpose(1, 2).reshape(b, t, d)), weights


class PositionalEncoding(nn.Module):
    """Adds the fixed sinusoidal table (not learned) to the token embeddings."""

    def __init__(self, d_model: int, max_len: int = 64):
        super().__init__()
        table = torch.tensor(sinusoidal_encoding(max_len, d_model), dtype=torch.float32)
        self.register_buffer("table", table, persistent=False)  # (max_len, D)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.table[: x.size(1)]  # (B, T, D)


class EncoderLayer(nn.Module):
    """Post-norm block, as in the paper: h = LayerNorm(x + attention(x)), then LayerNorm(h + feed-forward(h))."""

    def __init__(self, d_model: int, heads: int, d_ff: int):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attention = MultiHeadAttention(d_model, heads)
        self.feed_forward = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x (B, T, D) -> output (B, T, D), weights (B, H, T, T)."""
        mixed, weights = self.attention(x)
        x = self.norm1(x + mixed)
        return self.norm2(x + self.feed_forward(x)), weights


class TinyTransformer(nn.Module):
    def __init__(self, config: TinyConfig):
        super().__init__()
        # The tutorials scale embeddings by sqrt(d_model) because theirs start small; nn.Embedding starts
        # at N(0, 1), as large as the sinusoidal table already, and scaling it by 8 drowns the position
        # signal: reversal then stays at chance for the whole 30-second budget.
        self.scale = 1.0
        self.embed = nn.Embedding(DIGITS, config.d_model)
        self.position = PositionalEncoding(config.d_model, max(64, config.length))
        self.layers = nn.ModuleList(EncoderLayer(config.d_model, config.heads, config.d_ff)
                                    for _ in range(config.layers))
        self.unembed = nn.Linear(config.d_model, DIGITS)

    def forward(self, digits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """digits (B, T) -> logits (B, T, 10), attention (B, layer, head, T, T)."""
        x = self.position(self.embed(digits) * self.scale)
        maps = []
        for layer in self.layers:
            x, weights = layer(x)
            maps.append(weights)
        return self.unembed(x), torch.stack(maps, dim=1)  # the last layer's output is already normalised


def example_digits(config: TinyConfig) -> np.ndarray:
    """The fixed input whose attention is shown: distinct digits (where possible) in a seeded order."""
    order = np.random.default_rng(config.seed).permutation(config.length)
    return (np.arange(config.length) % DIGITS)[order]


def make_batch(task: str, size: int, length: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Random digit sequences and their targets, both (size, length)."""
    digits = torch.randint(0, DIGITS, (size, length), generator=generator)
    target = digits.flip(1) if task == "reverse" else digits.sort(dim=1).values
    return digits, target


class TinyHistory(TrainingHistory):
    """steps: ``{"step", "loss", "token_accuracy", "sequence_accuracy"}``; snapshots: ``(step, [layer, head,
    q, k])``."""


@dataclass
class TinyResult:
    model: TinyTransformer
    config: TinyConfig
    example: np.ndarray  # the digits whose attention is snapshotted, (T,)
    history: TinyHistory
    seconds: float
    stopped: bool

    @property
    def token_accuracy(self) -> float:
        return self.history.steps[-1]["token_accuracy"] if self.history.steps else float("nan")

    @property
    def sequence_accuracy(self) -> float:
        return self.history.steps[-1]["sequence_accuracy"] if self.history.steps else float("nan")


def evaluate_tiny(model: TinyTransformer, digits: torch.Tensor, target: torch.Tensor) -> tuple[float, float]:
    """Token accuracy and whole-sequence accuracy on a fixed batch."""
    with torch.no_grad():
        predicted = model(digits)[0].argmax(-1)
    correct = predicted == target
    return float(correct.float().mean()), float(correct.all(1).float().mean())


def train_tiny(config: TinyConfig, history: TinyHistory | None = None, stop: threading.Event | None = None,
               on_step: Callable[[int], None] | None = None, eval_every: int = 25) -> TinyResult:
    """Train from scratch with Adam; every ``eval_every`` steps record loss and accuracy on 512 fixed
    held-out sequences, every ``snapshot_every`` the attention of one fixed example."""
    config = config.validate()
    started = time.perf_counter()
    torch.manual_seed(config.seed)
    generator = torch.Generator().manual_seed(config.seed)
    model = TinyTransformer(config)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    held_digits, held_target = make_batch(config.task, 512, config.length,
                                          torch.Generator().manual_seed(10_000 + config.seed))
    example = torch.as_tensor(example_digits(config))
    history = TinyHistory() if history is None else history
    _snapshot(model, example, 0, history)
    stopped, done = False, 0
    for step in range(1, config.steps + 1):
        if stop is not None and stop.is_set():
            stopped = True
            break
        digits, target = make_batch(config.task, config.batch_size, config.length, generator)
        logits, _ = model(digits)
        loss = nn.functional.cross_entropy(logits.reshape(-1, DIGITS), target.reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        done = step
        if step % eval_every == 0 or step == config.steps:
            _record(model, held_digits, held_target, step, loss.item(), history)
        if step % config.snapshot_every == 0 or step == config.steps:
            _snapshot(model, example, step, history)
        if on_step is not None:
            on_step(step)
    if stopped and done and history.snapshots[-1][0] != done:  # the partial model's final state
        _record(model, held_digits, held_target, done, loss.item(), history)
        _snapshot(model, example, done, history)
    return TinyResult(model.eval(), config, example.numpy(), history, time.perf_counter() - started, stopped)


def _record(model: TinyTransformer, digits: torch.Tensor, target: torch.Tensor, step: int, loss: float,
            history: TinyHistory) -> None:
    if history.steps and history.steps[-1]["step"] == step:
        return
    token, sequence = evaluate_tiny(model, digits, target)
    history.steps.append({"step": step, "loss": loss, "token_accuracy": token, "sequence_accuracy": sequence})


def _snapshot(model: TinyTransformer, example: torch.Tensor, step: int, history: TinyHistory) -> None:
    with torch.no_grad():
        maps = model(example[None])[1][0]  # (layer, head, T, T)
    history.snapshots.append((step, maps.numpy().astype(np.float32)))


def predict_tiny(result: TinyResult, digits: list[int]) -> list[int]:
    """The trained model's output digits for one input sequence of the trained length."""
    if len(digits) != result.config.length or any(not 0 <= d < DIGITS for d in digits):
        raise VizError(f"Give exactly {result.config.length} digits (0-9).")
    with torch.no_grad():
        return result.model(torch.tensor([digits]))[0][0].argmax(-1).tolist()


def anti_diagonal_mass(weights: np.ndarray) -> float:
    """Mean attention each query puts on its mirrored key: weights (..., T, T) -> mean of w[i, T-1-i]."""
    t = weights.shape[-1]
    return float(weights[..., np.arange(t), t - 1 - np.arange(t)].mean())


class TinyJob(TrainingJob):
    """``train_tiny`` in a daemon thread, one torch thread; poll ``snapshot()`` (a TinyHistory);
    ``stop()`` ends it; ``result`` is a TinyResult once it returns."""

    name = "vizcore-tiny"
    kind = "tiny Transformer run"
    history_type = TinyHistory
    train = staticmethod(train_tiny)
