"""transformers' own logits processors, the reference the decoder's sampling is checked against."""

from __future__ import annotations

import numpy as np
import torch
from transformers.generation.logits_process import (
    SuppressTokensLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from vizcore.decoder.sampling import Settings


def transformers_probabilities(logits: torch.Tensor, settings: Settings,
                               banned: torch.Tensor | None = None) -> np.ndarray:
    """transformers' own warpers (and, with ``banned``, its SuppressTokensLogitsProcessor) on one row of logits."""
    scores = logits[None].double()
    if banned is not None:
        scores = SuppressTokensLogitsProcessor(torch.nonzero(banned).flatten().tolist())(None, scores)
    warpers = [TemperatureLogitsWarper(settings.temperature)]
    if settings.top_k:
        warpers.append(TopKLogitsWarper(settings.top_k))
    if settings.top_p < 1:
        warpers.append(TopPLogitsWarper(settings.top_p))
    for warper in warpers:
        scores = warper(None, scores)
    return scores.softmax(-1)[0].numpy()
