"""Write ``vizcore/weights/MODEL_CARD_MPNET_MLM.md`` (and ``mpnet-mlm-curve.svg``) from ``mpnet-mlm.json``.

Run after ``python -m tools.mpnet_mlm export``::

    python -m tools.mpnet_card            # reads vizcore/weights/mpnet-mlm.json

Every number comes from the metrics file the export wrote (the shipped fp16 file measured on the whole held-out
text and the demo set, the data, the evaluation log), nothing typed in by hand.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tools.cards import Line, curve_rows, curve_svg, file_size, settings_table, write_card_files
from tools.command import run_command
from tools.mlm_card import SOURCES
from vizcore.errors import VizError

WEIGHTS_DIR = Path(__file__).resolve().parents[1] / "vizcore" / "weights"
GOALS = {"demo_top1": 0.75, "demo_copied": 0.10, "heldout_top1": 0.55}  # issue 48's goals
HINT = "run python -m tools.mpnet_mlm export first"
SERIES = (("heldout_top1", "#009e73", "held-out top-1"), ("demo_top1", "#0072b2", "demo top-1"),
          ("demo_copied", "#d55e00", "demo copied"))


def _pct(value: float) -> str:
    return f"{value:.1%}"


def goals_section(best: dict) -> list[str]:
    lines = ["| measure | shipped | goal | met |", "|---|---:|---:|:---:|"]
    for key, goal in GOALS.items():
        met = best[key] <= goal if key.endswith("copied") else best[key] >= goal
        sign = "≤" if key.endswith("copied") else "≥"
        lines.append(f"| {key.replace('_', ' ')} | {_pct(best[key])} | {sign} {goal:.0%} | {'yes' if met else 'no'} |")
    return lines


def answers_section(answers: list[dict]) -> list[str]:
    lines = ["| | sentence | first word | accepted |", "|---|---|---|---|"]
    for row in answers:
        right = row["answer"] in row["accepted"]
        accepted = ", ".join(row["accepted"][:6]) + (" …" if len(row["accepted"]) > 6 else "")
        lines.append(f"| {'✓' if right else '✗'} | {row['sentence']} | {row['answer']} | {accepted} |")
    return lines


def curve_section(curve: list[dict]) -> list[str]:
    lines = ["| step | tokens seen | learning rate | held-out top-1 | top-5 | copied | demo top-1 | demo top-5 | "
             "demo copied |", "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row in curve_rows(curve):
        lines.append(f"| {row['step']:,} | {row.get('tokens', 0):,} | {row.get('lr', 0):.2e} | "
                     f"{_pct(row['heldout_top1'])} | {_pct(row['heldout_top5'])} | {_pct(row['heldout_copied'])} | "
                     f"{_pct(row['demo_top1'])} | {_pct(row['demo_top5'])} | {_pct(row['demo_copied'])} |")
    return lines


def learning_curve_svg(curve: list[dict]) -> str:
    lines = [Line([(r["step"], r[key]) for r in curve], colour) for key, colour, _ in SERIES]
    return curve_svg(lines, [(label, colour) for _, colour, label in SERIES],
                     (GOALS["demo_top1"], f"goal {GOALS['demo_top1']:.0%} demo top-1"))


def model_card(metrics: dict, weights_bytes: int | None = None) -> str:
    best, curve, data = metrics.get("best", {}), metrics.get("curve", []), metrics.get("data", {})
    if "demo_top1" not in best:
        raise VizError(f"the metrics have no measured best checkpoint: {HINT}.")
    small = metrics.get("minilm", {})
    lines = [
        "# Model card: MPNet base, MLM-tuned here (`mpnet-mlm-tuned`)", "",
        "A masked-language model at BERT-base size that works offline once the base model is installed: "
        "`all-mpnet-base-v2` (12 layers x 12 heads, hidden 768, MPNet's relative position bias; pretrained by "
        "Microsoft with masked and permuted language modelling, then tuned for sentence embeddings, which left it "
        "without a masked-LM head) with low-rank adapters and MPNet's masked-LM head trained in this repository "
        "to fill blanks again. It answers wherever the app fills a blank when it is installed "
        "(`vizcore.model.catalog.fill_mask_model`).", "",
        "## Results (the shipped fp16 file, as the app loads it)", "",
        f"- step **{best['step']:,}** ({best.get('tokens', 0):,} training tokens)",
        f"- held-out masked words (the whole held-out text, {best.get('heldout_tokens', 0):,} positions, BERT's "
        f"15 % / 80-10-10 rule, fixed seed): **top-1 {_pct(best['heldout_top1'])}**, top-5 "
        f"{_pct(best['heldout_top5'])}; first word copied from the window (a wrong word it can see): "
        f"{_pct(best['heldout_copied'])}",
        f"- the demo set ({best['demo_sentences']} well-known cloze sentences, `vizcore/mlm/demo.py`, never "
        f"trained on): **top-1 {_pct(best['demo_top1'])}**, top-5 {_pct(best['demo_top5'])}, first word copied "
        f"from the sentence **{_pct(best['demo_copied'])}**", "",
        *goals_section(best), "",
    ]
    if small:
        lines += [f"The small offline masked-LM `minilm-mlm-tuned`, the same measure on the same text: held-out "
                  f"top-1 {_pct(small['heldout_top1'])}, copied {_pct(small['heldout_copied'])}; demo top-1 "
                  f"{_pct(small['demo_top1'])}, copied {_pct(small['demo_copied'])}.", ""]
    lines += [
        "## What was trained", "",
        "For each of the 12 layers, low-rank adapters (LoRA, Hu et al. 2021) on the attention's q, k, v, o and both "
        "feed-forward matrices; MPNet's masked-LM head (dense, GELU, layer norm, output bias; its decoder is the "
        "word embeddings, tied and frozen), started from the head fitted on the frozen layer 12 "
        "(`python -m tools.mpnet_mlm probe-layers`); the `<mask>` row of the word embeddings. Everything else "
        "stays as installed. The app merges the adapters into the weights when it loads the model (W + BA), so "
        "the pages and `export-model` see a plain `MPNetForMaskedLM`. Shipped: only those tensors, fp16, in "
        f"`mpnet-mlm.safetensors` ({file_size(weights_bytes)}).", "",
        "**Copying, fought**: besides cross-entropy, each predicted position pays the unlikelihood "
        "(Welleck et al. 2020) of the distinct words of its window that are not its answer, "
        "-Σ log(1 - p(w)), weighted by `copy_penalty`: a model that answers with a word it can see pays for it "
        "unless the word is right.", "",
        *settings_table(best.get("config", {})), "",
        "Reproduce: `python -m tools.mpnet_mlm windows`, `train` (resumable, in sittings), `export`, then "
        "`python -m tools.mpnet_card`.", "",
        "## Training text", "",
        "The same offline text as `minilm-mlm-tuned` (its card lists the sources; all installable offline):",
        ", ".join(f"{name} ({licence})" for name, (_, _, licence) in SOURCES.items()) + ".",
        f"In MPNet's tokens, windows of {data.get('window_tokens', '?')}: {data.get('train_windows', 0):,} for "
        f"training (SHA-256 of the windows {data.get('train_windows_sha256', '?')[:16]}…), "
        f"{data.get('heldout_windows', 0):,} held out. Every document holding a demo sentence (with any accepted "
        "answer) was dropped before tokenizing, and the export checks the training windows token by token: "
        f"demo sentences found in them: **{data.get('demo_sentences_in_training_windows', '?')}**.", "",
        "## Learning curve", "",
        "![held-out and demo top-1, demo copied, by step](mpnet-mlm-curve.svg)", "",
        "Measured during training on 512 held-out windows spread over the held-out text (float32, the adapters "
        "unmerged); the results above are the shipped file's, on all of it.", "",
        *curve_section(curve), "",
        "## The demo set, answered by the shipped file", "",
        *answers_section(best.get("answers", [])), "",
        "## Limits", "",
        "Trained for a few hours on two CPU cores on a few million words of dictionary glosses, quotations, "
        "scripture, encyclopedia text and speeches. It predicts one WordPiece token per blank; the occupation "
        "sentences show what it prefers, which is where a discussion of bias starts, not a right answer. Use it "
        "to see how masked-word prediction works, not as a source of facts. Licences: all-mpnet-base-v2 Apache-2.0; "
        "the text as listed.",
    ]
    return "\n".join(lines) + "\n"


def write_card(metrics_path: Path = WEIGHTS_DIR / "mpnet-mlm.json", out_dir: Path | None = None) -> dict:
    out_dir = out_dir or metrics_path.parent
    names = ("MODEL_CARD_MPNET_MLM.md", "mpnet-mlm-curve.svg")
    metrics = write_card_files(metrics_path, HINT, out_dir, names, model_card, learning_curve_svg)
    return {"card": str(out_dir / names[0]), "demo_top1": metrics["best"]["demo_top1"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.mpnet_card", description=__doc__.split("\n")[0])
    parser.add_argument("--metrics", type=Path, default=WEIGHTS_DIR / "mpnet-mlm.json")
    parser.add_argument("--out-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    return run_command(lambda: write_card(args.metrics, args.out_dir))


if __name__ == "__main__":
    sys.exit(main())
