"""The next-token distribution and how generation reshapes it: temperature, top-k, top-p, then a draw.

A causal LM's last position gives logits over the vocabulary. Generation turns them into a choice in
the order Hugging Face's ``generate`` applies its warpers (``TemperatureLogitsWarper`` ->
``TopKLogitsWarper`` -> ``TopPLogitsWarper``), so every number here equals transformers' (tested):

* temperature T: logits / T (T < 1 sharpens, T > 1 flattens); T = 0 is greedy (the arg-max, no draw);
* top-k: keep the k most probable tokens (0 = no limit);
* top-p (nucleus): keep the most probable tokens whose cumulative probability first reaches p, as
  transformers cuts it (tokens whose cumulative probability from the least probable end is <= 1 - p
  go, at least one stays);
* the kept tokens' probabilities renormalised; a seeded ``torch.Generator`` draws one of them.

``Shaped`` keeps the plain distribution (T = 1, nothing cut) beside the shaped one, so a page can show
what each control did. Shapes: V = vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from vizcore.errors import VizError

MAX_TEMPERATURE = 100.0


@dataclass(frozen=True)
class Settings:
    temperature: float = 1.0  # 0 = greedy
    top_k: int = 0  # 0 = no limit
    top_p: float = 1.0  # 1 = no limit

    def check(self, vocabulary: int | None = None) -> "Settings":
        if not 0.0 <= self.temperature <= MAX_TEMPERATURE or np.isnan(self.temperature):
            raise VizError(f"The temperature must be between 0 (greedy) and {MAX_TEMPERATURE:g}, "
                           f"not {self.temperature}.")
        if self.top_k < 0 or (vocabulary is not None and self.top_k > vocabulary):
            raise VizError(f"top-k must be between 0 (no limit) and the vocabulary's {vocabulary or 'size'}, "
                           f"not {self.top_k}.")
        if not 0.0 < self.top_p <= 1.0:
            raise VizError(f"top-p must be above 0 and at most 1 (no limit), not {self.top_p}.")
        return self

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0


@dataclass(frozen=True)
class Shaped:
    """One step's distributions, float64 [V]: ``plain`` = softmax(logits); ``shaped`` = after temperature,
    top-k and top-p, renormalised over ``kept`` (zero elsewhere; one-hot at the arg-max when greedy)."""

    plain: np.ndarray
    shaped: np.ndarray
    kept: np.ndarray  # bool [V]

    def top(self, count: int, which: str = "shaped") -> list[tuple[int, float]]:
        """The ``count`` most probable (token id, probability) pairs of one distribution, best first."""
        values = self.shaped if which == "shaped" else self.plain
        order = np.argsort(-values, kind="stable")[:count]
        return [(int(i), float(values[i])) for i in order]


def shaped_logits(logits: torch.Tensor, settings: Settings) -> torch.Tensor:
    """``logits`` [V] after temperature, top-k and top-p, the removed ones at -inf (transformers' order)."""
    scores = logits.double() / settings.temperature
    if settings.top_k:
        kth = torch.topk(scores, settings.top_k).values[-1]
        scores = scores.masked_fill(scores < kth, -torch.inf)
    if settings.top_p < 1.0:
        ascending, order = torch.sort(scores)
        cumulative = ascending.softmax(-1).cumsum(-1)
        remove = cumulative <= 1.0 - settings.top_p
        remove[-1] = False  # the most probable token always stays
        scores = scores.masked_fill(remove.scatter(0, order, remove), -torch.inf)
    return scores


def shape(logits: torch.Tensor, settings: Settings) -> Shaped:
    """The plain and the shaped next-token distribution of ``logits`` [V]."""
    settings.check(int(logits.shape[-1]))
    plain = logits.double().softmax(-1)
    if settings.greedy:
        shaped = torch.zeros_like(plain)
        shaped[int(plain.argmax())] = 1.0
    else:
        shaped = shaped_logits(logits, settings).softmax(-1)
    return Shaped(plain=plain.cpu().numpy(), shaped=shaped.cpu().numpy(), kept=(shaped > 0).cpu().numpy())


def draw(shaped: Shaped, generator: torch.Generator | None = None) -> int:
    """The next token: the arg-max of a greedy (one-hot) distribution, else a draw from ``shaped``."""
    probs = torch.as_tensor(shaped.shaped)
    if int((probs > 0).sum()) == 1:
        return int(probs.argmax())
    return int(torch.multinomial(probs, 1, generator=generator))
