"""The base-size masked-LM (issue 48), first step: measure where all-mpnet-base-v2 still knows how to fill a blank.

all-mpnet-base-v2 was pretrained with MPNet's masked and permuted language modelling, then tuned for sentence
embeddings; its masked-LM head was not published. Before anything is trained, a fresh head (dense, GELU, layer
norm, the word embeddings as the decoder, a bias: MPNet's own head) is fitted on the **frozen** hidden states of
several layers at once, on the same masked windows; each is measured on the repository's held-out text (top-1,
top-5, and the share of top-1 answers that copy a word of the window) and on the demo set
(vizcore/mlm/demo.py: top-1, top-5, copied top-1). The table says which layers still hold the pretrained knowledge
and so which training route is cheapest (the head alone, the top layers, or adapters).

    pip download gensim --no-deps -d .mlm-work                         # one source of the text (tools/corpus.py)
    python -m tools.mpnet_mlm windows --work-dir .mlm-work             # the MiniLM masked-LM's text and split,
                                                                       # in MPNet's tokens, 64-token windows
    python -m tools.mpnet_mlm probe-layers --work-dir .mlm-work --steps 300 --layers 6 8 10 12

``probe-layers`` saves its heads and log after every evaluation and goes on from them when run again (a sitting
at a time); it writes ``probe-layers.json`` in the work folder and prints the table.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from tools.training_loop import LoopConfig, Recipe
from vizcore.errors import VizError
from vizcore.mlm.demo import DEMO, is_copy
from vizcore.mlm.masking import IGNORE, mask_tokens, ordinary_token_ids

SEQ_LEN = 64


def load_encoder():
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    from vizcore.model.install import mpnet_path

    hf_logging.set_verbosity_error()
    folder = mpnet_path()
    return AutoModel.from_pretrained(str(folder)).eval(), AutoTokenizer.from_pretrained(str(folder))


class Head(nn.Module):
    """MPNet's masked-LM head on a layer's states; the decoder is the (frozen) word embeddings."""

    def __init__(self, embeddings: torch.Tensor) -> None:
        super().__init__()
        width = embeddings.shape[1]
        self.dense = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width, eps=1e-5)
        self.bias = nn.Parameter(torch.zeros(embeddings.shape[0]))
        self.embeddings = embeddings  # (V, D), not a parameter

    def forward(self, states: torch.Tensor) -> torch.Tensor:  # (N, D) -> (N, V)
        return self.norm(F.gelu(self.dense(states))) @ self.embeddings.T + self.bias


def windows_command(work: Path) -> dict:
    """MPNet's token windows of the masked-LM corpus's text (its train / held-out split, built here when missing)."""
    from tools.corpus import build_corpus, fetch_sotu, find_gensim_wheel
    from tools.mlm_training import tokenize_windows

    if not (work / "train.txt").is_file():
        work.mkdir(parents=True, exist_ok=True)
        build_corpus(work, find_gensim_wheel([str(work), "."]), str(fetch_sotu(work)))
    dropped = drop_demo_documents(work / "train.txt", work / "mpnet-train.txt")
    _, tokenizer = load_encoder()
    out = {"train_documents_with_a_demo_sentence_dropped": dropped}
    for split, text in (("train", work / "mpnet-train.txt"), ("heldout", work / "heldout.txt")):
        rows = tokenize_windows(text, tokenizer, SEQ_LEN)
        np.save(work / f"mpnet-{split}-{SEQ_LEN}.npy", rows)
        out[split] = int(rows.shape[0])
    return out


def demo_sentences_in(text: str) -> list[str]:
    """The demo set's sentences, filled with any accepted answer, that ``text`` holds (lower case, the final stop
    left out): what the masked-LM must never have been trained on (issue 48 C)."""
    text = text.lower()
    found = []
    for sentence, accepted in DEMO:
        left, right = sentence.lower().split("[mask]")
        found += [filled for answer in accepted if (filled := (left + answer + right).rstrip(".!")) in text]
    return found


def drop_demo_documents(source: Path, target: Path) -> int:
    """``source``'s documents (one a line) without those that hold a demo sentence, into ``target``; how many went
    (the corpus held three: "Thank you very much", "Practice makes perfect", "Water boils at 100 degrees Celsius")."""
    kept, dropped = [], 0
    for line in source.read_text(encoding="utf-8").splitlines():
        if demo_sentences_in(line):
            dropped += 1
        else:
            kept.append(line)
    target.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return dropped


def demo_in_windows(windows: np.ndarray, tokenizer) -> list[str]:
    """The demo sentences (each filled with each accepted answer, without the final stop) whose tokens occur in a row
    anywhere in the training windows, read back as the one token stream they were cut from: what training read.
    [] proves the demo set was not trained on (issue 48 C)."""
    stream = np.ascontiguousarray(np.asarray(windows)[:, 1:-1]).ravel()  # windows are <s> + a cut of the stream + </s>
    found = []
    for sentence, accepted in DEMO:
        left, right = sentence.split("[MASK]")
        for answer in accepted:
            ids = tokenizer((left + answer + right).rstrip(".!?"), add_special_tokens=False)["input_ids"]
            if contains(stream, np.asarray(ids, dtype=stream.dtype)):
                found.append((left + answer + right).rstrip(".!?"))
    return found


def contains(stream: np.ndarray, ids: np.ndarray) -> bool:
    """Whether ``ids`` occurs in ``stream`` as a run of consecutive tokens."""
    candidates = np.flatnonzero(stream[: len(stream) - len(ids) + 1] == ids[0])
    for offset, token in enumerate(ids[1:], start=1):
        candidates = candidates[stream[candidates + offset] == token]
        if not len(candidates):
            return False
    return bool(len(candidates))


def special_of(ids: torch.Tensor, tokenizer) -> torch.Tensor:
    return torch.isin(ids, torch.tensor(tokenizer.all_special_ids))


@torch.no_grad()
def layer_states(encoder, ids: torch.Tensor, layers: list[int]) -> list[torch.Tensor]:
    """The hidden states after each of ``layers`` (1-based; 0: the embeddings). (B, T, D) each."""
    out = encoder(input_ids=ids, attention_mask=torch.ones_like(ids), output_hidden_states=True)
    return [out.hidden_states[layer] for layer in layers]


@torch.no_grad()
def heldout_scores(encoder, heads: dict[int, Head], windows: np.ndarray, tokenizer, count: int) -> dict:
    """Top-1, top-5 and copied top-1 per layer over ``count`` held-out windows, masked the same way every time."""
    generator = torch.Generator().manual_seed(1234)
    replacement = ordinary_token_ids(tokenizer)
    rows = torch.as_tensor(windows[np.linspace(0, len(windows) - 1, count).astype(int)], dtype=torch.long)
    totals = {layer: [0, 0, 0, 0] for layer in heads}  # top1, top5, copied, n
    for start in range(0, len(rows), 32):
        ids = rows[start:start + 32]
        inputs, labels, _ = mask_tokens(ids, special_of(ids, tokenizer), tokenizer.mask_token_id, replacement,
                                        generator)
        where = labels != IGNORE
        states = layer_states(encoder, inputs, list(heads))
        for (layer, head), state in zip(heads.items(), states):
            top = head(state[where]).topk(5, dim=-1).indices  # (N, 5)
            gold = labels[where]
            first = top[:, 0]
            in_window = (first[:, None] == ids[where.nonzero()[:, 0]]).any(dim=1)  # the first answer is in the window
            totals[layer][0] += int((first == gold).sum())
            totals[layer][1] += int((top == gold[:, None]).any(dim=1).sum())
            totals[layer][2] += int((in_window & (first != gold)).sum())
            totals[layer][3] += int(where.sum())
    return {layer: {"heldout_top1": t[0] / t[3], "heldout_top5": t[1] / t[3], "heldout_copied": t[2] / t[3],
                    "heldout_tokens": t[3]} for layer, t in totals.items()}


@torch.no_grad()
def demo_scores(encoder, heads: dict[int, Head], tokenizer) -> dict:
    results = {layer: {"demo_top1": 0, "demo_top5": 0, "demo_copied": 0, "answers": []} for layer in heads}
    for sentence, accepted in DEMO:
        enc = tokenizer(sentence.replace("[MASK]", tokenizer.mask_token), return_tensors="pt")
        index = int((enc["input_ids"][0] == tokenizer.mask_token_id).nonzero()[0, 0])
        states = layer_states(encoder, enc["input_ids"], list(heads))
        for (layer, head), state in zip(heads.items(), states):
            top = head(state[0, index][None]).topk(5, dim=-1).indices[0].tolist()
            words = [tokenizer.decode([i]).strip().lower() for i in top]
            result = results[layer]
            result["demo_top1"] += words[0] in accepted
            result["demo_top5"] += any(word in accepted for word in words)
            result["demo_copied"] += is_copy(sentence, words[0], accepted)
            result["answers"].append(words[0])
    for result in results.values():
        for key in ("demo_top1", "demo_top5", "demo_copied"):
            result[key] /= len(DEMO)
    return results


def probe_layers(work: Path, layers: list[int], steps: int, batch: int, lr: float, eval_every: int,
                 eval_windows: int) -> dict:
    torch.manual_seed(0)
    encoder, tokenizer = load_encoder()
    embeddings = encoder.embeddings.word_embeddings.weight.detach()
    heads = {layer: Head(embeddings) for layer in layers}
    params = [p for head in heads.values() for p in head.parameters()]
    optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=0.01)
    state_path, log_path = work / "probe-layers.pt", work / "probe-layers.json"
    log = {"layers": layers, "evaluations": [], "step": 0}
    if state_path.is_file():
        saved = torch.load(state_path, weights_only=False)
        if saved["layers"] == layers:
            for layer, head in heads.items():
                head.load_state_dict(saved["heads"][layer], strict=False)
            optimizer.load_state_dict(saved["optimizer"])
            log = json.loads(log_path.read_text())
    train = np.load(work / f"mpnet-train-{SEQ_LEN}.npy", mmap_mode="r")
    heldout = np.load(work / f"mpnet-heldout-{SEQ_LEN}.npy", mmap_mode="r")
    replacement = ordinary_token_ids(tokenizer)
    order = np.random.default_rng(0).permutation(len(train))
    generator = torch.Generator().manual_seed(log["step"])
    started = time.perf_counter()
    for step in range(log["step"] + 1, steps + 1):
        pick = order[(step - 1) * batch % len(order):][:batch]
        ids = torch.as_tensor(train[np.sort(pick)], dtype=torch.long)
        inputs, labels, _ = mask_tokens(ids, special_of(ids, tokenizer), tokenizer.mask_token_id, replacement,
                                        generator)
        where = labels != IGNORE
        states = layer_states(encoder, inputs, layers)
        loss = sum(F.cross_entropy(head(state[where]), labels[where]) for head, state in zip(heads.values(), states))
        loss_value = float(loss.detach()) / len(heads)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % eval_every == 0 or step == steps:
            held = heldout_scores(encoder, heads, heldout, tokenizer, eval_windows)
            demo = demo_scores(encoder, heads, tokenizer)
            row = {"step": step, "seconds": round(time.perf_counter() - started, 1), "loss": loss_value,
                   "layers": {layer: {**held[layer], **demo[layer]} for layer in layers}}
            log["evaluations"].append(row)
            log["step"] = step
            print(table(row), flush=True)
            torch.save({"layers": layers, "heads": {k: h.state_dict() for k, h in heads.items()},
                        "optimizer": optimizer.state_dict()}, state_path)
            log_path.write_text(json.dumps(log, indent=1))
    return log


def table(row: dict) -> str:
    lines = [f"step {row['step']} ({row['seconds']:.0f} s, mean loss {row['loss']:.2f})",
             "| layer | held-out top-1 | top-5 | copied top-1 | demo top-1 | demo top-5 | demo copied |",
             "|---|---|---|---|---|---|---|"]
    for layer, r in row["layers"].items():
        lines.append(f"| {layer} | {r['heldout_top1']:.1%} | {r['heldout_top5']:.1%} | {r['heldout_copied']:.1%} | "
                     f"{r['demo_top1']:.1%} | {r['demo_top5']:.1%} | {r['demo_copied']:.1%} |")
    return "\n".join(lines)


# ---- training (issue 48 A): low-rank adapters on every layer, MPNet's head, the <mask> row ----------------------

@dataclass(frozen=True)
class TrainConfig(LoopConfig):
    steps: int = 7200
    batch_size: int = 32
    lr: float = 5e-4
    warmup: int = 100
    eval_every: int = 200
    rank: int = 16
    copy_penalty: float = 1.0
    eval_windows: int = 512
    decay_fraction: float = 0.25
    bf16: bool = True

    HELP: ClassVar[dict[str, str]] = {
        **LoopConfig.HELP,
        "rank": "the adapters' rank (every layer's q, k, v, o and both feed-forward matrices)",
        "copy_penalty": "weight of the unlikelihood term on the window's other words (0: plain cross-entropy)",
        "eval_windows": "held-out windows per evaluation, spread evenly over the held-out text",
        "bf16": "bfloat16 autocast while training (native on CPUs with avx512_bf16); evaluation is float32",
    }


def copy_unlikelihood(logits: torch.Tensor, gold: torch.Tensor, context: torch.Tensor,
                      ordinary: torch.Tensor) -> torch.Tensor:
    """The copy fighter: per predicted position, the sum of -log(1 - p(w)) over the distinct words w of its window
    that are not its answer (about the probability given to visible wrong words); the mean over positions.

    logits (M, V), gold (M,), context (M, T) the window's original ids, ordinary (M, T) bool: not special. Plain
    cross-entropy lowers these words too, but only as a few of thirty thousand; this term names them, so a model
    that answers with a word it can see pays for it unless that word is right (unlikelihood training, Welleck et al.
    2020, applied to the window's words)."""
    probs = logits.float().softmax(-1).gather(1, context)  # (M, T)
    T = context.shape[1]
    earlier = torch.ones(T, T, dtype=torch.bool).tril(-1)  # [i, j]: j comes before i
    repeated = ((context[:, :, None] == context[:, None, :]) & earlier).any(-1)
    other = ordinary & (context != gold[:, None]) & ~repeated
    penalty = -torch.log1p(-probs.clamp(max=1 - 1e-6)) * other
    return penalty.sum(1).mean()


class MPNetMaskedLM(Recipe):
    """MPNet's masked-word task on the repository's text, through adapters on the frozen all-mpnet-base-v2."""

    score = "heldout_top1"
    unlogged = ("answers",)
    progress_every = 20

    def __init__(self, config: TrainConfig, work: Path) -> None:
        super().__init__(config)
        from vizcore.mlm.adapters import add_adapters, new_mpnet_mlm

        self.model, self.tokenizer = new_mpnet_mlm(), load_encoder()[1]
        for parameter in self.model.parameters():
            parameter.requires_grad_(False)
        self.adapters = add_adapters(self.model, config.rank)
        head = self.model.lm_head
        probe = in_work(work, "probe-layers.pt")
        if probe:  # the frozen layer-12 head the measurement fitted: a head that already reads English
            saved = torch.load(probe, weights_only=False)["heads"].get(12)
            if saved:
                with torch.no_grad():
                    head.dense.load_state_dict({"weight": saved["dense.weight"], "bias": saved["dense.bias"]})
                    head.layer_norm.load_state_dict({"weight": saved["norm.weight"], "bias": saved["norm.bias"]})
                    head.bias.copy_(saved["bias"])
        trained_head = [head.dense.weight, head.dense.bias, head.layer_norm.weight, head.layer_norm.bias, head.bias]
        words = self.model.mpnet.embeddings.word_embeddings.weight
        self.mask_id = self.tokenizer.mask_token_id
        row = torch.zeros(words.shape[0], 1)
        row[self.mask_id] = 1.0
        words.requires_grad_(True)
        words.register_hook(lambda grad: grad * row.to(grad.device, grad.dtype))
        adapters = [p for adapter in self.adapters.values() for p in (adapter.a, adapter.b)]
        for parameter in trained_head + adapters:
            parameter.requires_grad_(True)
        self.optimizer = torch.optim.AdamW(
            [{"params": adapters, "weight_decay": config.weight_decay},
             {"params": trained_head + [words], "weight_decay": 0.0}], lr=config.lr, betas=(0.9, 0.98), eps=1e-6)
        self.windows = np.load(work_windows(work, "train"), mmap_mode="r")
        self.heldout = np.load(work_windows(work, "heldout"))
        self.replacement = ordinary_token_ids(self.tokenizer)

    def train_size(self) -> int:
        return len(self.windows)

    def loss(self, rows: np.ndarray, generator: torch.Generator) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        ids = torch.from_numpy(np.asarray(self.windows[np.sort(rows)], dtype=np.int64))
        special = special_of(ids, self.tokenizer)
        inputs, labels, _ = mask_tokens(ids, special, self.mask_id, self.replacement, generator)
        where = labels != IGNORE
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.config.bf16):
            hidden = self.model.mpnet(input_ids=inputs, attention_mask=torch.ones_like(inputs)).last_hidden_state
            logits = self.model.lm_head(hidden[where])
        gold = labels[where]
        cross = F.cross_entropy(logits.float(), gold)
        rows_of = where.nonzero()[:, 0]
        copy = copy_unlikelihood(logits, gold, ids[rows_of], ~special[rows_of])
        return cross + self.config.copy_penalty * copy, {"ce": cross.detach(), "copy": copy.detach()}

    def learning_rate(self, step: int, start: int) -> float:
        from tools.mlm_training import learning_rate

        return learning_rate(step, self.config, start)  # warm-up, flat, then linear decay over the last quarter

    def evaluate(self) -> dict:
        heads = {12: LMHead(self.model)}
        held = heldout_scores(self.model.mpnet, heads, self.heldout, self.tokenizer, self.config.eval_windows)[12]
        demo = demo_scores(self.model.mpnet, heads, self.tokenizer)[12]
        return {**held, **demo}

    def seen(self, step: int) -> dict[str, int]:
        return {"tokens": step * self.config.batch_size * SEQ_LEN}

    def changed_state(self) -> dict[str, torch.Tensor]:
        from vizcore.mlm.adapters import changed_state

        return changed_state(self.model, self.adapters, self.mask_id)

    def load_weights(self, weights: Path) -> None:
        from safetensors.torch import load_file

        from vizcore.mlm.adapters import load_changed_state

        load_changed_state(self.model, self.adapters, load_file(str(weights)), self.mask_id)

    def heldout_set(self) -> str:
        return f"{self.config.eval_windows} of {len(self.heldout)} windows"


class LMHead(nn.Module):
    """The model's own head as the measurement's ``Head`` (states -> vocabulary logits)."""

    def __init__(self, model) -> None:
        super().__init__()
        self.model = model

    def forward(self, states: torch.Tensor) -> torch.Tensor:
        return self.model.lm_head(states)


def in_work(work: Path, name: str) -> Path | None:
    """``name`` in the run's folder or the folder above it (where ``windows`` and ``probe-layers`` write), or None."""
    return next((folder / name for folder in (work, work.parent) if (folder / name).is_file()), None)


def work_windows(work: Path, split: str) -> Path:
    path = in_work(work, f"mpnet-{split}-{SEQ_LEN}.npy")
    if path is None:
        raise VizError(f"mpnet-{split}-{SEQ_LEN}.npy is missing: run python -m tools.mpnet_mlm windows first.")
    return path


# ---- export and measurement ---------------------------------------------------------------------------------------

WEIGHTS_FILE = Path(__file__).resolve().parents[1] / "vizcore" / "weights" / "mpnet-mlm.safetensors"


def measure_file(weights: Path, work: Path, eval_windows: int = 0) -> dict:
    """What a weights file, as shipped (fp16, merged into the plain encoder the way the app loads it), scores: the
    whole held-out text (``eval_windows`` 0) and the demo set, each answer of the demo set listed."""
    from safetensors.torch import load_file

    from vizcore.mlm.adapters import merge_changed_state, new_mpnet_mlm

    tokenizer = load_encoder()[1]
    model = new_mpnet_mlm().eval()
    merge_changed_state(model, load_file(str(weights)), tokenizer.mask_token_id)
    heldout = np.load(work_windows(work, "heldout"))
    heads = {12: LMHead(model)}
    held = heldout_scores(model.mpnet, heads, heldout, tokenizer, eval_windows or len(heldout))[12]
    demo = demo_scores(model.mpnet, heads, tokenizer)[12]
    answers = [{"sentence": sentence, "accepted": list(accepted), "answer": answer}
               for (sentence, accepted), answer in zip(DEMO, demo.pop("answers"))]
    return {**held, **demo, "demo_sentences": len(DEMO), "heldout_windows": eval_windows or len(heldout),
            "answers": answers}


def export_command(work: Path, target: Path = WEIGHTS_FILE) -> dict:
    """The best checkpoint -> ``vizcore/weights/mpnet-mlm.safetensors`` (fp16) and its metrics file, measured as
    shipped on the whole held-out text and the demo set."""
    from tools.training_loop import export_best

    train_windows = np.load(work_windows(work, "train"), mmap_mode="r")
    found = demo_in_windows(train_windows, load_encoder()[1])
    if found:
        raise VizError(f"The training windows hold {len(found)} demo sentences (e.g. {found[0]!r}): rebuild them with "
                       "python -m tools.mpnet_mlm windows, then train again.")
    data = {"train_windows": int(train_windows.shape[0]), "window_tokens": SEQ_LEN,
            "train_windows_sha256": hashlib.sha256(np.ascontiguousarray(train_windows).tobytes()).hexdigest(),
            "heldout_windows": int(np.load(work_windows(work, "heldout"), mmap_mode="r").shape[0]),
            "demo_sentences_in_training_windows": 0}
    text = (in_work(work, "heldout.txt") or work / "heldout.txt").parent
    metrics = export_best(work, target, lambda shipped: {"best": measure_file(shipped, work), "data": data,
                                                         "minilm": measure_minilm(text)})
    best = metrics["best"]
    return {"file": str(target), "bytes": target.stat().st_size,
            **{k: best[k] for k in ("step", "heldout_top1", "heldout_top5", "heldout_copied", "demo_top1",
                                    "demo_top5", "demo_copied")}}


def measure_minilm(work: Path) -> dict:
    """The same measure (held-out top-1, top-5, copied; the demo set) for the small ``minilm-mlm-tuned`` as it ships,
    on its own tokens of the same held-out text (issue 48 D)."""
    from transformers import AutoTokenizer, BertForMaskedLM
    from transformers.utils import logging as hf_logging

    from tools.mlm_training import tokenize_windows
    from vizcore.mlm.weights import apply_weights_file, weights_path
    from vizcore.model.catalog import embedded_minilm_path

    hf_logging.set_verbosity_error()
    folder = str(embedded_minilm_path())
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = BertForMaskedLM.from_pretrained(folder, attn_implementation="eager").eval()
    apply_weights_file(model, weights_path(), "masked-LM")
    if not (work / "heldout.txt").is_file():
        raise VizError(f"'{work / 'heldout.txt'}' is missing: run python -m tools.mpnet_mlm windows --work-dir {work}.")
    windows = tokenize_windows(work / "heldout.txt", tokenizer, SEQ_LEN)  # the same text in MiniLM's tokens
    heads = {6: BertHead(model)}
    held = heldout_scores(model.bert, heads, windows, tokenizer, len(windows))[6]
    demo = demo_scores(model.bert, heads, tokenizer)[6]
    demo.pop("answers")
    return {"model": "minilm-mlm-tuned", **held, **demo, "demo_sentences": len(DEMO)}


class BertHead(nn.Module):
    def __init__(self, model) -> None:
        super().__init__()
        self.model = model

    def forward(self, states: torch.Tensor) -> torch.Tensor:
        return self.model.cls(states)


def main(argv: list[str] | None = None) -> None:
    from tools.command import add_config_flags, config_from, run_command
    from tools.training_loop import train

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("windows", "probe-layers", "train", "export", "measure", "measure-minilm"):
        command = sub.add_parser(name)
        command.add_argument("--work-dir", type=Path,
                             default=Path(".mlm-work") / ("mpnet" if name in ("train", "export") else ""))
    probe = sub.choices["probe-layers"]
    probe.add_argument("--layers", type=int, nargs="+", default=[6, 8, 10, 12])
    probe.add_argument("--steps", type=int, default=300)
    probe.add_argument("--batch", type=int, default=16)
    probe.add_argument("--lr", type=float, default=1e-3)
    probe.add_argument("--eval-every", type=int, default=100)
    probe.add_argument("--eval-windows", type=int, default=256)
    add_config_flags(sub.choices["train"], TrainConfig)
    sub.choices["measure"].add_argument("--weights", type=Path, default=WEIGHTS_FILE)
    sub.choices["measure"].add_argument("--eval-windows", type=int, default=0)
    args = parser.parse_args(argv)
    if args.command == "windows":
        print(json.dumps(windows_command(args.work_dir)))
    elif args.command == "export":
        sys.exit(run_command(lambda: export_command(args.work_dir)))
    elif args.command == "measure":
        sys.exit(run_command(lambda: measure_file(args.weights, args.work_dir, args.eval_windows)))
    elif args.command == "measure-minilm":
        sys.exit(run_command(lambda: measure_minilm(args.work_dir)))
    elif args.command == "train":
        config = config_from(args, TrainConfig)
        sys.exit(run_command(lambda: train(config, args.work_dir, lambda c: MPNetMaskedLM(c, args.work_dir))))
    else:
        probe_layers(args.work_dir, args.layers, args.steps, args.batch, args.lr, args.eval_every, args.eval_windows)


if __name__ == "__main__":
    main()
