"""Attention as files: CSV (long format) and JSON for one head or all heads.

CSV columns, one row per weight: ``layer,head,query_index,query_token,key_index,key_token,weight``
(layer and head 1-based as in the UI, token indices 0-based positions in the input).

JSON for one head: ``{"model", "text", "pair", "tokens", "layer", "head", "shape": "[query][key]",
"attention": [[...]]}``; for all heads the same with ``"num_layers"``, ``"num_heads"``,
``"shape": "[layer][head][query][key]"`` and ``attention`` nested that way. Weights are rounded to
8 decimals (error <= 5e-9).

All-heads files grow with layers x heads x n^2 (128 tokens on 12 x 12 heads is 2.4 million rows),
so they are limited to ``ALL_HEADS_MAX_TOKENS`` tokens.
"""

from __future__ import annotations

import csv
import io
import json

import numpy as np

from vizcore.errors import VizError
from vizcore.model.record import Run

ALL_HEADS_MAX_TOKENS = 128
CSV_HEADER = ["layer", "head", "query_index", "query_token", "key_index", "key_token", "weight"]
DECIMALS = 8


def _check_all_heads(result: Run) -> None:
    if len(result.tokens) > ALL_HEADS_MAX_TOKENS:
        raise VizError(f"All-heads exports are limited to {ALL_HEADS_MAX_TOKENS} tokens (this input has "
                       f"{len(result.tokens)}; the file would hold {result.num_layers * result.num_heads} x "
                       f"{len(result.tokens)}² weights). Export one head, or shorten the text.")


def _write_rows(writer, result: Run, layer: int, head: int) -> None:
    matrix = np.round(result.attention[layer, head].astype(np.float64), DECIMALS)
    for q, query_token in enumerate(result.tokens):
        for k, key_token in enumerate(result.tokens):
            writer.writerow([layer + 1, head + 1, q, query_token, k, key_token, repr(float(matrix[q, k]))])


def attention_csv(result: Run, layer: int | None = None, head: int | None = None) -> str:
    """CSV of one head (``layer``, ``head`` 0-based) or, with both None, of every head."""
    if layer is None or head is None:
        _check_all_heads(result)
        pairs = [(l, h) for l in range(result.num_layers) for h in range(result.num_heads)]
    else:
        pairs = [(layer, head)]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_HEADER)
    for l, h in pairs:
        _write_rows(writer, result, l, h)
    return buffer.getvalue()


def attention_json(result: Run, layer: int | None = None, head: int | None = None) -> str:
    """JSON of one head (``[query][key]``) or, with both None, of every head (``[layer][head][query][key]``)."""
    data = {"model": result.model, "text": result.text, "pair": result.pair, "tokens": list(result.tokens),
            "segment_ids": result.segment_ids.astype(int).tolist(), "truncated": result.truncated}
    if layer is None or head is None:
        _check_all_heads(result)
        data |= {"num_layers": result.num_layers, "num_heads": result.num_heads,
                 "shape": "[layer][head][query][key]", "attention": result.attention}
    else:
        data |= {"layer": layer + 1, "head": head + 1, "shape": "[query][key]",
                 "attention": result.attention[layer, head]}
    data["attention"] = np.round(data["attention"].astype(np.float64), DECIMALS).tolist()
    return json.dumps(data, ensure_ascii=False)
