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

import argparse
import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from vizcore.errors import VizError
from vizcore.mlm.masking import IGNORE, mask_tokens, ordinary_token_ids
from vizcore.mlm.probes import PROBES, probe_hit
from vizcore.mlm.weights import MASK_ROW_KEY, apply_changed_state

WEIGHTS_DIR = Path(__file__).resolve().parents[1] / "vizcore" / "weights"
WEIGHTS_FILE = "minilm-mlm.safetensors"


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 6000
    batch_size: int = 32
    seq_len: int = 64
    lr: float = 2e-4
    warmup: int = 100
    decay_fraction: float = 0.25  # lr decays linearly to 10 % over the last quarter of the steps
    weight_decay: float = 0.01
    eval_every: int = 250
    eval_sequences: int = 0  # 0: the whole held-out set; else this many windows spread evenly over it
    seed: int = 0
    bf16: bool = False  # bfloat16 autocast: ~3x faster on CPUs with native bf16, 20x slower without (AVX2 only)
    threads: int = 0
    init_from: str = ""  # shipped weights to continue from (their .json gives the steps already done)


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

# ---- the loop ----------------------------------------------------------------------------------

def optimizer_step(model, optimizer, loss: torch.Tensor) -> None:
    """One update, as every training tool here makes it: gradients of ``loss``, clipped to norm 1 over
    the trained parameters, then the optimizer's step."""
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], 1.0)
    optimizer.step()


def save_resume(work: Path, state: dict) -> None:
    """``resume.pt`` written whole or not at all (a sitting may be stopped at any moment)."""
    torch.save(state, work / "resume.tmp")
    os.replace(work / "resume.tmp", work / "resume.pt")


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
    model.eval()
    generator = torch.Generator().manual_seed(1234)
    hits1 = hits5 = total = mask_hits5 = mask_total = 0
    losses = []
    rows = evaluation_rows(len(windows), config.eval_sequences)
    for start in range(0, len(rows), 64):
        ids = torch.from_numpy(np.asarray(windows[rows[start:start + 64]], dtype=np.int64))
        special = (ids == tokenizer.cls_token_id) | (ids == tokenizer.sep_token_id)
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
    model.train()
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


def train_command(work: Path, config: TrainConfig) -> dict:
    if config.threads:
        torch.set_num_threads(config.threads)
    tokenizer = load_tokenizer()
    train = np.load(work / f"train-{config.seq_len}.npy", mmap_mode="r")
    heldout = np.load(work / f"heldout-{config.seq_len}.npy")
    replacement = ordinary_token_ids(tokenizer)
    model = new_mlm_model()
    mask_id = tokenizer.mask_token_id
    groups = trainable_setup(model, mask_id, config.weight_decay)
    optimizer = torch.optim.AdamW(groups, lr=config.lr, betas=(0.9, 0.98), eps=1e-6)
    resuming = (work / "resume.pt").exists()
    measured = heldout_set(heldout, evaluation_rows(len(heldout), config.eval_sequences))
    step, best, order, generator, start = _resume_or_start(work, model, optimizer, config, len(train), mask_id,
                                                           measured)
    model.train()
    log = open(work / "log.jsonl", "a", encoding="utf-8")
    if config.init_from and not resuming:
        # The shipped figure may come from another held-out set: measure the start on this one,
        # and let a checkpoint replace it only if it does better here.
        best = _evaluate_and_save(work, model, optimizer, config, heldout, tokenizer, replacement,
                                  step, -1.0, generator, log, start)
    started, tokens_per_step = time.time(), config.batch_size * config.seq_len
    while step < config.steps:
        rows = order[(step * config.batch_size) % len(order):][: config.batch_size]
        ids = torch.from_numpy(np.asarray(train[np.sort(rows)], dtype=np.int64))
        special = (ids == tokenizer.cls_token_id) | (ids == tokenizer.sep_token_id)
        inputs, labels, _ = mask_tokens(ids, special, mask_id, replacement, generator)
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, config, start)
        loss, _ = masked_loss(model, inputs, labels, config.bf16)
        optimizer_step(model, optimizer, loss)
        step += 1
        if step % 50 == 0:
            rate = 50 * tokens_per_step / (time.time() - started)
            print(f"step {step} loss {loss.item():.3f} lr {learning_rate(step, config, start):.2e} "
                  f"{rate:.0f} tokens/s", file=sys.stderr, flush=True)
            started = time.time()
        if step % config.eval_every == 0 or step == config.steps:
            best = _evaluate_and_save(work, model, optimizer, config, heldout, tokenizer, replacement,
                                      step, best, generator, log, start)
    return json.loads((work / "best.json").read_text())


def _resume_or_start(work: Path, model, optimizer, config: TrainConfig, rows: int, mask_id: int,
                     measured: str = ""):
    """(step, best, order, generator, start): from resume.pt, from shipped weights, or from scratch.

    ``measured`` names the held-out set this run evaluates on; a resume.pt whose best was measured
    on another set is refused, since its best would be compared with numbers it cannot be compared with.
    """
    generator = torch.Generator().manual_seed(config.seed)
    order = np.random.default_rng(config.seed).permutation(rows)
    resume = work / "resume.pt"
    if resume.exists():
        saved = torch.load(resume, weights_only=False)
        if measured and saved.get("heldout_set") != measured:
            raise VizError(
                f"{resume} was evaluated on another held-out set "
                f"({saved.get('heldout_set') or 'the first 512 windows, before 2026-11-23'}; "
                f"this run evaluates {measured}). Export its best checkpoint, then continue in a new work "
                f"directory with --init-from, which measures the start on this run's set.")
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        generator.set_state(saved["generator"])
        print(f"resumed at step {saved['step']}", file=sys.stderr)
        return saved["step"], saved["best"], order, generator, saved.get("start", 0)
    if config.init_from:
        start, best = _warm_start(work, model, Path(config.init_from), mask_id)
        generator.manual_seed(config.seed + start)  # fresh masks for the data that follows
        return start, best, order, generator, start
    with torch.no_grad():  # start [MASK] from the mean real-token vector, not its untrained one
        words = model.bert.embeddings.word_embeddings.weight
        words[mask_id] = words[1000:].mean(0)
    return 0, -1.0, order, generator, 0


def _warm_start(work: Path, model, weights: Path, mask_id: int) -> tuple[int, float]:
    """Load shipped weights and copy their learning curve into this run's log.

    Returns their step count and held-out top-5, which a checkpoint must beat to become the new best.
    """
    apply_weights_file(model, weights, mask_id)
    metrics = json.loads(weights.with_suffix(".json").read_text())
    log = work / "log.jsonl"
    if not log.exists() or not log.read_text().strip():
        log.write_text("".join(json.dumps(record) + "\n" for record in metrics["curve"]))
    print(f"continuing from {weights} at step {metrics['best']['step']}", file=sys.stderr)
    return int(metrics["best"]["step"]), float(metrics["best"]["heldout_top5"])


def _evaluate_and_save(work, model, optimizer, config, heldout, tokenizer, replacement, step, best,
                       generator, log, start) -> float:
    from safetensors.torch import save_file

    started = time.time()
    metrics = evaluate(model, heldout, tokenizer, replacement, config)
    record = {"step": step, "tokens": step * config.batch_size * config.seq_len,
              "lr": learning_rate(step, config, start), "eval_seconds": round(time.time() - started, 1),
              "time": time.strftime("%Y-%m-%dT%H:%M:%S"), **{k: v for k, v in metrics.items() if k != "probes"}}
    log.write(json.dumps(record) + "\n")
    log.flush()
    print(json.dumps(record), file=sys.stderr, flush=True)
    if metrics["heldout_top5"] > best:
        best = metrics["heldout_top5"]
        state = {k: v.contiguous() for k, v in changed_state(model, tokenizer.mask_token_id).items()}
        save_file(state, str(work / "best.safetensors"))
        (work / "best.json").write_text(json.dumps({**record, "probes": metrics["probes"],
                                                    "config": config.__dict__}, indent=2))
    save_resume(work, {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step,
                       "best": best, "generator": generator.get_state(), "start": start,
                       "heldout_set": metrics["heldout_set"]})
    return best


def export_command(work: Path, out_dir: Path = WEIGHTS_DIR) -> dict:
    """Best checkpoint -> fp16 safetensors of the changed tensors + its metrics, for the repo."""
    from safetensors.torch import load_file, save_file

    state = load_file(str(work / "best.safetensors"))
    out_dir.mkdir(parents=True, exist_ok=True)
    save_file({k: v.half().contiguous() for k, v in state.items()}, str(out_dir / WEIGHTS_FILE))
    best = json.loads((work / "best.json").read_text())
    best.update(shipped_probes(out_dir / WEIGHTS_FILE))
    corpus = json.loads((work / "corpus.json").read_text()) if (work / "corpus.json").exists() else {}
    curve = [json.loads(line) for line in (work / "log.jsonl").read_text().splitlines() if line.strip()]
    metrics = {"best": best, "corpus": corpus, "curve": curve}
    (out_dir / "minilm-mlm.json").write_text(json.dumps(metrics, indent=1))
    return {"file": str(out_dir / WEIGHTS_FILE), "bytes": (out_dir / WEIGHTS_FILE).stat().st_size,
            "heldout_top5": best["heldout_top5"], "probes_right": best["probes_right"]}


def evaluate_command(work: Path, weights: Path, eval_sequences: int = 0) -> dict:
    """Held-out metrics of a weights file on the work directory's held-out set (as training measures)."""
    if not weights.is_file():
        raise VizError(f"'{weights}' is missing.")
    heldout = work / f"heldout-{TrainConfig.seq_len}.npy"
    if not heldout.is_file():
        raise VizError(f"'{heldout}' is missing: run build-corpus --work-dir {work} first.")
    tokenizer = load_tokenizer()
    model = new_mlm_model(attn="eager")
    apply_weights_file(model, weights, tokenizer.mask_token_id)
    metrics = evaluate(model, np.load(heldout), tokenizer, ordinary_token_ids(tokenizer),
                       TrainConfig(eval_sequences=eval_sequences))
    return {"weights": str(weights), **{k: v for k, v in metrics.items() if k != "probes"}}


def shipped_probes(weights: Path) -> dict:
    """The probes answered by the fp16 file as shipped (the card must describe what users get)."""
    tokenizer = load_tokenizer()
    model = new_mlm_model(attn="eager").eval()
    apply_weights_file(model, weights, tokenizer.mask_token_id)
    probes = probe_results(model, tokenizer)
    return {"probes": probes, "probes_right": sum(p["hit"] for p in probes)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.mlm_training", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("build-corpus", "train", "export", "evaluate"):
        command = sub.add_parser(name)
        command.add_argument("--work-dir", type=Path, default=Path(".mlm-work"))
    sub.choices["build-corpus"].add_argument("--seq-len", type=int, default=TrainConfig.seq_len)
    sub.choices["evaluate"].add_argument("--weights", type=Path, default=WEIGHTS_DIR / WEIGHTS_FILE)
    sub.choices["evaluate"].add_argument("--eval-sequences", type=int, default=0)
    train = sub.choices["train"]
    for field, value in TrainConfig().__dict__.items():
        flag = "--" + field.replace("_", "-")
        if isinstance(value, bool):
            train.add_argument(flag, type=lambda s: s.lower() in ("1", "true", "yes"), default=value)
        else:
            train.add_argument(flag, type=type(value), default=value)
    args = parser.parse_args(argv)
    args.work_dir.mkdir(parents=True, exist_ok=True)
    try:
        if args.command == "build-corpus":
            result = build_corpus_command(args.work_dir, args.seq_len)
        elif args.command == "train":
            fields = TrainConfig().__dict__.keys()
            result = train_command(args.work_dir, TrainConfig(**{k: getattr(args, k) for k in fields}))
            result.pop("probes", None)
        elif args.command == "evaluate":
            result = evaluate_command(args.work_dir, args.weights, args.eval_sequences)
        else:
            result = export_command(args.work_dir)
    except VizError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
