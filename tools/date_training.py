"""Train the date translator the app ships (the whole Transformer, trained from scratch) and write its card.

Explicit and reproducible; ``make run`` never trains. The data are generated (``vizcore.seq2seq.dates``),
so the two commands need nothing but this checkout::

    python -m tools.date_training train --work-dir .date-work --steps 1200   # a few minutes on 2 cores
    python -m tools.date_training export --work-dir .date-work               # -> vizcore/weights/date-translator.*

``train`` runs ``vizcore.seq2seq.training.train_dates`` (the page's live training, same code) and
saves the model and its history in the work directory. ``export`` measures the saved model on the
1,000 held-out dates (dates training never sees in any wording): exact match of greedy decoding, and
per cross-attention head the share of dates whose four year digits all attend most to a year word;
then writes the float32 weights, ``date-translator.json`` (every number) and ``date-translator.md``
(the model card).
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from tools.command import add_config_flags, config_from, number, run_command, tool_parser
from vizcore.seq2seq.alignment import best_head
from vizcore.seq2seq.dates import HELDOUT_SIZE, RESERVED_ONE_IN, heldout_pairs, parse_date
from vizcore.seq2seq.decoding import greedy_ids, texts
from vizcore.seq2seq.model import DateModelConfig
from vizcore.seq2seq.training import DateHistory, DateTrainConfig, evaluate, make_batch, train_dates
from vizcore.seq2seq.translator import MODEL_NAME, load_weights, save_weights

WEIGHTS_DIR = Path(__file__).resolve().parents[1] / "vizcore" / "weights"
GOAL_EXACT, GOAL_YEAR = 0.98, 0.90


def train_command(work: Path, config: DateTrainConfig, threads: int) -> dict:
    torch.set_num_threads(threads)
    work.mkdir(parents=True, exist_ok=True)

    history = DateHistory()

    def progress(step: int) -> None:
        if step % config.eval_every == 0:
            print(json.dumps(history.steps[-1]), file=sys.stderr, flush=True)

    cpu = time.process_time()
    result = train_dates(config, history, on_step=progress)
    save_weights(result.model, work / "model.safetensors")
    # CPU seconds as well as wall seconds: on shared cores the wall clock says more about the neighbours.
    summary = {"config": asdict(config), "seconds": round(result.seconds, 1),
               "cpu_seconds": round(time.process_time() - cpu, 1), "threads": threads,
               "torch": torch.__version__, "history": history.steps}
    (work / "training.json").write_text(json.dumps(summary, indent=1))
    return {k: summary[k] for k in ("seconds", "cpu_seconds", "threads")} | {"last": history.steps[-1]}


def measure(model) -> dict:
    """Every held-out number of the card, on all 1,000 held-out dates."""
    pairs = heldout_pairs(HELDOUT_SIZE)
    batch = make_batch(pairs)
    measured = evaluate(model, batch)
    predicted = texts(greedy_ids(model, batch.source))
    forms = [_form(text) for text, _ in pairs]
    by_form = {form: float(np.mean([p == iso for p, iso, f in zip(predicted, batch.isos, forms) if f == form]))
               for form in sorted(set(forms))}
    layer, head, rate = best_head(np.array(measured["year_alignment"]))
    wrong = [{"text": t, "expected": iso, "output": p} for (t, iso), p in zip(pairs, predicted) if p != iso]
    return {**measured, "dates": len(pairs), "exact_match_by_form": by_form,
            "dates_by_form": {f: forms.count(f) for f in sorted(set(forms))},
            "best_year_head": {"layer": layer, "head": head, "rate": rate}, "mistake_count": len(wrong),
            "mistakes": wrong[:50]}


def _form(text: str) -> str:
    tokens = parse_date(text).tokens
    return "the <day> of <month> <year>" if tokens[0] == "the" else (
        "<month> <day>, <year>" if "," in tokens else "<month> <day> <year>")


def export_command(work: Path, out_dir: Path = WEIGHTS_DIR) -> dict:
    training = json.loads((work / "training.json").read_text())
    model = load_weights(work / "model.safetensors")
    started = time.perf_counter()
    heldout = measure(model)
    target = out_dir / f"{MODEL_NAME}.safetensors"
    save_weights(model, target)
    shipped = measure(load_weights(target))  # the file the app loads, measured again: the card is about it
    if shipped["exact_match"] != heldout["exact_match"]:
        raise SystemExit("The exported file does not reproduce the trained model's exact match.")
    card = {"model": MODEL_NAME, "parameters": sum(p.numel() for p in model.parameters()),
            "file_bytes": target.stat().st_size, "training": training, "heldout": shipped,
            "measure_seconds": round(time.perf_counter() - started, 1)}
    target.with_suffix(".json").write_text(json.dumps(card, indent=1))
    target.with_suffix(".md").write_text(model_card(card))
    return {"exact_match": shipped["exact_match"], "best_year_head": shipped["best_year_head"],
            "file_bytes": card["file_bytes"]}


def _meets(ok: bool) -> str:
    return "meets" if ok else "misses"


def _percent(x: float) -> str:
    return f"{100 * x:.1f}%"


def _head_table(heldout: dict) -> list[str]:
    rows = ["| layer | head | year digits all aligned (dates) | year digits | month digits | day digits | "
            "all characters but dashes |", "|---:|---:|---:|---:|---:|---:|---:|"]
    roles = heldout["alignment_by_role"]
    for l, layer in enumerate(heldout["year_alignment"]):
        for h, year in enumerate(layer):
            rows.append(f"| {l + 1} | {h + 1} | {_percent(year)} | {_percent(roles['year'][l][h])} | "
                        f"{_percent(roles['month'][l][h])} | {_percent(roles['day'][l][h])} | "
                        f"{_percent(heldout['alignment'][l][h])} |")
    return rows


def model_card(card: dict) -> str:
    """The markdown card, written from the JSON card's numbers only."""
    held = card["heldout"]
    lines = _result_lines(held) + _training_lines(card)
    if held["mistakes"]:
        lines += ["## Mistakes on the held-out set (the first 20)", "",
                  "| input | expected | output |", "|---|---|---|",
                  *[f"| {m['text']} | {m['expected']} | {m['output']} |" for m in held["mistakes"][:20]], ""]
    return "\n".join(lines)


def _result_lines(held: dict) -> list[str]:
    best = held["best_year_head"]
    return [
        f"# Model card: the date translator (`{MODEL_NAME}`)", "",
        "The whole Transformer of *Attention Is All You Need*, small, trained from scratch in this repository "
        "to turn spelled-out English dates into ISO dates: \"the twenty first of march nineteen ninety nine\" "
        "-> `1999-03-21`. Words in, one character out per step. The task's alignment is known, so the "
        "cross-attention can be checked, not only shown (`vizcore/seq2seq/`, page `/translate`).", "",
        "## Results (the shipped file, all 1,000 held-out dates)", "",
        f"- exact match of greedy decoding: **{_percent(held['exact_match'])}** "
        f"({_meets(held['exact_match'] >= GOAL_EXACT)} the 98% goal; {held['mistake_count']} mistakes)",
        f"- best year-aligning cross-attention head: **layer {best['layer'] + 1}, head {best['head'] + 1}**: "
        f"in **{_percent(best['rate'])}** of the dates all four year digits attend most to a year word "
        f"({_meets(best['rate'] >= GOAL_YEAR)} the 90% goal)", "",
        "| form | dates | exact match |", "|---|---:|---:|",
        *[f"| {form} | {held['dates_by_form'][form]} | {_percent(rate)} |"
          for form, rate in held["exact_match_by_form"].items()], "",
        "Per head (layers and heads from 1). A character aligns when the input word its row of "
        "cross-attention weights most is one it comes from: year digits from the year words ('and' "
        "included), month digits from the month word, day digits from the day words; dashes are not "
        "counted. Measured with teacher forcing on the right answer.", "",
        *_head_table(held), "",
        "The year is always the last words of the input, so a head that looks at the end of the input "
        "aligns the year by position alone; the month and day columns are the harder test (their place "
        "differs between the two forms).", "",
    ]


def _training_lines(card: dict) -> list[str]:
    training = card["training"]
    config = training["config"]
    return [
        "## Data", "",
        "Generated by `vizcore.seq2seq.dates.random_pair`: a uniform date of 1900-2099, a uniform form "
        "(`the <day> of <month> <year>`, `<month> <day> <year>`, `<month> <day>, <year>`), a uniform "
        "wording of the year among those the grammar allows. A fresh batch every step. Held out: dates "
        f"whose SHA-256 of the ISO text is 0 modulo {RESERVED_ONE_IN} (about 1,800 dates), which "
        "training never draws in any wording; the 1,000 held-out dates are distinct ones among them "
        "(`heldout_pairs`, seed 18).", "",
        "## Model and training", "",
        "| setting | value |", "|---|---|",
        *[f"| {k} | {v} |" for k, v in config["model"].items()],
        f"| parameters | {card['parameters']:,} |", f"| file | float32, {card['file_bytes'] / 1e3:.0f} kB |",
        *[f"| {k} | {v} |" for k, v in config.items() if k != "model"],
        f"| training time | {training['seconds']:.0f} s wall clock, {training['cpu_seconds']:.0f} s of CPU, "
        f"{training['threads']} torch thread(s), torch {training['torch']} |", "",
        "Adam, linear warm-up then cosine decay to 10%, gradients clipped at norm 1, cross-entropy on the "
        "10 characters and the end token, teacher forcing. Post-norm layers, sinusoidal positions, no "
        "dropout. Reproduce: `python -m tools.date_training train` then `python -m tools.date_training "
        "export` (same seed, same numbers on the same torch build).", "",
    ]


def main(argv: list[str] | None = None) -> int:
    parser, commands = tool_parser("tools.date_training", __doc__, ".date-work", ("train", "export"))
    commands["train"].add_argument("--threads", type=number(int, 1), default=1)
    add_config_flags(commands["train"], DateTrainConfig, skip=("model",))
    add_config_flags(commands["train"], DateModelConfig)
    args = parser.parse_args(argv)
    config = config_from(args, DateTrainConfig, model=config_from(args, DateModelConfig))
    return run_command({"train": lambda: train_command(args.work_dir, config, args.threads),
                        "export": lambda: export_command(args.work_dir)}[args.command])


if __name__ == "__main__":
    sys.exit(main())
