"""Write ``vizcore/weights/MODEL_CARD_TUNED_LENS.md`` from ``tuned-lens.json`` (what the export measured).

    python -m tools.tuned_lens_card [--metrics vizcore/weights/tuned-lens.json] [--note TEXT ...]

Every number on the card comes from the metrics file; ``--note`` adds a line under "Run notes" (how the
sittings went, the machine's load while training).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from pathlib import Path

from tools.cards import file_size

WEIGHTS_DIR = Path(__file__).resolve().parents[1] / "vizcore" / "weights"
CARD = "MODEL_CARD_TUNED_LENS.md"
PAPER = ("Belrose et al. 2023, \"Eliciting Latent Predictions from Transformers with the Tuned Lens\" "
         "(arXiv:2303.08112)")


def row_labels(count: int) -> list[str]:
    return ["embeddings"] + [f"layer {i}" for i in range(1, count)] if count else []


def results_table(metrics: dict) -> list[str]:
    logit, tuned = metrics["logit"], metrics["tuned"]
    lines = ["| hidden state | KL logit lens | KL tuned lens | top-1 agr. logit | top-1 agr. tuned | "
             "top-5 agr. logit | top-5 agr. tuned |", "|---|---:|---:|---:|---:|---:|---:|"]
    for r, label in enumerate(row_labels(len(logit["kl"]))):
        last = " (the output)" if r == len(logit["kl"]) - 1 else ""
        lines.append(f"| {label}{last} | {logit['kl'][r]:.3f} | **{tuned['kl'][r]:.3f}** | {logit['top1'][r]:.1%} | "
                     f"{tuned['top1'][r]:.1%} | {logit['top5'][r]:.1%} | **{tuned['top5'][r]:.1%}** |")
    return lines


def probes_table(probes: dict | None) -> list[str]:
    """The same comparison on the everyday probe sentences (short, one [MASK]), when the export measured it."""
    if not probes:
        return []
    logit, tuned = probes["logit"], probes["tuned"]
    labels = row_labels(len(logit["kl"]))
    lines = [f"### On the {probes['sentences']} everyday probe sentences (short, one [MASK]: what the page is given)",
             "", "| hidden state | KL logit lens | KL tuned lens | top-5 agr. logit | top-5 agr. tuned |",
             "|---|---:|---:|---:|---:|"]
    for r, label in enumerate(labels[:-1]):
        better = "**" if tuned["kl"][r] < logit["kl"][r] else ""
        lines.append(f"| {label} | {logit['kl'][r]:.3f} | {better}{tuned['kl'][r]:.3f}{better} | "
                     f"{logit['top5'][r]:.0%} | {tuned['top5'][r]:.0%} |")
    worse = [labels[r] for r in range(len(labels) - 1) if tuned["kl"][r] >= logit["kl"][r]]
    lines += ["", ("The tuned lens reads closer to the output at every translated layer here too." if not worse else
                   f"Here the tuned lens is *not* closer at: {', '.join(worse)}. The translators were fitted on "
                   "64-token windows of the corpus; short sentences are off that distribution, most of all "
                   "at the embeddings, where the reading is only a function of the token and its position.")]
    return lines


def curve_table(curve: list[dict]) -> list[str]:
    if not curve:
        return []
    lines = ["| step | time (UTC) | learning rate | mean KL over the translated layers | "
             + " | ".join(row_labels(len(curve[0]["tuned"]["kl"]))[:-1]) + " |",
             "|---:|---|---:|---:|" + "---:|" * (len(curve[0]["tuned"]["kl"]) - 1)]
    for record in curve:
        kl = record["tuned"]["kl"][:-1]
        lines.append(f"| {record['step']:,} | {record['time'][11:16]} | {record['lr']:.3f} | "
                     f"{sum(kl) / len(kl):.3f} | " + " | ".join(f"{v:.3f}" for v in kl) + " |")
    return lines


def training_minutes(curve: list[dict]) -> float:
    """Wall time from the first evaluation to the last (one sitting; a resumed run adds its pauses)."""
    if len(curve) < 2:
        return 0.0
    first, last = (datetime.fromisoformat(curve[i]["time"]) for i in (0, -1))
    return (last - first).total_seconds() / 60


def card_text(metrics: dict, notes: list[str]) -> str:
    best, held, config = metrics["best"], metrics["heldout"], metrics["best"]["config"]
    logit, tuned = metrics["logit"], metrics["tuned"]
    layers = len(logit["kl"]) - 1
    beaten = sum(t < g for t, g in zip(tuned["kl"][:-1], logit["kl"][:-1]))
    lines = [
        "# Model card: the tuned lens of `minilm-mlm-tuned`", "",
        f"Affine translators for the offline masked-LM, one per hidden state but the output ({layers}: the "
        f"embeddings and layers 1 to {layers - 1}), trained in this repository as in {PAPER}: "
        "`h -> h + A_l h + b_l`, initialised at zero (the logit lens), trained so that the masked-LM head reading "
        "the translated state matches the model's final distribution, KL(final || lens). The last layer's "
        "state is the output: it has no translator. Shipped in `tuned-lens.safetensors`: "
        f"{metrics['parameters']:,} numbers in fp16 ({file_size(metrics['bytes'])}); it names the masked-LM "
        "weights it was trained on and the app refuses it for any others.", "",
        "## Results (held-out text, the shipped fp16 file)", "",
        f"On {held['positions']:,} positions in held-out windows of the masked-LM's own corpus "
        f"({held['set']}; {held['where']}). Never trained on, by the masked-LM or by the lens. "
        f"The tuned lens's KL is below the logit lens's at **{beaten} of {layers}** translated layers.", "",
        *results_table(metrics), "",
        "- **KL**: mean over positions of KL(final distribution || the lens's distribution at that layer), in nats.",
        "- **top-1 agreement**: the lens's top word at that layer is the model's final top-1 word.",
        "- **top-5 agreement**: the model's final top-1 word is among the lens's top 5 words at that layer.", "",
        f"Measured in {held['seconds']:.0f} s at one torch thread; load average then {held['load']}.", "",
        *probes_table(metrics.get("probes")), "",
        "## Training", "",
        f"Best checkpoint: step **{best['step']:,}** of {config['steps']:,} (chosen by mean KL on "
        f"{config['eval_sequences']} held-out windows, measured every {config['eval_every']} steps). "
        f"{config['batch_size']} windows of {config['seq_len']} tokens a step, BERT's 15 % selection with "
        "80/10/10 (about 300 positions a step); the loss is the KL at every selected position, summed over "
        f"layers. SGD with Nesterov momentum {config['momentum']}, learning rate {config['lr']} decayed linearly "
        f"to zero, weight decay {config['weight_decay']} (towards the identity, i.e. the logit lens), gradients "
        f"clipped to norm 1 (the shared training loop's), seed {config['seed']}, {config['threads']} torch thread(s). "
        f"Wall time from the first to the last evaluation: {training_minutes(metrics['curve']):.0f} minutes.", "",
        "| setting | value |", "|---|---|",
        *[f"| {k} | {v} |" for k, v in config.items()],
        "", "Why these settings: the paper's recipe (SGD, Nesterov 0.9, lr 1.0, linear decay, weight decay 1e-3) "
        "with far smaller steps (about 300 positions, not 2^18 tokens), so that a run fits in well under an hour "
        "on one CPU thread; decay towards zero keeps an undertrained translator close to the logit lens.", "",
        "### Learning curve (evaluation windows)", "", *curve_table(metrics["curve"]), "",
        "## Data", "",
        "The masked-LM's corpus (`python -m tools.mlm_training build-corpus`): WordNet glosses, GCIDE, fortunes, "
        "the King James Bible, the gensim Wikipedia sample and Lee news corpus, State of the Union addresses; "
        "documents split by a hash, the same split the masked-LM was trained and measured on (see "
        "MODEL_CARD.md).", "",
        "Reproduce: `python -m tools.mlm_training build-corpus --work-dir .lens-work`, then "
        "`python -m tools.tuned_lens_training train --work-dir .lens-work` with the settings above (run it again "
        "to continue a stopped sitting), `python -m tools.tuned_lens_training export --work-dir .lens-work`, "
        "`python -m tools.tuned_lens_card`.", "",
        "## Limits", "",
        "A translator is a trained model of its own: a good reading at an early layer shows that the answer can "
        "be decoded there by an affine map learnt from the model's own outputs, not that the model uses it there. "
        "It was trained on one model's hidden states (these masked-LM weights) and means nothing for another "
        "model. Measured at [MASK] positions; other positions were in training but are not on this card.",
    ]
    if notes:
        lines += ["", "## Run notes", "", *[f"- {note}" for note in notes]]
    return "\n".join(lines) + "\n"


def write_card(metrics_path: Path, out_dir: Path, notes: list[str]) -> Path:
    metrics = json.loads(metrics_path.read_text(encoding="utf-8"))
    target = out_dir / CARD
    target.write_text(card_text(metrics, notes), encoding="utf-8")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.tuned_lens_card", description=__doc__.split("\n")[0])
    parser.add_argument("--metrics", type=Path, default=WEIGHTS_DIR / "tuned-lens.json")
    parser.add_argument("--note", action="append", default=[], help="a line for the card's run notes")
    args = parser.parse_args(argv)
    if not args.metrics.is_file():
        print(f"error: '{args.metrics}' is missing: run python -m tools.tuned_lens_training export first.",
              file=sys.stderr)
        return 2
    print(write_card(args.metrics, args.metrics.parent, args.note))
    return 0


if __name__ == "__main__":
    sys.exit(main())
