"""Per-head summary statistics after Clark et al. 2019, "What does BERT look at?".

Every statistic is a mean over the query tokens of one input, per head, so each is ``[layer, head]``:

* ``entropy``: the entropy (nats) of a query's attention distribution, ``-sum_k p log p``;
  0 = all weight on one token, ``log n`` = spread evenly.
* ``max_weight``: the largest single weight in a query's row.
* ``cls``: weight on the opening special token (``[CLS]``, ``<s>``: a special token at position 0).
* ``sep``: weight on every other special token (``[SEP]``, ``</s>``).
* ``punctuation``: weight on ordinary tokens made only of punctuation or symbols (``.``, ``,``).
* ``self``, ``previous``, ``next``: weight on the query's own position, the one before, the one
  after (the mean is over the queries that have such a neighbour).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from vizcore.attention.aggregate import _is_punctuation

STATISTICS = ("entropy", "max_weight", "cls", "sep", "punctuation", "self", "previous", "next")
LABELS = {
    "entropy": "entropy (nats)",
    "max_weight": "mean max weight",
    "cls": "mass on [CLS]",
    "sep": "mass on [SEP]",
    "punctuation": "mass on punctuation",
    "self": "mass on self",
    "previous": "mass on previous",
    "next": "mass on next",
}


def token_classes(tokens: list[str], special_mask: np.ndarray) -> dict[str, np.ndarray]:
    """Boolean masks ``[T]`` for the opening special token, the other specials and punctuation."""
    special = np.asarray(special_mask, dtype=bool)
    positions = np.arange(len(tokens))
    cls = special & (positions == 0)
    sep = special & ~cls
    punctuation = np.array([not s and _is_punctuation(t) for t, s in zip(tokens, special)], dtype=bool)
    return {"cls": cls, "sep": sep, "punctuation": punctuation}


def head_statistics(attention: np.ndarray, tokens: list[str], special_mask: np.ndarray) -> dict[str, np.ndarray]:
    """Every statistic as a float64 ``[layer, head]`` array (see the module docstring)."""
    a = np.asarray(attention, dtype=np.float64)  # (L, H, T, T)
    n = a.shape[-1]
    classes = token_classes(tokens, special_mask)
    logs = np.log(np.where(a > 0, a, 1.0))
    stats = {
        "entropy": -(a * logs).sum(-1).mean(-1),
        "max_weight": a.max(-1).mean(-1),
        **{name: a[..., mask].sum(-1).mean(-1) for name, mask in classes.items()},
        "self": np.diagonal(a, axis1=-2, axis2=-1).mean(-1),
    }
    zeros = np.zeros(a.shape[:2])
    stats["previous"] = np.diagonal(a, offset=-1, axis1=-2, axis2=-1).mean(-1) if n > 1 else zeros
    stats["next"] = np.diagonal(a, offset=1, axis1=-2, axis2=-1).mean(-1) if n > 1 else zeros
    return {name: stats[name] for name in STATISTICS}


def statistics_table(stats: dict[str, np.ndarray]) -> pd.DataFrame:
    """One row per head (1-based layer and head, as the UI counts), one column per statistic."""
    layers, heads = stats["entropy"].shape
    layer_index, head_index = np.meshgrid(np.arange(layers), np.arange(heads), indexing="ij")
    table = pd.DataFrame({"layer": layer_index.ravel() + 1, "head": head_index.ravel() + 1})
    for name in STATISTICS:
        table[LABELS[name]] = stats[name].ravel()
    return table
