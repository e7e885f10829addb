"""The Why? page's costs: an ablated forward vs a plain one, the patching sweep batched vs one run at a
time, and integrated gradients' steps batched vs one step per backward pass.

Run: ``.venv/bin/python -m bench.why``. Writes its section of docs/BENCHMARKS.md. Model: the shipped
masked-LM (the CLI's and the page's default), CPU. Each pair of timings takes turns (bench.report.timed_pair)
so that other load on the shared cores falls on both alike; the fastest run of each is kept.
"""

from __future__ import annotations

import functools
import os
import time

from bench.fill_mask import masked_text
from bench.report import machine, markdown_table, timed_pair, write_section

SIZES = (16, 128, 512)
REPEATS = 9
CLEAN = "John said that [MASK] was tired because he worked."  # 12 tokens with [CLS] and [SEP]
CORRUPT = "Mary said that [MASK] was tired because she worked."
ABLATED = [(0, 3), (2, 7), (5, 5)]  # three heads in three layers: three hooks fire


def ablation_rows(loaded) -> list[list[object]]:
    from vizcore.mlm.fill_mask import forward, preprocess
    from vizcore.model.run import intervention_hooks, model_inputs
    from vizcore.why.ablation import ablations, head_means

    means = head_means(loaded)
    rows = []
    for n in SIZES:
        encoding, masks, _ = preprocess(loaded, masked_text(loaded.tokenizer, n))
        inputs = model_inputs(loaded, encoding)
        for mode in ("zero", "mean"):
            specs = intervention_hooks(loaded, ablations(ABLATED, mode, means))
            plain, ablated = timed_pair(functools.partial(forward, loaded, inputs, masks),
                                        functools.partial(forward, loaded, inputs, masks, specs=specs), REPEATS)
            rows.append([n, mode, f"{plain * 1000:.1f}", f"{ablated * 1000:.1f}", f"{ablated / plain:.2f}"])
            print(rows[-1], flush=True)
    return rows


def patching_rows(loaded) -> list[list[object]]:
    from vizcore.why import patching

    tokens = len(loaded.tokenizer(CLEAN)["input_ids"])
    assert tokens == 12, tokens
    batched, single = timed_pair(
        functools.partial(patching.patch_sweep, loaded, CLEAN, CORRUPT, "he", "she"),
        functools.partial(patching.patch_sweep, loaded, CLEAN, CORRUPT, "he", "she", batch_rows=1), 3)
    runs = (loaded.num_layers + 1) * tokens + loaded.num_layers * loaded.num_heads
    return [[tokens, runs, f"{batched:.2f}", f"{single:.2f}", f"{single / batched:.1f}"]]


def integrated_gradients_rows(loaded) -> list[list[object]]:
    from vizcore.why import attribution as attr

    rows = []
    for text in (attr.EXAMPLES[0], attr.EXAMPLES[-1]):
        target = attr.answer_target(loaded, text)
        batched, single = timed_pair(lambda target=target: attr.integrated_gradients(target),
                                     lambda target=target: attr.integrated_gradients(target, internal_batch_size=1),
                                     3)
        rows.append([len(target.tokens), attr.DEFAULT_STEPS, attr.batch_rows(len(target.tokens), attr.DEFAULT_STEPS),
                     f"{batched * 1000:.0f}", f"{single * 1000:.0f}", f"{single / batched:.1f}"])
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    from vizcore.model.catalog import MLM_MODEL
    from vizcore.model.loading import load_model
    from vizcore.why.patching import BATCH_ROWS

    started = time.perf_counter()
    loaded = load_model(MLM_MODEL, device="cpu", head="mlm")
    ablation = markdown_table(["tokens", "ablation", "plain forward (ms)", "3 heads ablated (ms)",
                               "ratio ablated/plain"], ablation_rows(loaded))
    patch = markdown_table(["tokens", "patched runs", f"batched, {BATCH_ROWS} rows a pass (s)",
                            "one run at a time (s)", "speed-up"], patching_rows(loaded))
    integrated = markdown_table(["tokens", "steps", "path points per backward pass", "batched (ms)",
                                 "one point per pass (ms)", "speed-up"], integrated_gradients_rows(loaded))
    body = (
        "## Why? page: ablation, patching, integrated gradients (bench/why.py)\n\n"
        f"Model {MLM_MODEL} (6 layers x 12 heads), CPU; {machine()}. 1-minute load average at the end: "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {time.perf_counter() - started:.0f} s in all.\n\n"
        f"**Head ablation** (`vizcore/why/ablation.py`): the masked-LM's forward pass as the Fill-mask page runs "
        f"it, plain and with heads {', '.join(f'{l + 1}:{h + 1}' for l, h in ABLATED)} switched off by hooks at "
        f"W_O's input (zero, or the head's mean output); fastest of {REPEATS} runs each, taking turns. "
        "The issue's bound: ablated/plain <= 1.2.\n\n" + ablation + "\n\n"
        "**Activation patching** (`vizcore/why/patching.py`): the whole sweep of a 12-token pair (every hidden "
        "state x position and every head, plus the clean and corrupted baselines and the clean run's record), "
        "batched as the page runs it against one forward pass per patched run; fastest of 3 each. The issue's "
        "bound: a 12-token pair within 2 s.\n\n" + patch + "\n\n"
        "**Integrated gradients** (`vizcore/why/attribution.py`, Captum): the default 50 Gauss-Legendre steps "
        "with the path points in batched forward and backward passes (Captum's `internal_batch_size`, at most "
        "64 points a pass, fewer for long inputs) against one point per pass; fastest of 3 each.\n\n"
        + integrated + "\n"
    )
    print(write_section("why", body))


if __name__ == "__main__":
    main()
