"""Fill-mask cost: ours (predictions + every layer's lens + attention) vs transformers' pipeline, n = 16/128/512.

Run: ``.venv/bin/python -m bench.fill_mask``. Writes its section of docs/BENCHMARKS.md.
Same model object for both (the built-in MLM, eager attention), one [MASK] in the middle of the text.
Also: iterative filling (one forward per mask) and the 80/10/10 rates over 2,000 draws.
Timing does not depend on the weights, so before the trained weights are exported the untrained
head is used (written to a temporary file).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from bench.report import machine, markdown_table, timed, write_section

SIZES = (16, 128, 512)
REPEATS = 7


def best_time(fn, repeats: int = REPEATS) -> float:
    """The fastest of ``repeats`` runs: on shared cores the minimum is the least disturbed by other work."""
    return timed(fn, repeats, pick=min)


def masked_text(tokenizer, n: int) -> str:
    """A text of exactly n tokens ([CLS] and [SEP] included) with one [MASK] in the middle."""
    words = ("the animal did not cross the street because it was too tired and the road was wide "
             "while a small cat sat on the warm mat near the door ").split()
    ids = tokenizer(" ".join(words * (n // len(words) + 2)), add_special_tokens=False)["input_ids"][: n - 2]
    ids[len(ids) // 2] = tokenizer.mask_token_id
    return tokenizer.decode(ids)


def weights_note() -> str:
    from vizcore.mlm.weights import DEFAULT_WEIGHTS, WEIGHTS_ENV

    if DEFAULT_WEIGHTS.is_file():
        return "the shipped weights"
    from tests.support.mlm_weights import make_mlm_weights

    path = make_mlm_weights(Path(tempfile.mkdtemp()) / "untrained.safetensors", seed=None)
    os.environ[WEIGHTS_ENV] = str(path)
    return "an untrained head (timing does not depend on the weights)"


def main() -> None:
    note = weights_note()
    from transformers import pipeline

    from vizcore.mlm.fill_mask import fill_iteratively, fill_mask
    from vizcore.mlm.masking_demo import measure_rates
    from vizcore.mlm.weights import MLM_MODEL
    from vizcore.model.loading import load_model

    loaded = load_model(MLM_MODEL, device="cpu", head="mlm")
    pipe = pipeline("fill-mask", model=loaded.model, tokenizer=loaded.tokenizer, device="cpu")
    rows = []
    for n in SIZES:
        text = masked_text(loaded.tokenizer, n)
        assert len(fill_mask(loaded, text).tokens) == n
        ours = best_time(lambda text=text: fill_mask(loaded, text))
        theirs = best_time(lambda text=text: pipe(text, top_k=5))
        rows.append([n, f"{theirs * 1000:.0f}", f"{ours * 1000:.0f}", f"{ours / theirs:.2f}"])
        print(rows[-1], flush=True)
    four = "The [MASK] sat on the [MASK] and the [MASK] slept by the [MASK]."
    one_pass = best_time(lambda: fill_mask(loaded, four))
    iterative = best_time(lambda: fill_iteratively(loaded, four))
    sentence = "The quick brown fox jumps over the lazy dog while the old cat sleeps in the warm sun."
    rates = best_time(lambda: measure_rates(loaded.tokenizer, sentence, draws=2000))
    table = markdown_table(["tokens", "transformers pipeline (ms)", "fill_mask with lens + attention (ms)",
                            "ratio ours/pipeline"], rows)
    body = (
        "## Fill-mask (bench/fill_mask.py)\n\n"
        f"Model {MLM_MODEL} (6 layers x 12 heads) with {note}, CPU; {machine()}. Fastest of {REPEATS} runs "
        "after a warm-up, one [MASK] in the middle; the same model object serves both. Ours also returns "
        "every layer's logit lens (the MLM head on 7 hidden states at the mask) and the mask's attention rows; "
        f"the pipeline returns the top 5 only; ours projects onto the vocabulary at the masks only. 1-minute load "
        f"average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (other work competed: compare "
        "ratios, not times).\n\n"
        f"{table}\n\n"
        f"Four masks (16 tokens): all at once {one_pass * 1000:.0f} ms; filled one at a time, most confident "
        f"first, {iterative * 1000:.0f} ms ({iterative / one_pass:.1f}x: one forward per mask). "
        f"80/10/10 rates over 2,000 draws of a 21-token sentence: {rates * 1000:.0f} ms."
    )
    print(write_section("fill-mask", body))


if __name__ == "__main__":
    main()
