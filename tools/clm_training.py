"""Make the offline causal LM: the offline masked-LM turned decoder and trained for next-token prediction.

Explicit and reproducible; ``make run`` never trains. It reuses the masked-LM's corpus (build it once
with ``python -m tools.mlm_training build-corpus --work-dir .mlm-work``), then::

    python -m tools.clm_training train --work-dir .clm-work --corpus-dir .mlm-work --steps 1600
    python -m tools.clm_training export --work-dir .clm-work     # -> vizcore/weights/minilm-causal.*
    python -m tools.clm_training evaluate --corpus-dir .mlm-work # the shipped file on the whole held-out set

Training is resumable: ``train`` continues from ``<work-dir>/resume.pt`` (model, optimizer, data
position, curve) and can be stopped at any time (Ctrl-C, or a session ending); run it in sittings,
exporting and committing the best checkpoint after each. Raising ``--steps`` in a later sitting
continues the same run (its learning rate schedule is stretched to the new total). Without the work
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

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from tools.mlm_training import evaluation_rows, heldout_set, load_tokenizer, optimizer_step, save_resume
from vizcore.errors import VizError
from vizcore.mlm.weights import MASK_ROW_KEY

WEIGHTS_DIR = Path(__file__).resolve().parents[1] / "vizcore" / "weights"
WEIGHTS_FILE = "minilm-causal.safetensors"
FROZEN = ("bert.embeddings.word_embeddings.weight", "cls.predictions.decoder.weight")


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 1600
    batch_size: int = 32
    seq_len: int = 64
    lr: float = 2e-4
    warmup: int = 50
    decay_fraction: float = 0.25  # lr decays linearly to 10 % over the last quarter of the steps
    weight_decay: float = 0.01
    eval_every: int = 100
    eval_sequences: int = 512  # held-out windows per evaluation during training (spread over the set)
    seed: int = 0
    threads: int = 0
    init_from: str = ""  # shipped weights to continue from when there is no resume.pt (its .json: steps, curve)


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


def learning_rate(step: int, config: TrainConfig) -> float:
    if step < config.warmup:
        return config.lr * (step + 1) / config.warmup
    decay_start = int(config.steps * (1 - config.decay_fraction))
    if step < decay_start:
        return config.lr
    return config.lr * (1 - 0.9 * min(1.0, (step - decay_start) / max(1, config.steps - decay_start)))


@torch.no_grad()
def evaluate(model, windows: np.ndarray, tokenizer, eval_sequences: int) -> dict:
    """Held-out next-token top-1 / top-5 accuracy and perplexity, and the everyday prompts' top 5."""
    from vizcore.decoder.probes import probe_results

    model.eval()
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
    model.train()
    return {"heldout_top1": hits1 / total, "heldout_top5": hits5 / total, "heldout_loss": nll / total,
            "heldout_perplexity": math.exp(nll / total), "heldout_targets": total,
            "heldout_set": heldout_set(windows, rows), "probes_right": sum(p["hit"] for p in probes),
            "probes": probes}


def train_command(work: Path, corpus: Path, config: TrainConfig) -> dict:
    if config.threads:
        torch.set_num_threads(config.threads)
    for name in (f"train-{config.seq_len}.npy", f"heldout-{config.seq_len}.npy"):
        if not (corpus / name).is_file():
            raise VizError(f"'{corpus / name}' is missing: run python -m tools.mlm_training build-corpus "
                           f"--work-dir {corpus} first.")
    tokenizer = load_tokenizer()
    train = np.load(corpus / f"train-{config.seq_len}.npy", mmap_mode="r")
    heldout = np.load(corpus / f"heldout-{config.seq_len}.npy")
    model = new_causal_model()
    optimizer = torch.optim.AdamW(parameter_groups(model, config.weight_decay), lr=config.lr,
                                  betas=(0.9, 0.98), eps=1e-6)
    order = np.random.default_rng(config.seed).permutation(len(train))
    step, best = 0, -1.0
    log = open(work / "log.jsonl", "a", encoding="utf-8")
    if (work / "resume.pt").exists():
        saved = torch.load(work / "resume.pt", weights_only=False)
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        step, best = saved["step"], saved["best"]
        print(f"resumed at step {step}", file=sys.stderr, flush=True)
    elif config.init_from:
        step = _warm_start(work, model, Path(config.init_from))
        best = _evaluate_and_save(work, model, optimizer, config, heldout, tokenizer, step, best, log)
    else:
        best = _evaluate_and_save(work, model, optimizer, config, heldout, tokenizer, 0, best, log)
    model.train()
    started = time.time()
    while step < config.steps:
        rows = order[(step * config.batch_size) % len(order):][: config.batch_size]
        ids = torch.from_numpy(np.asarray(train[np.sort(rows)], dtype=np.int64))
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, config)
        loss, _, _ = causal_loss(model, ids)
        optimizer_step(model, optimizer, loss)
        step += 1
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.3f} lr {learning_rate(step, config):.2e} "
                  f"{(time.time() - started) / 10:.2f} s/step", file=sys.stderr, flush=True)
            started = time.time()
        if step % config.eval_every == 0 or step == config.steps:
            best = _evaluate_and_save(work, model, optimizer, config, heldout, tokenizer, step, best, log)
    return json.loads((work / "best.json").read_text())


def _warm_start(work: Path, model, weights: Path) -> int:
    """Continue from shipped weights (a lost work directory): their tensors, step count and curve; the
    optimizer starts afresh (with the warm-up, as the learning rate is computed from the step)."""
    apply_weights_file(model, weights)
    metrics = json.loads(weights.with_suffix(".json").read_text())
    log = work / "log.jsonl"
    if not log.exists() or not log.read_text().strip():
        log.write_text("".join(json.dumps(record) + "\n" for record in metrics["curve"]))
    print(f"continuing from {weights} at step {metrics['best']['step']}", file=sys.stderr, flush=True)
    return int(metrics["best"]["step"])


def _evaluate_and_save(work, model, optimizer, config, heldout, tokenizer, step, best, log) -> float:
    from safetensors.torch import save_file

    started = time.time()
    metrics = evaluate(model, heldout, tokenizer, config.eval_sequences)
    record = {"step": step, "tokens": step * config.batch_size * (config.seq_len - 2),
              "lr": learning_rate(step, config), "eval_seconds": round(time.time() - started, 1),
              "time": time.strftime("%Y-%m-%dT%H:%M:%S"), **{k: v for k, v in metrics.items() if k != "probes"}}
    log.write(json.dumps(record) + "\n")
    log.flush()
    print(json.dumps(record), file=sys.stderr, flush=True)
    if metrics["heldout_top5"] > best:
        best = metrics["heldout_top5"]
        save_file(changed_state(model, tokenizer.mask_token_id), str(work / "best.safetensors"))
        (work / "best.json").write_text(json.dumps({**record, "probes": metrics["probes"],
                                                    "config": config.__dict__}, indent=2))
    save_resume(work, {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step,
                       "best": best})
    return best


def apply_weights_file(model, weights: Path) -> None:
    from safetensors.torch import load_file

    from vizcore.mlm.weights import apply_changed_state

    apply_changed_state(model, load_file(str(weights)), load_tokenizer().mask_token_id)


def export_command(work: Path, corpus: Path, out_dir: Path = WEIGHTS_DIR, eval_sequences: int = 0) -> dict:
    """Best checkpoint -> fp16 safetensors of the changed tensors; the fp16 file measured on the whole
    held-out set (what users get), with the training curve, into ``minilm-causal.json``."""
    from safetensors.torch import load_file, save_file

    state = load_file(str(work / "best.safetensors"))
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / WEIGHTS_FILE
    save_file({k: v.half().contiguous() for k, v in state.items()}, str(target))
    best = json.loads((work / "best.json").read_text())
    shipped = evaluate_command(corpus, target, eval_sequences)
    corpus_info = json.loads((corpus / "corpus.json").read_text()) if (corpus / "corpus.json").exists() else {}
    curve = [json.loads(line) for line in (work / "log.jsonl").read_text().splitlines() if line.strip()]
    metrics = {"best": best, "shipped": shipped, "corpus": corpus_info, "curve": curve}
    target.with_suffix(".json").write_text(json.dumps(metrics, indent=1))
    return {"file": str(target), "bytes": target.stat().st_size,
            **{k: v for k, v in shipped.items() if k != "probes"}}


def evaluate_command(corpus: Path, weights: Path, eval_sequences: int = 0) -> dict:
    if not weights.is_file():
        raise VizError(f"'{weights}' is missing.")
    heldout = corpus / f"heldout-{TrainConfig.seq_len}.npy"
    if not heldout.is_file():
        raise VizError(f"'{heldout}' is missing: run python -m tools.mlm_training build-corpus first.")
    tokenizer = load_tokenizer()
    model = new_causal_model(attn="eager")
    apply_weights_file(model, weights)
    return {"weights": str(weights), **evaluate(model, np.load(heldout), tokenizer, eval_sequences)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.clm_training", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("train", "export", "evaluate"):
        command = sub.add_parser(name)
        command.add_argument("--work-dir", type=Path, default=Path(".clm-work"))
        command.add_argument("--corpus-dir", type=Path, default=Path(".mlm-work"))
    sub.choices["evaluate"].add_argument("--weights", type=Path, default=WEIGHTS_DIR / WEIGHTS_FILE)
    for name in ("evaluate", "export"):
        sub.choices[name].add_argument("--eval-sequences", type=int, default=0)
    train = sub.choices["train"]
    for field, value in TrainConfig().__dict__.items():
        train.add_argument("--" + field.replace("_", "-"), type=type(value), default=value)
    args = parser.parse_args(argv)
    if args.command == "train" and args.init_from and not Path(args.init_from).with_suffix(".json").is_file():
        print(f"error: --init-from needs the weights' metrics file beside them "
              f"({Path(args.init_from).with_suffix('.json')}).", file=sys.stderr)
        return 2
    args.work_dir.mkdir(parents=True, exist_ok=True)
    try:
        if args.command == "train":
            fields = TrainConfig().__dict__.keys()
            result = train_command(args.work_dir, args.corpus_dir,
                                   TrainConfig(**{k: getattr(args, k) for k in fields}))
        elif args.command == "evaluate":
            result = evaluate_command(args.corpus_dir, args.weights, args.eval_sequences)
        else:
            result = export_command(args.work_dir, args.corpus_dir, eval_sequences=args.eval_sequences)
    except VizError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    result.pop("probes", None)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
