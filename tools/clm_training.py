"""Make the offline causal LM: the offline masked-LM turned decoder and trained for next-token prediction.

Explicit and reproducible; ``make run`` never trains. It reuses the masked-LM's corpus (build it once
with ``python -m tools.mlm_training build-corpus --work-dir .mlm-work``), then::

    python -m tools.clm_training train --work-dir .clm-work --corpus-dir .mlm-work --steps 1600
    python -m tools.clm_training export --work-dir .clm-work     # -> vizcore/weights/minilm-causal.*
    python -m tools.clm_training evaluate --corpus-dir .mlm-work # the shipped file on the whole held-out set

Training is resumable (``tools/training_loop.py``): ``train`` continues from ``<work-dir>/resume.pt``
(model, optimizer, data position, random streams, curve) and can be stopped at any time (Ctrl-C, or a
session ending); run it in sittings, exporting and committing the best checkpoint after each. Raising
``--steps`` in a later sitting continues the same run (its learning rate schedule is stretched to the
new total). Without the work
directory (a new machine), ``train --init-from vizcore/weights/minilm-causal.safetensors --steps N``
continues from the shipped weights: their step count and curve carry on, the optimizer starts afresh.

The model: transformers' ``BertLMHeadModel`` with ``is_decoder=True`` on the masked-LM's weights: the
same encoder layers now see a causal (look-ahead) mask, and the masked-LM head (transform + the tied
word embeddings) becomes the next-token head. Trained: every encoder layer, the position and segment
embeddings and the head's transform and bias; the word embeddings (30,522 x 384, tied to the output
layer) stay frozen, so the shipped file is only what changed. Windows are the masked-LM corpus's
64-token rows ([CLS] 62 tokens [SEP]); every body token is a target (the artificial final [SEP] is not).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from tools.command import config_from, number, run_command, tool_parser
from tools.mlm_training import (
    apply_weights_file,
    corpus_windows,
    evaluation_rows,
    heldout_set,
    learning_rate,
    load_tokenizer,
    read_corpus_summary,
    weights_and_heldout,
)
from tools.training_loop import LoopConfig, Recipe, export_best, train
from vizcore.mlm.weights import MASK_ROW_KEY

WEIGHTS_DIR = Path(__file__).resolve().parents[1] / "vizcore" / "weights"
WEIGHTS_FILE = "minilm-causal.safetensors"
FROZEN = ("bert.embeddings.word_embeddings.weight", "cls.predictions.decoder.weight")


@dataclass(frozen=True)
class TrainConfig(LoopConfig):
    steps: int = 1600
    seq_len: int = 64
    decay_fraction: float = 0.25  # lr decays linearly to 10 % over the last quarter of the steps
    eval_sequences: int = 512  # held-out windows per evaluation during training (spread over the set)


def new_causal_model(attn: str = "sdpa", mlm_weights: Path | None = None):
    """``BertLMHeadModel(is_decoder=True)`` on the embedded encoder with the masked-LM's tensors applied."""
    from safetensors.torch import load_file
    from transformers import BertLMHeadModel
    from transformers.utils import logging as hf_logging

    from vizcore.mlm.weights import apply_changed_state, checked_source, weights_path

    hf_logging.set_verbosity_error()
    model = BertLMHeadModel.from_pretrained(str(checked_source()), is_decoder=True, attn_implementation=attn)
    tokenizer = load_tokenizer()
    apply_changed_state(model, load_file(str(mlm_weights or weights_path())), tokenizer.mask_token_id)
    return model


def changed_state(model, mask_id: int) -> dict[str, torch.Tensor]:
    """Every tensor but the frozen word embeddings (and the decoder tied to them), plus the [MASK] row."""
    state = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items() if k not in FROZEN}
    state[MASK_ROW_KEY] = model.bert.embeddings.word_embeddings.weight[mask_id].detach().clone()
    return state


def parameter_groups(model, weight_decay: float) -> list[dict]:
    decay, no_decay = [], []
    for name, parameter in model.named_parameters():
        if name in FROZEN:
            parameter.requires_grad_(False)
        elif name.endswith("bias") or "LayerNorm" in name or "embeddings" in name:
            no_decay.append(parameter)
        else:
            decay.append(parameter)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def split(ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows [CLS] body [SEP] -> (inputs [CLS] body[:-1], targets body): next-token pairs, no final [SEP]."""
    return ids[:, :-2], ids[:, 1:-1]


def causal_loss(model, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    inputs, targets = split(ids)
    hidden = model.bert(input_ids=inputs).last_hidden_state
    logits = model.cls(hidden)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
    return loss, logits, targets


@torch.no_grad()
def evaluate(model, windows: np.ndarray, tokenizer, eval_sequences: int) -> dict:
    """Held-out next-token top-1 / top-5 accuracy and perplexity, and the everyday prompts' top 5."""
    from vizcore.decoder.probes import probe_results

    rows = evaluation_rows(len(windows), eval_sequences)
    hits1 = hits5 = total = 0
    nll = 0.0
    for start in range(0, len(rows), 64):
        ids = torch.from_numpy(np.asarray(windows[rows[start:start + 64]], dtype=np.int64))
        loss, logits, targets = causal_loss(model, ids)
        top5 = logits.topk(5, dim=-1).indices
        hits1 += int((top5[..., 0] == targets).sum())
        hits5 += int((top5 == targets[..., None]).any(-1).sum())
        total += targets.numel()
        nll += float(loss) * targets.numel()
    probes = probe_results(model, tokenizer)
    return {"heldout_top1": hits1 / total, "heldout_top5": hits5 / total, "heldout_loss": nll / total,
            "heldout_perplexity": math.exp(nll / total), "heldout_targets": total,
            "heldout_set": heldout_set(windows, rows), "probes_right": sum(p["hit"] for p in probes),
            "probes": probes}


class CausalLM(Recipe):
    """Next-token prediction on the masked-LM corpus's windows; the model is the masked-LM under a causal mask."""

    score = "heldout_top5"

    def __init__(self, config: TrainConfig, corpus: Path, model=None, tokenizer=None) -> None:
        super().__init__(config)
        self.windows = np.load(corpus_windows(corpus, "train", config.seq_len), mmap_mode="r")
        self.heldout = np.load(corpus_windows(corpus, "heldout", config.seq_len))
        self.tokenizer = tokenizer or load_tokenizer()
        self.model = model or new_causal_model()
        self.optimizer = torch.optim.AdamW(parameter_groups(self.model, config.weight_decay), lr=config.lr,
                                           betas=(0.9, 0.98), eps=1e-6)

    def train_size(self) -> int:
        return len(self.windows)

    def loss(self, rows: np.ndarray, generator: torch.Generator) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        ids = torch.from_numpy(np.asarray(self.windows[np.sort(rows)], dtype=np.int64))
        loss, _, _ = causal_loss(self.model, ids)
        return loss, {"loss": loss.detach()}

    def learning_rate(self, step: int, start: int) -> float:
        # The schedule counts from step 0, also after --init-from: a continuation is the flat part or the
        # decay of the stretched schedule, with no second warm-up (as the shipped sittings were trained).
        return learning_rate(step, self.config)

    def evaluate(self) -> dict:
        return evaluate(self.model, self.heldout, self.tokenizer, self.config.eval_sequences)

    def seen(self, step: int) -> dict[str, int]:
        return {"tokens": step * self.config.batch_size * (self.config.seq_len - 2)}

    def changed_state(self) -> dict[str, torch.Tensor]:
        return changed_state(self.model, self.tokenizer.mask_token_id)

    def load_weights(self, weights: Path) -> None:
        apply_weights_file(self.model, weights, self.tokenizer.mask_token_id)


def train_command(work: Path, corpus: Path, config: TrainConfig) -> dict:
    return train(config, work, lambda config: CausalLM(config, corpus))


def export_command(work: Path, corpus: Path, out_dir: Path = WEIGHTS_DIR, eval_sequences: int = 0) -> dict:
    """Best checkpoint -> fp16 safetensors of the changed tensors; the fp16 file measured on the whole
    held-out set (what users get), with the training curve, into ``minilm-causal.json``."""
    metrics = export_best(work, out_dir / WEIGHTS_FILE, lambda target: {
        "shipped": evaluate_command(corpus, target, eval_sequences), "corpus": read_corpus_summary(corpus)})
    target = out_dir / WEIGHTS_FILE
    return {"file": str(target), "bytes": target.stat().st_size,
            **{k: v for k, v in metrics["shipped"].items() if k != "probes"}}


def evaluate_command(corpus: Path, weights: Path, eval_sequences: int = 0) -> dict:
    model, tokenizer, heldout = weights_and_heldout(corpus, weights, lambda: new_causal_model(attn="eager"))
    return {"weights": str(weights), **evaluate(model, heldout, tokenizer, eval_sequences)}


def main(argv: list[str] | None = None) -> int:
    parser, commands = tool_parser("tools.clm_training", __doc__, ".clm-work", ("train", "export", "evaluate"),
                                   TrainConfig)
    for command in commands.values():
        command.add_argument("--corpus-dir", type=Path, default=Path(".mlm-work"))
    commands["evaluate"].add_argument("--weights", type=Path, default=WEIGHTS_DIR / WEIGHTS_FILE)
    for name in ("evaluate", "export"):
        commands[name].add_argument("--eval-sequences", type=number(int), default=0)
    args = parser.parse_args(argv)
    return run_command({
        "train": lambda: train_command(args.work_dir, args.corpus_dir, config_from(args, TrainConfig)),
        "evaluate": lambda: evaluate_command(args.corpus_dir, args.weights, args.eval_sequences),
        "export": lambda: export_command(args.work_dir, args.corpus_dir, eval_sequences=args.eval_sequences),
    }[args.command])


if __name__ == "__main__":
    sys.exit(main())
