"""Write the model cards of the causal LM and the NSP head from what their exports measured.

Run after ``python -m tools.clm_training export`` and ``python -m tools.nsp_training export``::

    python -m tools.decoder_cards      # -> vizcore/weights/MODEL_CARD_CAUSAL.md, MODEL_CARD_NSP.md (+ SVG curves)

Every number comes from the metrics files the exports wrote (``minilm-causal.json``,
``minilm-nsp.json``: the shipped fp16 file measured on the whole held-out set, the training log);
nothing is typed in by hand. Curves are plain SVG, as in the masked-LM's card.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from tools.cards import Line, curve_rows, curve_svg, file_size, probes_section, settings_table, write_card_files
from tools.command import run_command
from tools.mlm_card import corpus_section
from vizcore.errors import VizError

WEIGHTS_DIR = Path(__file__).resolve().parents[1] / "vizcore" / "weights"
CAUSAL_GOAL, CAUSAL_FLOOR = 0.50, 0.40  # held-out next-token top-5: the goal and its floor
NSP_GOAL = 0.95


def line_svg(curve: list[dict], series: list[tuple[str, str, str]], goal: tuple[float, str], low: float = 0.0) -> str:
    """One line per (key, colour, label) of ``series`` against training steps."""
    lines = [Line([(r["step"], r[key]) for r in curve if key in r], colour) for key, colour, _ in series]
    return curve_svg(lines, [(label, colour) for _, colour, label in series], goal, low)


def causal_verdict(top5: float, curve: list[dict]) -> str:
    if top5 >= CAUSAL_GOAL:
        return f"Meets the goal of {CAUSAL_GOAL:.0%} held-out top-5."
    floor = "above" if top5 >= CAUSAL_FLOOR else "BELOW"
    verdict = f"Below the {CAUSAL_GOAL:.0%} goal and {floor} the {CAUSAL_FLOOR:.0%} floor."
    trend = log_token_trend(curve)
    if trend is None:
        return verdict
    per_doubling, tokens_needed, steps_needed = trend
    return (f"{verdict} Past the first third of training, top-5 grows about {per_doubling * 100:.1f} points per "
            f"doubling of the tokens seen (a straight-line fit of the curve against log tokens); at that rate the goal "
            f"needs about {tokens_needed / 1e6:.0f} M tokens, {steps_needed:,} steps in all, "
            f"{tokens_needed / curve[-1]['tokens']:.1f} times what it has seen: the returns are diminishing, and the "
            "curve shows it.")


def log_token_trend(curve: list[dict]) -> tuple[float, float, int] | None:
    """(top-5 points per doubling of tokens, tokens and steps at which the fit reaches the goal), fitted over the
    evaluations past the first third of the steps; None when the curve is too short or not rising."""
    late = [r for r in curve if r["step"] >= curve[-1]["step"] / 3 and r["tokens"] > 0]
    if len(late) < 4:
        return None
    slope, intercept = np.polyfit(np.log2([r["tokens"] for r in late]), [r["heldout_top5"] for r in late], 1)
    if slope <= 0:
        return None
    tokens = float(2 ** ((CAUSAL_GOAL - intercept) / slope))
    return float(slope), tokens, int(round(tokens / (curve[-1]["tokens"] / curve[-1]["step"]), -2))


def causal_card(metrics: dict, size: int | None) -> str:
    shipped, best, curve = metrics["shipped"], metrics["best"], metrics["curve"]
    config = best.get("config", {})
    lines = [
        "# Model card: MiniLM, causal-tuned here (`minilm-causal-tuned`)", "",
        "A next-token (causal) language model that works offline: the masked-LM of this repository "
        "(`minilm-mlm-tuned`, itself the embedded all-MiniLM-L6-v2 fine-tuned for masked words) turned "
        "decoder and trained here to predict the next token. transformers' `BertLMHeadModel` with "
        "`is_decoder=True` puts a causal (look-ahead) mask on the same weights: each token attends only to "
        "itself and the tokens before it. It is a small teaching model trained for a few CPU hours, not "
        "GPT-2; online, `gpt2` or `distilgpt2` are real decoders.", "",
        "## Results (the shipped fp16 file, whole held-out set)", "",
        f"- step **{best['step']:,}** ({best['tokens']:,} training tokens)",
        f"- held-out next-token **top-1 {shipped['heldout_top1']:.1%}**, **top-5 {shipped['heldout_top5']:.1%}**, "
        f"perplexity **{shipped['heldout_perplexity']:.1f}** over {shipped['heldout_targets']:,} held-out tokens "
        f"({shipped['heldout_set']})",
        f"- everyday prompts with a sensible next word in the top 5: **{shipped['probes_right']} of "
        f"{len(shipped['probes'])}**",
        f"- {causal_verdict(shipped['heldout_top5'], curve)}",
        f"- before training (the masked-LM's weights under a causal mask): top-5 {curve[0]['heldout_top5']:.1%}, "
        f"perplexity {curve[0]['heldout_perplexity']:,.0f}", "",
        "## Everyday prompts (top 5 next tokens, shipped file)", "", *probes_section(shipped["probes"]), "",
        "## What was trained", "",
        "Every encoder layer, the position and segment embeddings, and the head's transform and bias; the word "
        "embeddings (tied to the output layer) stay frozen, so the shipped file is only what changed: "
        f"`minilm-causal.safetensors`, fp16, {file_size(size)}, applied to the embedded encoder on load. "
        "Targets: every token of 64-token windows of the masked-LM's corpus after the first ([CLS]); "
        "the window's artificial closing [SEP] is not a target.", "",
        *settings_table(config), "",
        "Reproduce: `python -m tools.mlm_training build-corpus --work-dir .mlm-work` (the masked-LM's corpus), "
        "`python -m tools.clm_training train --work-dir .clm-work --corpus-dir .mlm-work` with the settings above "
        "(resumable: rerun to continue; raise `--steps` for another sitting), then "
        "`python -m tools.clm_training export` and `python -m tools.decoder_cards`.", "",
        "## Training text (all offline-installable; the masked-LM's corpus)", "",
        *corpus_section(metrics.get("corpus", {})), "",
        "## Learning curve", "", "![learning curve](causal-learning-curve.svg)", "",
        "During training each evaluation used 512 held-out windows spread over the set; the shipped file is the "
        f"evaluation with the best top-5 on them (step {best['step']:,}); the results above use all the windows. "
        "Trained in sittings: each continuation runs the learning-rate schedule again up to its new step count "
        "(the learning-rate column shows where).", "",
        "| step | tokens seen | learning rate | held-out loss | perplexity | top-1 | top-5 | prompts right |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in curve_rows(curve):
        lines.append(f"| {row['step']:,} | {row['tokens']:,} | {row['lr']:.2e} | {row['heldout_loss']:.3f} | "
                     f"{row['heldout_perplexity']:,.1f} | {row['heldout_top1']:.1%} | {row['heldout_top5']:.1%} | "
                     f"{row['probes_right']}/{len(shipped['probes'])} |")
    lines += ["", "## Limits", "",
              "- Trained on dictionary glosses, quotations, the King James Bible, a Wikipedia sample, news and "
              "presidential addresses: its continuations lean to those registers, and it knows little of the world.",
              "- 64-token training windows: positions beyond 64 were never trained with the causal mask.",
              "- Sampling from it shows how temperature, top-k and top-p reshape a distribution; long "
              "continuations drift and repeat, as small language models do."]
    return "\n".join(lines) + "\n"


_LABELS = ("IsNext", "NotNext")  # the card lists the label rows first, then the sources


def nsp_card(metrics: dict, size: int | None) -> str:
    shipped, best, curve, pairs = metrics["shipped"], metrics["best"], metrics["curve"], metrics["pairs"]
    config = best.get("config", {})
    recent = [r["heldout_accuracy"] for r in curve[-4:]]
    verdict = (f"Meets the goal of {NSP_GOAL:.0%}." if shipped["heldout_accuracy"] >= NSP_GOAL else
               f"Below the {NSP_GOAL:.0%} goal; over the last {len(recent)} evaluations of the training log "
               f"accuracy moved by {(recent[-1] - recent[0]) * 100:+.1f} points (see the curve).")
    parts = sorted(shipped["by_part"].items(), key=lambda item: (not item[0].startswith(_LABELS), item[0]))
    lines = [
        "# Model card: MiniLM, MLM + NSP tuned here (`minilm-nsp-tuned`)", "",
        "BERT's two pre-training heads on one encoder, offline: the masked-LM of this repository with a "
        "next-sentence-prediction (NSP) head trained here. Input `[CLS] A [SEP] B [SEP]`; the [CLS] token's last "
        "hidden state goes through the pooler (Linear + tanh) and a Linear to two logits, IsNext and NotNext. "
        "Loads as transformers' `BertForPreTraining`. Online, `bert-base-uncased` is the original.", "",
        "## Results (the shipped fp16 file, every held-out pair)", "",
        f"- held-out accuracy **{shipped['heldout_accuracy']:.1%}** on {shipped['heldout_pairs']:,} pairs "
        f"(half IsNext, half NotNext) after {best['step']:,} steps. {verdict}",
        f"- before training (the masked-LM with the embedded model's pooler and a new classifier): "
        f"{curve[0]['heldout_accuracy']:.1%}", "",
        "| part of the held-out set | pairs | accuracy |", "|---|---:|---:|",
        *[f"| {name} | {part['pairs']:,} | {part['accuracy']:.1%} |" for name, part in parts], "",
        "The tutorials' examples (P(IsNext) from the shipped file):", "",
        "| A | B | expected | P(IsNext) |", "|---|---|---|---:|",
        *[f"| {e['a']} | {e['b']} | {e['expected']} | {e['is_next']:.3f} |" for e in shipped["examples"]], "",
        "## How the pairs were made", "",
        "As in BERT: sentence A is one or two consecutive sentences of a document, B is the real next sentence "
        "(50 %) or a sentence of another document (50 %). Documents of running text only (fortune quotations, "
        "the King James Bible, the Wikipedia sample and news, the State of the Union addresses; dictionary "
        "glosses are not sequences of sentences), split into train and held-out by the masked-LM corpus's "
        "document hash, so held-out pairs come from documents never seen in training.", "",
        "| split | pairs | documents per source |", "|---|---:|---|",
        *[f"| {split} | {info['pairs']:,} | "
          + ", ".join(f"{s}: {n:,}" for s, n in info["documents"].items()) + " |" for split, info in pairs.items()],
        "", "## What was trained", "",
        f"The top {config.get('train_layers', '?')} encoder layers, the pooler and the NSP classifier, on NSP's "
        f"loss plus {config.get('mlm_weight', '?')} x BERT's masked-LM loss on the same pairs (15 %, 80/10/10), so "
        "the masked-LM head still reads the changed layers; embeddings, lower layers and the MLM head are the "
        f"masked-LM's. Shipped: only those tensors, fp16, `minilm-nsp.safetensors` ({file_size(size)}), "
        "applied on top of the masked-LM's on load.", "",
        *settings_table(config), "",
        "Reproduce: `python -m tools.mlm_training build-corpus --work-dir .mlm-work`, then "
        "`python -m tools.nsp_training pairs --work-dir .nsp-work --corpus-dir .mlm-work`, `train --work-dir "
        ".nsp-work` with the settings above, `export --work-dir .nsp-work`, and `python -m tools.decoder_cards`.",
        "", "## Learning curve", "", "![learning curve](nsp-learning-curve.svg)", "",
        f"During training each evaluation used the first {config.get('eval_pairs', '?')} held-out pairs; the shipped "
        f"file is the evaluation that did best on them (step {best['step']:,}), so those pairs helped choose it; the "
        "results above measure it on all of them. Trained in sittings: each continuation runs the learning-rate "
        "schedule again up to its new step count (the learning-rate column shows where).", "",
        "| step | pairs seen | learning rate | held-out accuracy |", "|---:|---:|---:|---:|",
        *[f"| {r['step']:,} | {r['pairs_seen']:,} | {r['lr']:.2e} | {r['heldout_accuracy']:.1%} |"
          for r in curve_rows(curve)], "",
        "## Limits", "",
        "- NotNext here means 'from another document', as in BERT: the head mostly learns whether B is on A's "
        "topic and in its style (RoBERTa and ALBERT found NSP this easy and dropped or replaced it). A fluent "
        "but wrong continuation on the same topic can still score IsNext.",
        "- A 'document' here is a corpus document: about 150 words of a speech, ten verses, one article paragraph "
        "(docs/MASKED_LM.md), not a whole book or article as in BERT. So a NotNext B often comes from the same "
        "kind of text as A, often the same speech or book, and those pairs are much harder (compare the two NotNext "
        "rows above); so are true next sentences of the speeches, whose neighbours read alike.",
    ]
    return "\n".join(lines) + "\n"


def causal_curve(curve: list[dict]) -> str:
    return line_svg(curve, [("heldout_top5", "#0072b2", "top-5"), ("heldout_top1", "#009e73", "top-1")],
                    (CAUSAL_GOAL, f"goal {CAUSAL_GOAL:.0%} top-5"))


def nsp_curve(curve: list[dict]) -> str:
    return line_svg(curve, [("heldout_accuracy", "#0072b2", "held-out accuracy")],
                    (NSP_GOAL, f"goal {NSP_GOAL:.0%}"), low=0.4)


CARDS = {  # name: (the metrics file, the tool that exports it, card and curve files, their writers)
    "causal": ("minilm-causal.json", "tools.clm_training", ("MODEL_CARD_CAUSAL.md", "causal-learning-curve.svg"),
               causal_card, causal_curve),
    "nsp": ("minilm-nsp.json", "tools.nsp_training", ("MODEL_CARD_NSP.md", "nsp-learning-curve.svg"),
            nsp_card, nsp_curve),
}


def write_cards(out_dir: Path = WEIGHTS_DIR) -> dict:
    written = {}
    for name, (metrics, tool, names, card, curve) in CARDS.items():
        if (out_dir / metrics).is_file():
            write_card_files(out_dir / metrics, f"run python -m {tool} export first", out_dir, names, card, curve)
            written[name] = str(out_dir / names[0])
    if not written:
        raise VizError(f"No metrics in {out_dir}: run the exports first.")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.decoder_cards", description=__doc__.split("\n")[0])
    parser.add_argument("--out-dir", type=Path, default=WEIGHTS_DIR)
    args = parser.parse_args(argv)
    return run_command(lambda: write_cards(args.out_dir))


if __name__ == "__main__":
    sys.exit(main())
