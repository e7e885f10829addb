"""Which head a view opens on: one rule for every page, a function of the model's shape only."""

from __future__ import annotations


def default_head(num_layers: int, num_heads: int) -> tuple[int, int]:
    """(layer, head), 0-based, that every page opens on for a model of this shape: the middle layer (the lower
    of the two middles for an even count) and its first head.

    The middle, because the first layers' heads mostly spread out or look at the next or previous token and
    the last ones park on [SEP]; the heads that follow syntax sit in between (Clark et al. 2019). For the
    6-layer MiniLM that is layer 3 (1-based), for a 12-layer BERT or GPT-2 layer 6. ``num_heads`` is taken so
    the rule can change without touching its callers; every head of a layer is as good a start as another.
    """
    if num_layers < 1 or num_heads < 1:
        raise ValueError(f"a model has at least one layer and one head (got {num_layers} x {num_heads})")
    return (num_layers - 1) // 2, 0
