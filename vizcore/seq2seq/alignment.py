"""Does a cross-attention head line up with the known alignment? Measured, per head.

For an output character, a head "aligns" when the input word it attends to most (the arg-max of its
cross-attention row) is one of the words the character comes from (the gold alignment). Rows whose
gold is empty (the dashes, which come from no word) are not counted.

* ``alignment_accuracy``: per head, the share of counted characters that align (the page's number);
* ``year_aligned``: per head, whether all four year digits align (one case of the Done-when measure:
  a head that aligns the year's digits with the year words in at least 90 % of held-out cases).
"""

from __future__ import annotations

import numpy as np

from vizcore.errors import VizError
from vizcore.seq2seq.dates import ROLES

YEAR_ROWS = [j for j, role in enumerate(ROLES) if role == "year"]


def aligned(cross: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """cross [..., O, I], gold bool [..., O, I] (broadcastable to cross; [O, I] for one example, [B, 1, 1, O, I]
    for a batch) -> bool [..., O]: row j's most-attended input is gold for j."""
    if gold.ndim < 2 or cross.shape[-2:] != gold.shape[-2:]:
        raise VizError(f"Cross-attention rows and columns {cross.shape[-2:]} do not match the gold alignment "
                       f"{gold.shape[-2:]}: both are [output, input].")
    top = cross.argmax(-1)  # [..., O]
    return np.take_along_axis(np.broadcast_to(gold, cross.shape), top[..., None], axis=-1)[..., 0]


def alignment_accuracy(cross: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """cross [L, H, O, I], gold [O, I] -> float [L, H]: share of rows with some gold (not the dashes) that align.
    NaN if no row has gold."""
    rows = gold.any(-1)  # [O]
    if not rows.any():
        return np.full(cross.shape[:-2], np.nan)
    return aligned(cross, gold)[..., rows].mean(-1)


def year_aligned(cross: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """cross [..., 10, I], gold [..., 10, I] of "YYYY-MM-DD" -> bool [...]: all four year digits align."""
    if gold.ndim < 2 or gold.shape[-2] != len(ROLES):
        raise VizError(f"The year rows need the 10 outputs of YYYY-MM-DD; the gold has shape {gold.shape}.")
    return aligned(cross, gold)[..., YEAR_ROWS].all(-1)


def best_head(rates: np.ndarray) -> tuple[int, int, float]:
    """The (layer, head) with the highest rate in ``rates`` [L, H] (0-based) and that rate."""
    layer, head = np.unravel_index(int(np.nanargmax(rates)), rates.shape)
    return int(layer), int(head), float(rates[layer, head])
