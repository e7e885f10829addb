"""Attention extraction vs a plain transformers forward, and bertviz's head_view HTML, at n = 16/128/512.

Run: ``.venv/bin/python -m bench.attention`` (``make bench``). Writes its section of docs/BENCHMARKS.md;
``--base`` measures the installed base-size all-mpnet-base-v2 (12 x 12) instead, in a section of its own.
(a) ratio = our ``extract_attention`` (tokenise, truncate-check, forward, numpy) ÷ a plain
    ``model(**tokenizer(...), output_attentions=True)``; same model, same text, same process.
(b) bertviz ``head_view(..., html_action="return")``: HTML bytes and build time for the same input.
"""

from __future__ import annotations

import time

import torch

from bench.report import machine, markdown_table, timed_pair, uptime, write_section
from vizcore.attention.extract import extract_attention
from vizcore.model.catalog import BASE_MODEL
from vizcore.model.loading import DEFAULT_MODEL, load_model

SIZES = (16, 128, 512)
REPEATS = 15


def text_of_length(tokenizer, n: int) -> str:
    """A natural-ish text that tokenises to exactly n tokens with [CLS] and [SEP]."""
    words = ("the animal did not cross the street because it was too tired and the road was wide "
             "while a small cat sat on the warm mat near the door ").split()
    ids = tokenizer(" ".join(words * (n // len(words) + 2)), add_special_tokens=False)["input_ids"][: n - 2]
    return tokenizer.decode(ids)


def plain_forward(loaded, text: str):
    inputs = loaded.tokenizer(text, return_tensors="pt", truncation=True, max_length=512)
    with torch.inference_mode():
        return loaded.model(**inputs, output_attentions=True).attentions


def bertviz_html(loaded, text: str) -> str:
    from bertviz import head_view

    inputs = loaded.tokenizer(text, return_tensors="pt")
    tokens = loaded.tokenizer.convert_ids_to_tokens(inputs["input_ids"][0])
    attentions = plain_forward(loaded, text)
    return head_view(attentions, tokens, html_action="return").data


def forward_rows(loaded):
    """For each size: (the text, [tokens, plain ms, ours ms, ratio]), the two timed taking turns."""
    for n in SIZES:
        text = text_of_length(loaded.tokenizer, n)
        assert len(extract_attention(loaded, text).tokens) == n
        ours, plain = timed_pair(lambda text=text: extract_attention(loaded, text),
                                 lambda text=text: plain_forward(loaded, text), REPEATS)
        yield text, [n, f"{plain * 1000:.1f}", f"{ours * 1000:.1f}", f"{ours / plain:.2f}"]


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", action="store_true", help=f"measure {BASE_MODEL} (installed), no bertviz")
    if parser.parse_args().base:
        return main_base()
    loaded = load_model(DEFAULT_MODEL, device="cpu")
    rows = []
    for text, row in forward_rows(loaded):
        start = time.perf_counter()
        html = bertviz_html(loaded, text)
        build = time.perf_counter() - start
        rows.append([*row, f"{len(html.encode()) / 1e6:.2f} MB", f"{build:.2f}"])
        print(rows[-1], flush=True)
    table = markdown_table(
        ["tokens", "plain forward (ms)", "extract_attention (ms)", "ratio ours/plain",
         "bertviz head_view HTML", "bertviz build (s)"],
        rows,
    )
    body = (
        "## Attention extraction (bench/attention.py)\n\n"
        f"Model {DEFAULT_MODEL} (6 layers x 12 heads), CPU; {machine()}. Best of {REPEATS} runs each after "
        "a warm-up, the two taking turns so that other load on the machine falls on both alike. "
        "`extract_attention` is the one forward core (`vizcore.model.run`) with attention only: it also asks "
        "the tokenizer for offsets and special-token masks, "
        "re-tokenises only when the input is over the model's maximum (to report truncation), and "
        "returns one float32 numpy array `[layer, head, query, key]` that the layers wrote into (vizcore-eager, "
        "`vizcore/model/sink.py`: stacking per-layer tensors cost 60 ms at 512 tokens); the plain forward is the "
        "same model called directly (transformers' eager code) and returns a tuple of torch tensors. "
        "bertviz's head view embeds every weight of every layer and head in "
        "its HTML, so its size grows with layers x heads x n².\n\n" + table
    )
    print(write_section("attention", body))


def main_base() -> None:
    """The forward ratio on the base-size MPNet: its relative bias goes through the same core."""
    before = uptime()
    loaded = load_model(BASE_MODEL, device="cpu")
    rows = []
    for _, row in forward_rows(loaded):
        rows.append(row)
        print(row, flush=True)
    table = markdown_table(["tokens", "plain forward (ms)", "extract_attention (ms)", "ratio ours/plain"], rows)
    body = (
        "## Attention extraction, base size: all-mpnet-base-v2 (bench/attention.py --base)\n\n"
        f"Model {BASE_MODEL} (MPNet, 12 layers x 12 heads, hidden 768, relative position bias), CPU; {machine()}. "
        f"Best of {REPEATS} runs each after a warm-up, taking turns, as in the section above. MPNet's attention "
        "is transformers' own code (not the attention interface the vizcore-eager sink replaces), so "
        "`extract_attention` stacks the per-layer tensors it returns.\n\n"
        f"`uptime` before: `{before}`; after: `{uptime()}` (2 cores, shared with other engineers' work: "
        "wall times are upper bounds, the ratio is the figure to read).\n\n" + table
    )
    print(write_section("attention-base", body))


if __name__ == "__main__":
    main()
