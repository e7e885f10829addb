"""The command line's batches (issue 49 C): 1,000 20-token sentences through one ``fill-mask --input`` against 1,000
separate ``fill-mask --text`` calls.

Run: ``.venv/bin/python -m bench.cli_batch [--lines 1000] [--singles 12]``. Writes its section of
docs/BENCHMARKS.md. Both sides are real processes (``python -m vizcore``), on the same model (``--model``,
default the offline ``minilm-mlm-tuned``), the same sentences and the same machine, in turn. A thousand separate
calls take over an hour, so ``--singles`` of them are timed (spread over the thousand) and their mean is
multiplied by the thousand: the ratio is batch / (lines x mean single call). Each batch line is checked equal to
its single call's output on the sentences both ran.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.report import load_note, markdown_table, uptime, write_section

WHEN = ("Yesterday", "Last week", "On Monday", "Every morning", "In the end", "After lunch")
SUBJECTS = ("the old farmer", "my younger sister", "the tired student", "a famous painter", "the quiet librarian",
            "our new neighbour", "the hungry child", "a careful doctor")
MIDDLES = ("walked slowly to the", "always kept a small", "carried a heavy wooden", "bought a bright red",
           "found an old leather", "looked for the missing")
ENDS = ("[MASK] before the sun went down.", "[MASK] that her grandmother had given her.",
        "[MASK] near the river behind the church.", "[MASK] in the corner of the kitchen.")


def sentences(count: int) -> list[str]:
    """``count`` (at most 1,152) different sentences of about 20 tokens, each with one [MASK]."""
    every = [f"{w} {s} {m} {e}" for w in WHEN for s in SUBJECTS for m in MIDDLES for e in ENDS]
    if count > len(every):
        raise SystemExit(f"--lines: at most {len(every):,} different sentences")
    return every[:: len(every) // count][:count] if count < len(every) else every


def run(argv: list[str], stdin: str | None = None) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "vizcore", *argv], input=stdin, capture_output=True, text=True,
                          check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{argv[:2]} failed: {done.stderr.strip()}")
    return seconds, done.stdout


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1000)
    parser.add_argument("--singles", type=int, default=12)
    parser.add_argument("--model", default="minilm-mlm-tuned")
    args = parser.parse_args(argv)
    texts = sentences(args.lines)
    from transformers import AutoTokenizer

    from vizcore.model.catalog import BUILTIN_MODELS

    tokenizer = AutoTokenizer.from_pretrained(str(BUILTIN_MODELS[args.model].source()))
    lengths = [len(tokenizer(t)["input_ids"]) for t in texts]
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "in.jsonl"
        source.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
        picks = [round(i * (args.lines - 1) / max(1, args.singles - 1)) for i in range(args.singles)]
        singles, batch_seconds, out = [], None, ""
        for i, pick in enumerate(picks):  # the batch runs in the middle of the singles: a load that comes and goes
            seconds, single = run(["fill-mask", "--model", args.model, f"--text={texts[pick]}"])
            singles.append((pick, seconds, json.loads(single)))
            if i == len(picks) // 2:
                batch_seconds, out = run(["fill-mask", "--model", args.model, "--input", str(source)])
    answers = [json.loads(line) for line in out.splitlines()]
    assert len(answers) == args.lines, (len(answers), args.lines)
    assert all(answers[pick] == single for pick, _, single in singles), "a batch line differs from its single call"
    mean_single = statistics.mean(s for _, s, _ in singles)
    estimate = mean_single * args.lines
    ratio = batch_seconds / estimate
    rows = [[f"{args.lines:,} separate calls (estimated: {args.singles} timed, mean x {args.lines:,})",
             f"{estimate:,.0f}", f"{mean_single:.2f}", "1"],
            [f"one `fill-mask --input` of {args.lines:,} lines", f"{batch_seconds:,.1f}",
             f"{batch_seconds / args.lines * 1000:.1f} ms", f"{ratio:.4f}"]]
    body = (f"## CLI batch: `fill-mask --input` vs separate calls (issue 49 C)\n\n"
            f"`python -m bench.cli_batch`. {args.lines:,} sentences of {min(lengths)}-{max(lengths)} tokens "
            f"(median {statistics.median(lengths):.0f}) with one [MASK], model `{args.model}`, real processes. "
            f"Goal: the batch under a tenth of the separate calls' time. Every timed single call's JSON equals its "
            f"batch line.\n\n"
            + markdown_table(["what", "seconds", "per sentence", "ratio to separate calls"], rows)
            + f"\n\nMeasured {time.strftime('%Y-%m-%d %H:%M')} UTC; `uptime`: {uptime()}. {load_note()}.")
    write_section("cli-batch", body)
    print(body)


if __name__ == "__main__":
    main()
