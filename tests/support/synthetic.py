"""A synthetic Run (random attention rows, no model): for the renderer's tests and benchmarks.

Tokens include word pieces (``##``), punctuation, [CLS]/[SEP] and markup (``<img src=x onerror=...>``)
so that merging, hiding and "user text stays text" are all exercised.
"""

from __future__ import annotations

import numpy as np

from vizcore.model.record import Run

EVIL = "<img src=x onerror=alert(1)>"


def synthetic_run(layers: int = 3, heads: int = 4, pair: bool = True, seed: int = 0, words: int = 0) -> Run:
    """``[CLS] the play ##ful <img...> cat . [SEP] (it sat . [SEP])`` plus ``words`` filler tokens in A."""
    a = ["the", "play", "##ful", EVIL, "cat", "."] + ["word"] * words
    b = ["it", "sat", "."] if pair else []
    tokens, offsets, segments, special = ["[CLS]"], [(0, 0)], [0], [True]
    cursor = 0
    for token in a:
        glued = token.startswith("##")
        start = cursor if glued else cursor + 1
        end = start + len(token.removeprefix("##"))
        tokens.append(token)
        offsets.append((start, end))
        segments.append(0)
        special.append(False)
        cursor = end
    tokens.append("[SEP]"), offsets.append((0, 0)), segments.append(0), special.append(True)
    cursor = 0
    for token in b:
        tokens.append(token)
        offsets.append((cursor + 1, cursor + 1 + len(token)))
        cursor += 1 + len(token)
        segments.append(1)
        special.append(False)
    if pair:
        tokens.append("[SEP]"), offsets.append((0, 0)), segments.append(1), special.append(True)
    n = len(tokens)
    rng = np.random.default_rng(seed)
    logits = rng.normal(scale=2.0, size=(layers, heads, n, n))
    weights = np.exp(logits)
    attention = (weights / weights.sum(-1, keepdims=True)).astype(np.float32)
    return Run(model="synthetic", text=" ".join(a), pair=" ".join(b) if pair else None, tokens=tokens,
               offsets=offsets, special_mask=np.array(special), segment_ids=np.array(segments),
               attention=attention, truncated=False, num_input_tokens=n)
