"""``python -m vizcore finetune``: fine-tune a classifier from the command line; JSON on stdout.

Progress (step, loss, held-out accuracy, ETA) goes to stderr, one line at a time, so stdout stays
pure JSON. Eval labels are matched to training labels by name.
"""

from __future__ import annotations

import argparse
import sys

from vizcore.cliargs import add_format_option, add_model_options


def _progress_printer(every: int = 5):
    def report(progress) -> None:
        if progress.loss is None:  # an evaluation
            print(f"eval  step {progress.step}/{progress.total_steps}: held-out accuracy "
                  f"{progress.eval_accuracy:.3f}", file=sys.stderr, flush=True)
        elif progress.step % every == 0 or progress.step == progress.total_steps:
            eta = f", ETA {progress.eta_s:.0f} s" if progress.eta_s is not None else ""
            print(f"train step {progress.step}/{progress.total_steps} (epoch {progress.epoch}/"
                  f"{progress.epochs}): loss {progress.loss:.4f}{eta}", file=sys.stderr, flush=True)

    return report


def _finetune(args: argparse.Namespace) -> dict:
    from vizcore.finetune.analysis import evaluate
    from vizcore.finetune.datasets import load_train_test
    from vizcore.finetune.training import FinetuneConfig, train_classifier
    from vizcore.model.loading import load_model

    config = FinetuneConfig(mode=args.mode, last_n=args.last_n, lr=args.lr, epochs=args.epochs,
                            batch_size=args.batch_size, max_length=args.max_length, seed=args.seed,
                            pooling=args.pooling)
    data = load_train_test(args.train, args.eval, args.text_column, args.label_column, args.seed)
    loaded = load_model(args.model, device=args.device)
    result = train_classifier(loaded, data, config, on_progress=_progress_printer())
    evaluation = evaluate(result, data.test)
    steps = result.history.steps
    return {
        "model": loaded.name,
        "device": str(loaded.device),
        "label_names": list(result.label_names),
        "config": {"mode": config.mode, "last_n": config.last_n if config.mode == "last_n" else None,
                   "lr": config.learning_rate, "epochs": config.epochs, "batch_size": config.batch_size,
                   "max_length": config.max_length, "seed": config.seed, "pooling": config.pooling},
        "data": {"train": data.source, "train_examples": len(data.train), "eval_examples": len(data.test),
                 "held_out": data.split_note, "train_counts": data.train.counts(),
                 "eval_counts": data.test.counts(), "skipped_empty_rows": data.train.dropped_empty},
        "train": {"steps": result.steps_done, "seconds": round(result.seconds, 2),
                  "steps_per_second": round(result.steps_done / result.seconds, 3) if result.seconds else None,
                  "final_loss": steps[-1]["loss"] if steps else None,
                  "trainable_parameters": result.trainable_parameters,
                  "total_parameters": result.total_parameters,
                  "eval_history": result.history.evals},
        "eval": evaluation.to_dict(),
    }


def register(subparsers: argparse._SubParsersAction) -> None:
    from vizcore.finetune.training import DEFAULT_LR, MODES

    parser = subparsers.add_parser(
        "finetune", help="fine-tune a text classifier (built-in sentiment set or a CSV) and report accuracy")
    parser.add_argument("--train", default="builtin", help="'builtin' (default) or a CSV file with a header row")
    parser.add_argument("--eval", default=None,
                        help="a CSV to evaluate on (labels matched by name); default: the held-out split")
    parser.add_argument("--text-column", default="text", help="column with the texts (default: text)")
    parser.add_argument("--label-column", default="label", help="column with the labels (default: label)")
    parser.add_argument("--mode", default="full", choices=MODES,
                        help="head = frozen encoder; last_n = last N layers + head; full (default)")
    parser.add_argument("--last-n", type=int, default=2, help="layers trained in mode last_n (default: 2)")
    parser.add_argument("--epochs", type=int, default=3, help="passes over the training set (default: 3)")
    parser.add_argument("--lr", type=float, default=None,
                        help="learning rate (default: "
                        + ", ".join(f"{m} {lr:g}" for m, lr in DEFAULT_LR.items()) + ")")
    parser.add_argument("--batch-size", type=int, default=16, help="examples per step (default: 16)")
    parser.add_argument("--max-length", type=int, default=64, help="tokens per example, truncated (default: 64)")
    parser.add_argument("--pooling", default="mean", choices=["mean", "cls"], help="sentence vector (default: mean)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    add_model_options(parser)
    add_format_option(parser)
    parser.set_defaults(handler=_finetune)
