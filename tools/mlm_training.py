"""Make the offline masked-LM: MLM fine-tuning of the embedded all-MiniLM-L6-v2 on offline English.

Explicit and reproducible; ``make run`` never trains. Three steps, each a command::

    python -m tools.mlm_training build-corpus --work-dir .mlm-work   # text + token windows
    python -m tools.mlm_training train --work-dir .mlm-work --steps 6000
    python -m tools.mlm_training export --work-dir .mlm-work         # -> vizcore/weights/
    python -m tools.mlm_training evaluate --work-dir .mlm-work --weights FILE   # held-out metrics

Training can continue from the shipped weights in a later sitting (``train --init-from
vizcore/weights/minilm-mlm.safetensors --steps <new total>``): the step count, the data order and the
learning curve carry on from where the shipped model stopped; the shipped weights are first measured
on this run's held-out set, which a checkpoint must beat to replace them; the optimizer starts afresh
with a short warm-up. (With a rebuilt, larger corpus the data order is a new permutation of it.)

What is trained (the route measured in docs/MASKED_LM.md): every encoder layer, the position and
segment embeddings, a new MLM head, and only the [MASK] row of the word embeddings; the rest of
the word-embedding matrix (tied to the output layer) stays frozen, so the shipped weights are only
what changed. BERT's 15 % masking with 80/10/10; vocabulary logits only at selected positions and
(optionally) bfloat16 autocast, which only pays on CPUs with native bf16.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from tools.command import config_from, number, run_command, tool_parser
from tools.training_loop import LoopConfig, Recipe, export_best, train
from vizcore.errors import VizError
from vizcore.mlm.masking import IGNORE, mask_tokens, ordinary_token_ids
from vizcore.mlm.probes import PROBES, probe_hit
from vizcore.mlm.weights import MASK_ROW_KEY, apply_changed_state

WEIGHTS_DIR = Path(__file__).resolve().parents[1] / "vizcore" / "weights"
WEIGHTS_FILE = "minilm-mlm.safetensors"


@dataclass(frozen=True)
class TrainConfig(LoopConfig):
    steps: int = 6000
    warmup: int = 100
    eval_every: int = 250
    seq_len: int = 64
    decay_fraction: float = 0.25  # lr decays linearly to 10 % over the last quarter of the steps
    eval_sequences: int = 0  # 0: the whole held-out set; else this many windows spread evenly over it
    bf16: bool = False  # bfloat16 autocast: ~3x faster on CPUs with native bf16, 20x slower without (AVX2 only)


def _base_model_dir() -> Path:
    from vizcore.model.loading import embedded_minilm_path

    return embedded_minilm_path()


def load_tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(_base_model_dir()), use_fast=True)


def new_mlm_model(attn: str = "sdpa"):
    """BertForMaskedLM with the embedded encoder's weights and a fresh head (tied decoder)."""
    from transformers import BertForMaskedLM
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    return BertForMaskedLM.from_pretrained(str(_base_model_dir()), attn_implementation=attn)


# ---- corpus -> token windows ------------------------------------------------------------------

def tokenize_windows(text_path: Path, tokenizer, seq_len: int) -> np.ndarray:
    """Documents (one per line) -> one token stream -> rows of [CLS] seq_len-2 tokens [SEP]. (N, seq_len)"""
    stream: list[int] = []
    lines = text_path.read_text(encoding="utf-8").splitlines()
    for start in range(0, len(lines), 2000):
        batch = tokenizer(lines[start:start + 2000], add_special_tokens=False)["input_ids"]
        for ids in batch:
            stream.extend(ids)
            stream.append(tokenizer.sep_token_id)  # documents are separated like BERT's segments
    body = seq_len - 2
    rows = len(stream) // body
    windows = np.asarray(stream[: rows * body], dtype=np.int32).reshape(rows, body)
    cls = np.full((rows, 1), tokenizer.cls_token_id, dtype=np.int32)
    sep = np.full((rows, 1), tokenizer.sep_token_id, dtype=np.int32)
    return np.concatenate([cls, windows, sep], axis=1)


def build_corpus_command(work: Path, seq_len: int) -> dict:
    from tools.corpus import build_corpus, fetch_sotu, find_gensim_wheel

    work.mkdir(parents=True, exist_ok=True)
    wheel = find_gensim_wheel([str(work), "."])
    counts = build_corpus(work, wheel, str(fetch_sotu(work)))
    tokenizer = load_tokenizer()
    for split in ("train", "heldout"):
        np.save(work / f"{split}-{seq_len}.npy", tokenize_windows(work / f"{split}.txt", tokenizer, seq_len))
    summary = {"sources": counts, "seq_len": seq_len,
               "train_windows": int(np.load(work / f"train-{seq_len}.npy", mmap_mode="r").shape[0]),
               "heldout_windows": int(np.load(work / f"heldout-{seq_len}.npy", mmap_mode="r").shape[0])}
    (work / "corpus.json").write_text(json.dumps(summary, indent=2))
    return summary


def corpus_windows(corpus: Path, split: str, seq_len: int) -> Path:
    """The token windows ``build-corpus`` wrote for ``split`` ("train" | "heldout"), checked to exist."""
    path = corpus / f"{split}-{seq_len}.npy"
    if not path.is_file():
        raise VizError(f"'{path}' is missing: run python -m tools.mlm_training build-corpus --work-dir {corpus} first.")
    return path


def read_corpus_summary(corpus: Path) -> dict:
    """What ``build-corpus`` counted (sources, words, windows), or {} for a corpus built without it."""
    path = corpus / "corpus.json"
    return json.loads(path.read_text()) if path.exists() else {}


def special_positions(ids: torch.Tensor, tokenizer) -> torch.Tensor:
    """Where a window has [CLS] or [SEP] (never masked). (B, T) bool"""
    return (ids == tokenizer.cls_token_id) | (ids == tokenizer.sep_token_id)


# ---- what is trained ---------------------------------------------------------------------------

def trainable_setup(model, mask_id: int, weight_decay: float) -> list[dict]:
    """Parameter groups; the word embeddings learn only their [MASK] row (a gradient hook zeroes the rest)."""
    words = model.bert.embeddings.word_embeddings.weight
    row = torch.zeros(words.shape[0], 1)
    row[mask_id] = 1.0
    words.register_hook(lambda grad: grad * row.to(grad.device, grad.dtype))
    decay, no_decay = [], []
    for name, parameter in model.named_parameters():
        if parameter is words or name.endswith("bias") or "LayerNorm" in name or "embeddings" in name:
            no_decay.append(parameter)
        else:
            decay.append(parameter)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def changed_state(model, mask_id: int) -> dict[str, torch.Tensor]:
    """Only what training changes: every tensor but the frozen word-embedding matrix, plus its [MASK] row."""
    state = {k: v.detach().clone() for k, v in model.state_dict().items()
             if k not in ("bert.embeddings.word_embeddings.weight", "cls.predictions.decoder.weight")
             and not k.startswith("bert.pooler")}
    state[MASK_ROW_KEY] = model.bert.embeddings.word_embeddings.weight[mask_id].detach().clone()
    return state


def apply_weights_file(model, weights: Path, mask_id: int) -> None:
    """``apply_changed_state`` from a saved file (fp16 or fp32; values take the model's dtype)."""
    from safetensors.torch import load_file

    apply_changed_state(model, load_file(str(weights)), mask_id)

# ---- the recipe --------------------------------------------------------------------------------

def masked_loss(model, inputs: torch.Tensor, labels: torch.Tensor, bf16: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Cross-entropy at selected positions only; returns (loss, logits (M, vocab))."""
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16 and inputs.device.type == "cpu"):
        hidden = model.bert(input_ids=inputs).last_hidden_state  # (B, T, D)
        selected = labels != IGNORE
        logits = model.cls(hidden[selected])  # (M, V): the vocabulary projection only where it counts
    return F.cross_entropy(logits.float(), labels[selected]), logits


def learning_rate(step: int, config: TrainConfig, start: int = 0) -> float:
    """Warm-up from ``start`` (0, or the steps the warm-started weights had), then flat, then linear decay."""
    if step - start < config.warmup:
        return config.lr * (step - start + 1) / config.warmup
    decay_start = start + int((config.steps - start) * (1 - config.decay_fraction))
    if step < decay_start:
        return config.lr
    done = (step - decay_start) / max(1, config.steps - decay_start)
    return config.lr * (1 - 0.9 * min(1.0, done))


@torch.no_grad()
def evaluate(model, windows: np.ndarray, tokenizer, replacement: torch.Tensor, config: TrainConfig) -> dict:
    """Held-out top-1 / top-5 over selected positions (fixed seed, so every eval sees the same masks).

    The held-out file lists its sources one after another, so a sample is spread over all of it
    (the first 512 windows alone were WordNet glosses only).
    """
    generator = torch.Generator().manual_seed(1234)
    hits1 = hits5 = total = mask_hits5 = mask_total = 0
    losses = []
    rows = evaluation_rows(len(windows), config.eval_sequences)
    for start in range(0, len(rows), 64):
        ids = torch.from_numpy(np.asarray(windows[rows[start:start + 64]], dtype=np.int64))
        special = special_positions(ids, tokenizer)
        inputs, labels, kinds = mask_tokens(ids, special, tokenizer.mask_token_id, replacement, generator)
        loss, logits = masked_loss(model, inputs, labels, config.bf16)
        target = labels[labels != IGNORE]
        top5 = logits.float().topk(5, dim=-1).indices
        hit5 = (top5 == target[:, None]).any(-1)
        hits1 += int((top5[:, 0] == target).sum())
        hits5 += int(hit5.sum())
        total += len(target)
        was_mask = kinds[labels != IGNORE] == 1
        mask_hits5 += int(hit5[was_mask].sum())
        mask_total += int(was_mask.sum())
        losses.append(float(loss))
    probes = probe_results(model, tokenizer)
    return {"heldout_top1": hits1 / total, "heldout_top5": hits5 / total,
            "heldout_mask_top5": mask_hits5 / max(1, mask_total), "heldout_positions": total,
            "heldout_loss": float(np.mean(losses)), "heldout_set": heldout_set(windows, rows),
            "probes_right": sum(p["hit"] for p in probes), "probes": probes}


def evaluation_rows(available: int, wanted: int) -> np.ndarray:
    """Indices of the held-out windows to evaluate: all, or ``wanted`` spread evenly over them."""
    if wanted <= 0 or wanted >= available:
        return np.arange(available)
    return np.unique(np.linspace(0, available - 1, wanted).round().astype(int))


def heldout_set(windows: np.ndarray, rows: np.ndarray) -> str:
    """A name for what was evaluated, so curves measured on different held-out sets are not joined."""
    digest = hashlib.sha1(np.ascontiguousarray(windows[rows]).tobytes()).hexdigest()[:8]
    return f"{len(rows)} of {len(windows)} windows, {digest}"


@torch.no_grad()
def probe_results(model, tokenizer) -> list[dict]:
    rows = []
    for sentence, answers in PROBES:
        enc = tokenizer(sentence, return_tensors="pt")
        index = int((enc["input_ids"][0] == tokenizer.mask_token_id).nonzero()[0, 0])
        hidden = model.bert(input_ids=enc["input_ids"]).last_hidden_state[0, index]
        top = model.cls(hidden[None]).float().softmax(-1)[0].topk(5)
        words = [tokenizer.decode([i]).strip() for i in top.indices.tolist()]
        rows.append({"text": sentence, "top5": words, "hit": probe_hit(answers, words)})
    return rows


class MaskedLM(Recipe):
    """BERT's masked-word task on the corpus windows; the model is the embedded encoder with a new MLM head."""

    score = "heldout_top5"
    progress_every = 50
    # A fresh head is random (its numbers would say nothing), and one evaluation of the whole held-out set
    # takes minutes: a run from scratch is first measured at --eval-every.
    evaluate_fresh_start = False

    def __init__(self, config: TrainConfig, corpus: Path, model=None, tokenizer=None) -> None:
        super().__init__(config)
        self.tokenizer = tokenizer or load_tokenizer()
        self.windows = np.load(corpus_windows(corpus, "train", config.seq_len), mmap_mode="r")
        self.heldout = np.load(corpus_windows(corpus, "heldout", config.seq_len))
        self.replacement = ordinary_token_ids(self.tokenizer)
        self.model = model or new_mlm_model()
        self.mask_id = self.tokenizer.mask_token_id
        with torch.no_grad():  # start [MASK] from the mean real-token vector, not its untrained one
            words = self.model.bert.embeddings.word_embeddings.weight
            words[self.mask_id] = words[1000:].mean(0)
        groups = trainable_setup(self.model, self.mask_id, config.weight_decay)
        self.optimizer = torch.optim.AdamW(groups, lr=config.lr, betas=(0.9, 0.98), eps=1e-6)

    def train_size(self) -> int:
        return len(self.windows)

    def loss(self, rows: np.ndarray, generator: torch.Generator) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        ids = torch.from_numpy(np.asarray(self.windows[np.sort(rows)], dtype=np.int64))
        special = special_positions(ids, self.tokenizer)
        inputs, labels, _ = mask_tokens(ids, special, self.mask_id, self.replacement, generator)
        loss, _ = masked_loss(self.model, inputs, labels, self.config.bf16)
        return loss, {"loss": loss.detach()}

    def learning_rate(self, step: int, start: int) -> float:
        return learning_rate(step, self.config, start)

    def evaluate(self) -> dict:
        return evaluate(self.model, self.heldout, self.tokenizer, self.replacement, self.config)

    def seen(self, step: int) -> dict[str, int]:
        return {"tokens": step * self.config.batch_size * self.config.seq_len}

    def changed_state(self) -> dict[str, torch.Tensor]:
        return changed_state(self.model, self.mask_id)

    def load_weights(self, weights: Path) -> None:
        apply_weights_file(self.model, weights, self.mask_id)

    def heldout_set(self) -> str:
        return heldout_set(self.heldout, evaluation_rows(len(self.heldout), self.config.eval_sequences))


def train_command(work: Path, config: TrainConfig) -> dict:
    return train(config, work, lambda config: MaskedLM(config, work))


# ---- export and evaluation ---------------------------------------------------------------------

def export_command(work: Path, out_dir: Path = WEIGHTS_DIR) -> dict:
    """Best checkpoint -> fp16 safetensors of the changed tensors + its metrics, for the repo."""
    metrics = export_best(work, out_dir / WEIGHTS_FILE, lambda target: {
        "best": shipped_probes(target), "corpus": read_corpus_summary(work)})
    target = out_dir / WEIGHTS_FILE
    return {"file": str(target), "bytes": target.stat().st_size,
            "heldout_top5": metrics["best"]["heldout_top5"], "probes_right": metrics["best"]["probes_right"]}


def weights_and_heldout(corpus: Path, weights: Path, build) -> tuple[object, object, np.ndarray]:
    """(model, tokenizer, held-out windows): ``build()``'s model with the weights file applied, to measure it."""
    if not weights.is_file():
        raise VizError(f"'{weights}' is missing.")
    heldout = np.load(corpus_windows(corpus, "heldout", TrainConfig.seq_len))
    tokenizer = load_tokenizer()
    model = build()
    apply_weights_file(model, weights, tokenizer.mask_token_id)
    return model, tokenizer, heldout


def evaluate_command(work: Path, weights: Path, eval_sequences: int = 0) -> dict:
    """Held-out metrics of a weights file on the work directory's held-out set (as training measures)."""
    model, tokenizer, heldout = weights_and_heldout(work, weights, lambda: new_mlm_model(attn="eager"))
    config = TrainConfig(eval_sequences=eval_sequences)
    metrics = evaluate(model, heldout, tokenizer, ordinary_token_ids(tokenizer), config)
    return {"weights": str(weights), **{k: v for k, v in metrics.items() if k != "probes"}}


def shipped_probes(weights: Path) -> dict:
    """The probes answered by the fp16 file as shipped (the card must describe what users get)."""
    tokenizer = load_tokenizer()
    model = new_mlm_model(attn="eager").eval()
    apply_weights_file(model, weights, tokenizer.mask_token_id)
    probes = probe_results(model, tokenizer)
    return {"probes": probes, "probes_right": sum(p["hit"] for p in probes)}


def main(argv: list[str] | None = None) -> int:
    parser, commands = tool_parser("tools.mlm_training", __doc__, ".mlm-work",
                                   ("build-corpus", "train", "export", "evaluate"), TrainConfig)
    commands["build-corpus"].add_argument("--seq-len", type=number(int, 3), default=TrainConfig.seq_len)
    commands["evaluate"].add_argument("--weights", type=Path, default=WEIGHTS_DIR / WEIGHTS_FILE)
    commands["evaluate"].add_argument("--eval-sequences", type=number(int), default=0)
    args = parser.parse_args(argv)
    return run_command({
        "build-corpus": lambda: build_corpus_command(args.work_dir, args.seq_len),
        "train": lambda: train_command(args.work_dir, config_from(args, TrainConfig)),
        "evaluate": lambda: evaluate_command(args.work_dir, args.weights, args.eval_sequences),
        "export": lambda: export_command(args.work_dir),
    }[args.command])


if __name__ == "__main__":
    sys.exit(main())
