"""``python -m vizcore finetune --task sentence|pair|token|qa``: fine-tune from the command line; JSON on stdout.

Progress (step, loss, the task's held-out metric, ETA) goes to stderr, one line at a time, so stdout
stays pure JSON. Eval labels are matched to training labels by name.
"""

from __future__ import annotations

import argparse
import sys

from vizcore.cliargs import add_format_option, add_model_options
from vizcore.finetune import DEFAULT_LR, MODES, POOLINGS, TASK_NAMES


def _progress_printer(every: int = 5):
    def report(progress) -> None:
        if progress.loss is None:  # an evaluation
            print(f"eval  step {progress.step}/{progress.total_steps}: held-out {progress.metric_label} "
                  f"{progress.eval_score:.3f}", file=sys.stderr, flush=True)
        elif progress.step % every == 0 or progress.step == progress.total_steps:
            eta = f", ETA {progress.eta_s:.0f} s" if progress.eta_s is not None else ""
            print(f"train step {progress.step}/{progress.total_steps} (epoch {progress.epoch}/"
                  f"{progress.epochs}): loss {progress.loss:.4f}{eta}", file=sys.stderr, flush=True)

    return report


def _finetune(args: argparse.Namespace) -> dict:
    from vizcore.finetune.tasks import get_task

    task = get_task(args.task)
    columns = {"text": args.text_column, "second": args.second_column, "label": args.label_column}
    data = task.load_data(args.train, args.eval, args.seed, columns)  # a broken file is said before the
    from vizcore.finetune.classify import ClassificationTask  # seconds of importing the training code
    from vizcore.finetune.training import task_config, train_task
    from vizcore.model.loading import load_model

    config = task_config(task, mode=args.mode, last_n=args.last_n, lr=args.lr, epochs=args.epochs,
                         batch_size=args.batch_size, max_length=args.max_length, seed=args.seed, pooling=args.pooling)
    loaded = load_model(args.model, device=args.device)
    config.validate(loaded.num_layers)
    result = train_task(loaded, task, data, config, on_progress=_progress_printer())
    steps = result.history.steps
    scores = {"task": task.name, "metric": task.metric, "examples": len(data.test), **result.scores}
    if isinstance(task, ClassificationTask):
        from vizcore.finetune.analysis import evaluate

        scores.update(evaluate(result, data.test).to_dict())
    else:
        scores["predictions"] = task.held_out_records(result.model, result.tokenizer, data.test, config.max_length)
    counts = getattr(data.train, "counts", None)
    return {
        "model": loaded.name,
        "device": str(loaded.device),
        "task": task.name,
        "label_names": list(result.label_names),
        "config": {"mode": config.mode, "last_n": config.last_n if config.mode == "last_n" else None,
                   "lr": config.learning_rate, "epochs": config.epochs, "batch_size": config.batch_size,
                   "max_length": config.max_length, "seed": config.seed,
                   "pooling": config.pooling if isinstance(task, ClassificationTask) else None},
        "data": {"train": data.source, "train_examples": len(data.train), "eval_examples": len(data.test),
                 "held_out": data.split_note,
                 "train_counts": counts() if callable(counts) else None,
                 "eval_counts": data.test.counts() if callable(counts) else None,
                 "skipped_empty_rows": getattr(data.train, "dropped_empty", 0)},
        "train": {"steps": result.steps_done, "seconds": round(result.seconds, 2),
                  "steps_per_second": round(result.steps_done / result.seconds, 3) if result.seconds else None,
                  "final_loss": steps[-1]["loss"] if steps else None,
                  "trainable_parameters": result.trainable_parameters,
                  "total_parameters": result.total_parameters,
                  "eval_history": result.history.evals},
        "eval": scores,
    }


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "finetune", help="fine-tune the model for a task (built-in data or your file) and report held-out figures")
    parser.add_argument("--task", default="sentence", choices=TASK_NAMES,
                        help="sentence (classification, default), pair (sentence-pair classification), token "
                             "(named entities, BIO tags), qa (extractive question answering)")
    parser.add_argument("--train", default="builtin",
                        help="'builtin' (default: the task's built-in set) or a file: CSV with a header row "
                             "(sentence, pair), CoNLL (token), SQuAD JSON or CSV (qa)")
    parser.add_argument("--eval", default=None,
                        help="a file to evaluate on (labels matched by name); default: the held-out split")
    parser.add_argument("--text-column", default=None,
                        help="CSV column with the texts (default: text; pair: premise; qa: context)")
    parser.add_argument("--second-column", default=None,
                        help="pair: CSV column with the second texts (default: hypothesis); qa: the questions")
    parser.add_argument("--label-column", default=None,
                        help="CSV column with the labels (default: label; qa: the answers)")
    parser.add_argument("--mode", default="full", choices=MODES,
                        help="head = frozen encoder; last_n = last N layers + head; full (default)")
    parser.add_argument("--last-n", type=int, default=2, help="layers trained in mode last_n (default: 2)")
    parser.add_argument("--epochs", type=int, default=None, help="passes over the training set (default: the task's)")
    parser.add_argument("--lr", type=float, default=None,
                        help="learning rate (default per mode: "
                        + ", ".join(f"{m} {lr:g}" for m, lr in DEFAULT_LR.items())
                        + "; a task may set its own, see docs/FINETUNE.md)")
    parser.add_argument("--batch-size", type=int, default=None, help="examples per step (default: the task's)")
    parser.add_argument("--max-length", type=int, default=None,
                        help="tokens per example, truncated (default: the task's; 64 for sentences)")
    parser.add_argument("--pooling", default="mean", choices=POOLINGS,
                        help="sentence, pair: the vector the classifier reads (default: mean)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    add_model_options(parser)
    add_format_option(parser)
    parser.set_defaults(handler=_finetune)
