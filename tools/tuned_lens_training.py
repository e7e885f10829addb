"""Train the tuned lens of the offline masked-LM (``minilm-mlm-tuned``): one affine translator per layer.

Explicit and reproducible; ``make run`` never trains. The text is the masked-LM's own corpus, built by its
tool (same documents, same hash split: the held-out windows were never trained on, by the masked-LM or by
the lens)::

    python -m tools.mlm_training build-corpus --work-dir .lens-work        # text + token windows
    python -m tools.tuned_lens_training train --work-dir .lens-work --steps 700
    python -m tools.tuned_lens_training export --work-dir .lens-work       # -> vizcore/weights/tuned-lens.*
    python -m tools.tuned_lens_card                                        # -> MODEL_CARD_TUNED_LENS.md

Resumable as every training tool here (``tools/training_loop.py``): ``resume.pt`` is written at every
evaluation; run ``train`` again with the same work directory and it continues from there, to the same
weights as an unbroken run. Seeds are fixed (``--seed``).

The recipe follows Belrose et al. (2023): translators ``h -> h + A_l h + b_l`` initialised to zero (the
logit lens), trained on ``KL(final || head(translator_l(h_l)))`` summed over layers (each translator gets the
gradient of its own layer's KL), SGD with Nesterov momentum 0.9, weight decay 1e-3 (towards the identity,
i.e. towards the logit lens), the rate decayed linearly to zero. The model itself is frozen and in eval mode.
Positions: BERT's 15 % selection with 80/10/10 (the inputs the masked-LM was trained on); the held-out
measurements are at the positions that became [MASK], which is what the fill-mask page reads.
"""

from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from tools.command import config_from, number, read_json, run_command, tool_parser
from tools.mlm_training import corpus_windows, evaluation_rows, heldout_set, read_corpus_summary, special_positions
from tools.training_loop import BEST_RECORD, BEST_WEIGHTS, LoopConfig, Recipe, read_curve, train
from vizcore.errors import VizError
from vizcore.mlm.masking import IGNORE, MASKED, mask_tokens, ordinary_token_ids
from vizcore.mlm.tuned_lens import (
    LensTally,
    TunedLens,
    file_fingerprint,
    lens_loss,
    load_tuned_lens,
    save_tuned_lens,
    tally_batch,
    translator_parameters,
)

WEIGHTS_DIR = Path(__file__).resolve().parents[1] / "vizcore" / "weights"
WEIGHTS_FILE = "tuned-lens.safetensors"
EVAL_SEED = 1234  # the held-out masks: the same at every evaluation and in the export's measurement


@dataclass(frozen=True)
class TrainConfig(LoopConfig):
    steps: int = 700
    batch_size: int = 32
    lr: float = 1.0
    warmup: int = 0
    weight_decay: float = 1e-3
    momentum: float = 0.9
    eval_every: int = 100
    eval_sequences: int = 256  # held-out windows measured during training (the export measures all of them)
    seq_len: int = 64
    threads: int = 1


def load_masked_lm():
    """The built-in masked-LM exactly as the app loads it (embedded encoder + shipped tensors), on the CPU."""
    from vizcore.model.catalog import MLM_MODEL
    from vizcore.model.loading import load_model

    return load_model(MLM_MODEL, device="cpu", head="mlm")


def learning_rate(step: int, config: TrainConfig) -> float:
    """Linear warm-up over ``warmup`` steps, then linear decay to zero at ``steps`` (the paper's schedule)."""
    if step < config.warmup:
        return config.lr * (step + 1) / config.warmup
    return config.lr * max(0.0, 1 - (step - config.warmup) / max(1, config.steps - config.warmup))


class LensRecipe(Recipe):
    """Translators for a frozen masked-LM; ``loaded`` is a ``LoadedModel`` (the built-in one by default)."""

    score = "kl_score"
    unlogged = ()
    progress_every = 10
    evaluate_fresh_start = True  # the untrained lens is the logit lens: the curve starts from it

    def __init__(self, config: TrainConfig, corpus: Path, loaded=None) -> None:
        from vizcore.mlm.fill_mask import mlm_head

        super().__init__(config)
        self.loaded = loaded or load_masked_lm()
        self.encoder = self.loaded.model.base_model.eval()
        self.head = mlm_head(self.loaded.model)
        if self.head is None:
            raise VizError(f"'{self.loaded.name}' has no masked-LM head that can read a hidden state.")
        self.tokenizer = self.loaded.tokenizer
        self.windows = np.load(corpus_windows(corpus, "train", config.seq_len), mmap_mode="r")
        heldout = np.load(corpus_windows(corpus, "heldout", config.seq_len))
        self.eval_rows = evaluation_rows(len(heldout), config.eval_sequences)
        self.heldout, self.heldout_name = heldout[self.eval_rows], heldout_set(heldout, self.eval_rows)
        self.replacement = ordinary_token_ids(self.tokenizer)
        config_of = self.loaded.model.config
        self.model = TunedLens(config_of.num_hidden_layers, config_of.hidden_size)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=config.lr, momentum=config.momentum,
                                         nesterov=True, weight_decay=config.weight_decay)
        self._logit_means: dict | None = None

    @torch.no_grad()
    def hidden_at(self, ids: torch.Tensor, generator: torch.Generator, only_masks: bool) -> torch.Tensor:
        """BERT's masking of the windows ``ids`` (B, T), then every layer's hidden state at the selected
        positions (or at those that became [MASK]). (L1, N, D)"""
        special = special_positions(ids, self.tokenizer)
        inputs, labels, kinds = mask_tokens(ids, special, self.tokenizer.mask_token_id, self.replacement, generator)
        where = kinds == MASKED if only_masks else labels != IGNORE
        states = self.encoder(input_ids=inputs, output_hidden_states=True).hidden_states
        return torch.stack([h[where] for h in states])

    def train_size(self) -> int:
        return len(self.windows)

    def loss(self, rows: np.ndarray, generator: torch.Generator) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        ids = torch.from_numpy(np.asarray(self.windows[np.sort(rows)], dtype=np.int64))
        losses = lens_loss(self.model, self.head, self.hidden_at(ids, generator, only_masks=False))  # (L,)
        return losses.sum(), {"kl": losses.detach().mean(), "kl_first": losses.detach()[0]}

    def learning_rate(self, step: int, start: int) -> float:
        return learning_rate(step, self.config)

    def evaluate(self) -> dict:
        means = measure(self, self.model, self.heldout, need_logit=self._logit_means is None)
        self._logit_means = self._logit_means or means["logit"]
        tuned = means["tuned"]
        return {"kl_score": math.exp(-float(np.mean(tuned["kl"][:-1]))), "tuned": tuned,
                "logit": self._logit_means, "positions": means["positions"]}

    def seen(self, step: int) -> dict[str, int]:
        return {"tokens": step * self.config.batch_size * self.config.seq_len}

    def changed_state(self) -> dict[str, torch.Tensor]:
        return {"weight": self.model.weight.detach().clone(), "bias": self.model.bias.detach().clone()}

    def load_weights(self, weights: Path) -> None:
        lens, _ = load_tuned_lens(weights, self.model.num_layers, self.model.hidden)
        self.model.load_state_dict(lens.state_dict())

    def heldout_set(self) -> str:
        return self.heldout_name


def measure(recipe: LensRecipe, lens: TunedLens | None, windows: np.ndarray, need_logit: bool = True,
            batch: int = 32) -> dict:
    """Per row, on ``windows`` at the positions that became [MASK] (fixed seed): mean KL to the final
    distribution and top-1 / top-5 agreement, for the logit lens (when ``need_logit``) and the tuned lens."""
    generator = torch.Generator().manual_seed(EVAL_SEED)
    rows = recipe.model.num_layers + 1
    logit, tuned = LensTally.empty(rows), LensTally.empty(rows)
    for start in range(0, len(windows), batch):
        ids = torch.from_numpy(np.asarray(windows[start:start + batch], dtype=np.int64))
        hidden = recipe.hidden_at(ids, generator, only_masks=True)
        if need_logit:
            tally_batch(recipe.head, lens, hidden, logit, tuned)
        else:
            with torch.no_grad():
                tuned.add(recipe.head(lens(hidden)).float())
    return {"logit": logit.means() if need_logit else None, "tuned": tuned.means(), "positions": tuned.positions}


def measure_probes(loaded, lens: TunedLens) -> dict:
    """Per row, the mean over the 40 everyday probe sentences (short, one [MASK]; what the page is given) of the
    KL to the output and the top-5 agreement, for both lenses: a second measurement, off the training
    distribution of 64-token windows."""
    from vizcore.mlm.fill_mask import fill_mask
    from vizcore.mlm.probes import PROBES

    sums = {name: {"kl": 0.0, "top5": 0.0} for name in ("logit", "tuned")}
    for sentence, _ in PROBES:
        result = fill_mask(loaded, sentence, top_k=1, lens_top_k=5, lens=lens)
        final = int(result.lens.token_ids[-1, 0, 0])
        for name, read in (("logit", result.lens), ("tuned", result.tuned_lens)):
            sums[name]["kl"] = sums[name]["kl"] + read.kl_to_final[:, 0].astype(np.float64)
            sums[name]["top5"] = sums[name]["top5"] + (read.token_ids[:, 0, :] == final).any(-1)
    return {"sentences": len(PROBES), **{name: {k: (v / len(PROBES)).tolist() for k, v in sums[name].items()}
                                          for name in sums}}


def train_command(work: Path, config: TrainConfig) -> dict:
    best = train(config, work, lambda config: LensRecipe(config, work))
    return {k: best[k] for k in ("step", "kl_score", "positions") if k in best}


# ---- export --------------------------------------------------------------------------------------

def machine_load() -> str:
    """The 1, 5 and 15 minute load averages (as ``uptime`` prints them), for the card."""
    return ", ".join(f"{load:.2f}" for load in os.getloadavg())


def export_command(work: Path, eval_sequences: int = 0, out_dir: Path = WEIGHTS_DIR) -> dict:
    """The best checkpoint -> fp16 ``tuned-lens.safetensors`` (naming the masked-LM weights it belongs to),
    measured as shipped on ``eval_sequences`` held-out windows (0: all) -> ``tuned-lens.json``."""
    import json

    from safetensors.torch import load_file

    from vizcore.mlm.weights import weights_path as mlm_weights_path

    best_file = work / BEST_WEIGHTS
    if not best_file.is_file():
        raise VizError(f"'{best_file}' is missing: train in --work-dir {work} first.")
    best = read_json(work / BEST_RECORD, f"train in --work-dir {work} first")
    state = load_file(str(best_file))
    lens = TunedLens(*state["weight"].shape[:2])
    lens.load_state_dict(state)
    target = out_dir / WEIGHTS_FILE
    save_tuned_lens(lens, target, model="minilm-mlm-tuned", model_weights=file_fingerprint(mlm_weights_path()))
    config = TrainConfig(**{k: v for k, v in best["config"].items() if k in TrainConfig.__dataclass_fields__})
    recipe = LensRecipe(TrainConfig(**{**asdict(config), "eval_sequences": eval_sequences}), work)
    shipped, _ = load_tuned_lens(target, lens.num_layers, lens.hidden)
    started = time.time()
    measured = measure(recipe, shipped, recipe.heldout)
    probes = measure_probes(recipe.loaded, shipped)
    metrics = {"best": best, "heldout": {"set": recipe.heldout_name, "positions": measured["positions"],
                                         "where": "positions that became [MASK] (BERT's 15 % / 80-10-10, seed "
                                                  f"{EVAL_SEED})", "seconds": round(time.time() - started, 1),
                                         "load": machine_load()},
               "logit": measured["logit"], "tuned": measured["tuned"], "probes": probes,
               "bytes": target.stat().st_size,
               "parameters": translator_parameters(lens.num_layers, lens.hidden),
               "corpus": read_corpus_summary(work), "curve": read_curve(work)}
    target.with_suffix(".json").write_text(json.dumps(metrics, indent=1))
    return {"file": str(target), "bytes": metrics["bytes"], "positions": measured["positions"],
            "logit_kl": measured["logit"]["kl"], "tuned_kl": measured["tuned"]["kl"]}


def main(argv: list[str] | None = None) -> int:
    parser, commands = tool_parser("tools.tuned_lens_training", __doc__, ".lens-work", ("train", "export"),
                                   TrainConfig)
    commands["export"].add_argument("--eval-sequences", type=number(int), default=0,
                                    help="held-out windows to measure the shipped file on (0: all)")
    args = parser.parse_args(argv)
    torch.set_num_threads(max(1, getattr(args, "threads", 1)))  # export measures at one thread
    return run_command({
        "train": lambda: train_command(args.work_dir, config_from(args, TrainConfig)),
        "export": lambda: export_command(args.work_dir, args.eval_sequences),
    }[args.command])


if __name__ == "__main__":
    sys.exit(main())
