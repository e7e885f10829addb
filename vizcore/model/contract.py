"""The one data contract, checked at the boundary: attention is ``[layer, head, query, key]``.

Each check raises a VizError that says what was received and how to turn it into the contract,
in the spirit of bertviz's ``format_attention``.
"""

from __future__ import annotations

import numpy as np

from vizcore.errors import VizError

ROW_SUM_TOLERANCE = 1e-3


def check_attention(attention: object, num_tokens: int | None = None, rows_sum_to_one: bool = False) -> np.ndarray:
    """Return ``attention`` as a float array ``[layer, head, query, key]`` or raise with a fix-it message."""
    if isinstance(attention, (tuple, list)):
        raise VizError("Attention came as a tuple of per-layer tensors (transformers' output.attentions): "
                       "stack them with torch.stack(output.attentions)[:, 0] to get [layer, head, query, key].")
    if not isinstance(attention, np.ndarray):
        kind = type(attention).__name__
        hint = " Call .detach().float().cpu().numpy() first." if kind == "Tensor" else ""
        raise VizError(f"Attention must be a numpy array [layer, head, query, key], not {kind}.{hint}")
    if attention.ndim != 4:
        hints = {2: "one head's [query, key] matrix: add the two axes with a[None, None]",
                 3: "[head, query, key] of one layer: add the layer axis with a[None]",
                 5: "a batch: pick one sequence, e.g. a[:, 0] for transformers' stacked (layer, batch, ...) output"}
        hint = hints.get(attention.ndim, "expected 4 axes")
        raise VizError(f"Attention has shape {attention.shape} ({attention.ndim} axes); the contract is "
                       f"[layer, head, query, key]. It looks like {hint}.")
    if not np.issubdtype(attention.dtype, np.floating):
        raise VizError(f"Attention must hold floats, not {attention.dtype}.")
    if num_tokens is not None and attention.shape[3] != num_tokens:
        raise VizError(f"Attention has {attention.shape[3]} keys but there are {num_tokens} tokens: "
                       "the weights and the tokens come from different inputs.")
    if rows_sum_to_one:
        sums = attention.sum(-1, dtype=np.float64)
        if not np.all(np.abs(sums - 1.0) < ROW_SUM_TOLERANCE):
            raise VizError("Attention rows must each sum to 1 (softmax over keys); these do not. "
                           "Was the array transposed ([layer, head, key, query]) or are these raw scores?")
    return attention


def check_layer_head(loaded, layer: int, head: int) -> None:
    """``layer`` and ``head`` (0-based) exist in ``loaded`` (a ``LoadedModel``); the message counts from 1."""
    if not 0 <= layer < loaded.num_layers:
        raise VizError(f"Layer {layer + 1} does not exist: '{loaded.name}' has layers 1 to {loaded.num_layers}.")
    if not 0 <= head < loaded.num_heads:
        raise VizError(f"Head {head + 1} does not exist: '{loaded.name}' has heads 1 to {loaded.num_heads}.")
