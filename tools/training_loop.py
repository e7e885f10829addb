"""The one training loop of the tools that train the shipped models (masked-LM, causal LM, NSP head).

A tool supplies a ``Recipe``: its data, model and optimizer, a batch's loss, its learning-rate
schedule, its evaluation and the tensors it ships; and a ``TrainConfig``, ``LoopConfig``'s shared
settings plus its own (``tools/command.py`` makes them ``train`` flags). This module owns the rest,
the same for every tool:

* the resumable run: ``<work-dir>/resume.pt`` holds the model, the optimizer, the step, the best score,
  both random streams (the recipe's generator and torch's, which drives dropout) and how many records
  of the curve belong to it. It is written at every evaluation and replaced whole or not at all, so a
  sitting may be stopped at any moment and the next one continues from the last evaluation exactly as
  an unbroken run would have (the same weights and curve, bit for bit on CPU with the same threads).
  The data order is a permutation fixed by the seed and the position in it is the step, so raising
  ``--steps`` in a later sitting continues the same run;
* ``--init-from`` shipped weights when there is no ``resume.pt``: their step count, data position and
  curve (copied into the log) carry on, the weights are measured again on this run's held-out set
  before training, and the optimizer starts afresh;
* the evaluation cadence (every ``--eval-every`` steps and at the last), the learning-curve log
  (``log.jsonl``, one record an evaluation), the best checkpoint (``best.safetensors``: the recipe's
  changed tensors, ``best.json``: its record and config) whenever the recipe's score beats the best;
* export: the best checkpoint in fp16 beside its metrics file (best, the tool's sections, the curve).
"""

from __future__ import annotations

import json
import os
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import torch

from tools.command import read_json
from vizcore.errors import VizError

RESUME, LOG, BEST_WEIGHTS, BEST_RECORD = "resume.pt", "log.jsonl", "best.safetensors", "best.json"


@dataclass(frozen=True)
class LoopConfig:
    """The settings every training tool has; a tool's ``TrainConfig`` adds its own and may change defaults."""

    steps: int = 1000
    batch_size: int = 32
    lr: float = 2e-4
    warmup: int = 50
    weight_decay: float = 0.01
    eval_every: int = 100
    seed: int = 0
    threads: int = 0
    init_from: str = ""

    HELP: ClassVar[dict[str, str]] = {
        "steps": "the run's total step count, not this sitting's (raise it to continue in a later sitting)",
        "eval_every": "evaluate (and save resume.pt) every this many steps, and at the last step",
        "threads": "torch threads (0: torch's default)",
        "init_from": "shipped weights to continue from when the work directory has no resume.pt "
                     "(their .json beside them gives the step count and the curve)",
    }


class Recipe(ABC):
    """What a tool supplies to ``train``: set ``model`` and ``optimizer`` in ``__init__``.

    ``score`` names the evaluation's number that picks the best checkpoint (higher is better);
    ``unlogged`` the evaluation's keys kept in ``best.json`` but not in the curve; ``shuffle`` False
    reads the training examples in their stored order (already shuffled when they were made).
    """

    score: str
    unlogged: tuple[str, ...] = ("probes",)
    progress_every: int = 10
    evaluate_fresh_start: bool = True  # measure the untrained start (an --init-from start is always measured)
    shuffle: bool = True
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer

    def __init__(self, config: LoopConfig) -> None:
        self.config = config

    @abstractmethod
    def train_size(self) -> int:
        """How many training examples there are (rows of ``loss``)."""

    @abstractmethod
    def loss(self, rows: np.ndarray, generator: torch.Generator) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The loss of the examples ``rows`` (B,), and the numbers the progress line shows."""

    @abstractmethod
    def learning_rate(self, step: int, start: int) -> float:
        """The rate of ``step``; ``start`` is the step the run began at (0, or the warm-started weights')."""

    @abstractmethod
    def evaluate(self) -> dict:
        """Held-out metrics (the model is in eval mode, without gradients); must hold ``score``."""

    @abstractmethod
    def seen(self, step: int) -> dict[str, int]:
        """What training has read by ``step``, for the curve (e.g. ``{"tokens": ...}``)."""

    @abstractmethod
    def changed_state(self) -> dict[str, torch.Tensor]:
        """The tensors a checkpoint ships: only what training changes."""

    @abstractmethod
    def load_weights(self, weights: Path) -> None:
        """Apply a shipped (fp16) weights file to the model (``--init-from``)."""

    def lr_scale(self, group: dict) -> float:
        """A parameter group's rate as a multiple of ``learning_rate``."""
        return 1.0

    def heldout_set(self) -> str | None:
        """A name of what ``evaluate`` measures; a resume.pt measured on another is refused. None: not checked."""
        return None


@dataclass
class _Run:
    step: int
    best: float
    start: int
    generator: torch.Generator
    resumed: bool


# ---- files -------------------------------------------------------------------------------------

def replace_whole(path: Path, write: Callable[[Path], object]) -> None:
    """``write(temporary)`` then rename it to ``path``: the file is the old one or the new one, never half."""
    partial = path.with_name(path.name + ".partial")
    write(partial)
    os.replace(partial, path)


def read_curve(work: Path) -> list[dict]:
    """The learning curve: the records of ``log.jsonl`` (none if there is no log)."""
    log = work / LOG
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write_curve(work: Path, curve: list[dict]) -> None:
    replace_whole(work / LOG, lambda path: path.write_text("".join(json.dumps(r) + "\n" for r in curve),
                                                            encoding="utf-8"))


def check_init_from(config: LoopConfig) -> None:
    """An ``--init-from`` file must come with the metrics file its export wrote (its step count and curve)."""
    if not config.init_from:
        return
    weights = Path(config.init_from)
    if not weights.is_file():
        raise VizError(f"--init-from: '{weights}' is missing.")
    hint = "--init-from needs the metrics file that export wrote beside the weights"
    metrics = read_json(weights.with_suffix(".json"), hint)
    if not isinstance(metrics.get("curve"), list) or "step" not in metrics.get("best", {}):
        raise VizError(f"'{weights.with_suffix('.json')}' has no best step or curve: {hint}.")


# ---- the loop ----------------------------------------------------------------------------------

def train(config: LoopConfig, work: Path, build: Callable[[LoopConfig], Recipe]) -> dict:
    """Train the recipe ``build(config)`` up to ``config.steps`` in all; returns the best checkpoint's record.

    Continues ``work``'s resume.pt if there is one, else starts from ``--init-from`` or from scratch.
    """
    check_init_from(config)
    work.mkdir(parents=True, exist_ok=True)
    if config.threads:
        torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)  # what the recipe draws as it builds (a new head's weights)
    recipe = build(config)
    run = _resume(recipe, work) or _start(recipe, work)
    rows = recipe.train_size()
    order = np.random.default_rng(config.seed).permutation(rows) if recipe.shuffle else np.arange(rows)
    if not run.resumed and (config.init_from or recipe.evaluate_fresh_start):
        _evaluate_and_save(recipe, work, run)
    recipe.model.train()
    started = time.time()
    while run.step < config.steps:
        shown = _train_step(recipe, run, order)
        if run.step % recipe.progress_every == 0:
            numbers = " ".join(f"{name} {float(value):.3f}" for name, value in shown.items())
            print(f"step {run.step} {numbers} lr {recipe.learning_rate(run.step, run.start):.2e} "
                  f"{(time.time() - started) / recipe.progress_every:.2f} s/step", file=sys.stderr, flush=True)
            started = time.time()
        if run.step % config.eval_every == 0 or run.step == config.steps:
            _evaluate_and_save(recipe, work, run)
    return read_json(work / BEST_RECORD, "no evaluation has been saved yet")


def optimizer_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer, loss: torch.Tensor) -> None:
    """One update: gradients of ``loss``, clipped to norm 1 over the trained parameters, the optimizer's step."""
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], 1.0)
    optimizer.step()


def _train_step(recipe: Recipe, run: _Run, order: np.ndarray) -> dict[str, torch.Tensor]:
    size = recipe.config.batch_size
    rows = order[(run.step * size) % len(order):][:size]
    rate = recipe.learning_rate(run.step, run.start)
    for group in recipe.optimizer.param_groups:
        group["lr"] = rate * recipe.lr_scale(group)
    loss, shown = recipe.loss(rows, run.generator)
    optimizer_step(recipe.model, recipe.optimizer, loss)
    run.step += 1
    return shown


def _start(recipe: Recipe, work: Path) -> _Run:
    """A new run: from step 0, or from ``--init-from``'s weights at their step count."""
    config = recipe.config
    start = _warm_start(recipe, work, Path(config.init_from)) if config.init_from else 0
    torch.manual_seed(config.seed + start)  # fresh dropout and masks for the data that follows
    return _Run(start, -1.0, start, torch.Generator().manual_seed(config.seed + start), resumed=False)


def _warm_start(recipe: Recipe, work: Path, weights: Path) -> int:
    """Load shipped weights and copy their curve into an empty log; returns their step count."""
    recipe.load_weights(weights)
    metrics = json.loads(weights.with_suffix(".json").read_text(encoding="utf-8"))
    if not read_curve(work):
        _write_curve(work, metrics["curve"])
    print(f"continuing from {weights} at step {metrics['best']['step']}", file=sys.stderr, flush=True)
    return int(metrics["best"]["step"])


def _resume(recipe: Recipe, work: Path) -> _Run | None:
    """The run saved in ``resume.pt`` (None if there is none), its curve cut back to the records it had."""
    path = work / RESUME
    if not path.exists():
        return None
    saved = torch.load(path, weights_only=False)
    measured = recipe.heldout_set()
    if measured and saved.get("heldout_set") != measured:
        raise VizError(
            f"{path} was evaluated on another held-out set ({saved.get('heldout_set') or 'one it does not name'}; "
            f"this run evaluates {measured}). Export its best checkpoint, then continue in a new work directory "
            "with --init-from, which measures the start on this run's set.")
    recipe.model.load_state_dict(saved["model"])
    recipe.optimizer.load_state_dict(saved["optimizer"])
    generator = torch.Generator().manual_seed(recipe.config.seed)
    if "generator" in saved:
        generator.set_state(saved["generator"])
    if "torch_rng" in saved:  # resume.pt files written before the one loop have neither of these two
        torch.set_rng_state(saved["torch_rng"])
    curve = read_curve(work)
    if len(curve) > saved.get("log_records", len(curve)):  # evaluations logged after it (stopped while saving)
        _write_curve(work, curve[: saved["log_records"]])
    print(f"resumed at step {saved['step']}", file=sys.stderr, flush=True)
    return _Run(saved["step"], saved["best"], saved.get("start", 0), generator, resumed=True)


def _evaluate_and_save(recipe: Recipe, work: Path, run: _Run) -> None:
    """Evaluate, log the record, keep the checkpoint if it is the best so far, then save resume.pt."""
    from safetensors.torch import save_file

    started = time.time()
    recipe.model.eval()
    with torch.no_grad():
        metrics = recipe.evaluate()
    recipe.model.train()
    record = {"step": run.step, **recipe.seen(run.step), "lr": recipe.learning_rate(run.step, run.start),
              "eval_seconds": round(time.time() - started, 1), "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
              **{k: v for k, v in metrics.items() if k not in recipe.unlogged}}
    with open(work / LOG, "a", encoding="utf-8") as log:
        log.write(json.dumps(record) + "\n")
    print(json.dumps(record), file=sys.stderr, flush=True)
    if metrics[recipe.score] > run.best:
        run.best = metrics[recipe.score]
        state = {k: v.contiguous() for k, v in recipe.changed_state().items()}
        replace_whole(work / BEST_WEIGHTS, lambda path: save_file(state, str(path)))
        best = {**record, **{k: metrics[k] for k in recipe.unlogged if k in metrics}, "config": asdict(recipe.config)}
        replace_whole(work / BEST_RECORD, lambda path: path.write_text(json.dumps(best, indent=2)))
    saved = {"model": recipe.model.state_dict(), "optimizer": recipe.optimizer.state_dict(), "step": run.step,
             "best": run.best, "start": run.start, "generator": run.generator.get_state(),
             "torch_rng": torch.get_rng_state(), "log_records": len(read_curve(work)),
             "heldout_set": recipe.heldout_set()}
    replace_whole(work / RESUME, lambda path: torch.save(saved, path))


# ---- export ------------------------------------------------------------------------------------

def export_best(work: Path, target: Path, measure: Callable[[Path], dict]) -> dict:
    """The best checkpoint -> ``target`` in fp16, and ``target``'s metrics file: ``{"best", **sections, "curve"}``.

    ``measure(target)`` returns the tool's sections (what the shipped file scores, the corpus...); a
    ``"best"`` among them is merged into the best checkpoint's record.
    """
    from safetensors.torch import load_file, save_file

    best_file = work / BEST_WEIGHTS
    if not best_file.is_file():
        raise VizError(f"'{best_file}' is missing: train in --work-dir {work} first.")
    target.parent.mkdir(parents=True, exist_ok=True)
    save_file({k: v.half().contiguous() for k, v in load_file(str(best_file)).items()}, str(target))
    sections = measure(target)
    best = {**read_json(work / BEST_RECORD, f"train in --work-dir {work} first"), **sections.pop("best", {})}
    metrics = {"best": best, **sections, "curve": read_curve(work)}
    target.with_suffix(".json").write_text(json.dumps(metrics, indent=1))
    return metrics
