"""The next-token distribution and how generation reshapes it: temperature, top-k, top-p, then a draw.

A causal LM's last position gives logits over the vocabulary. Generation turns them into a choice in
the order Hugging Face's ``generate`` applies its warpers (``TemperatureLogitsWarper`` ->
``TopKLogitsWarper`` -> ``TopPLogitsWarper``), so every number here equals transformers' (tested):

* first, the tokens generation never draws (``vizcore.decoder.vocabulary``: never-trained entries, and
  word-continuation pieces when only whole words are asked for) get logit -inf, as transformers'
  ``SuppressTokensLogitsProcessor`` does before the warpers, so ``plain`` already gives them 0;
* temperature T: logits / T (T < 1 sharpens, T > 1 flattens); T = 0 is greedy (the arg-max, no draw);
* top-k: keep the k most probable tokens (0 = no limit);
* top-p (nucleus): keep the most probable tokens whose cumulative probability first reaches p, as
  transformers cuts it (tokens whose cumulative probability from the least probable end is <= 1 - p
  go, at least one stays);
* the kept tokens' probabilities renormalised; a seeded ``torch.Generator`` draws one of them.

``Shaped`` keeps the plain distribution (T = 1, nothing cut) beside the shaped one, so a page can show
what each control did. Shapes: V = vocabulary. The page and the CLI accept the same values: the ranges
of ``vizcore.decoder.ranges`` (the page's sliders are drawn from them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from vizcore.decoder.ranges import TEMPERATURE, TOP_K, TOP_P
from vizcore.errors import VizError


@dataclass(frozen=True)
class Settings:
    temperature: float = 1.0  # 0 = greedy
    top_k: int = 0  # 0 = no limit
    top_p: float = 1.0  # 1 = no limit
    whole_words: bool = False  # never draw a token that continues the previous word (vizcore.decoder.vocabulary)

    def check(self, vocabulary: int | None = None) -> "Settings":
        if self.temperature not in TEMPERATURE:
            raise VizError(f"The temperature must be between {TEMPERATURE.low:g} (greedy) and {TEMPERATURE.high:g}, "
                           f"not {self.temperature}.")
        if self.top_k not in TOP_K or self.top_k != int(self.top_k):
            raise VizError(f"top-k must be a whole number from {TOP_K.low:g} (no limit) to {TOP_K.high:g}, "
                           f"not {self.top_k}.")
        if vocabulary is not None and self.top_k > vocabulary:
            raise VizError(f"top-k must be at most the vocabulary's {vocabulary:,} tokens, not {self.top_k}.")
        if self.top_p not in TOP_P:
            raise VizError(f"top-p must be between {TOP_P.low:g} and {TOP_P.high:g} (no limit), not {self.top_p}.")
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


def allowed_logits(logits: torch.Tensor, banned: torch.Tensor | None) -> torch.Tensor:
    """``logits`` [..., V] in float64 with the ``banned`` tokens (bool [V]) at -inf."""
    scores = logits.double()
    if banned is None:
        return scores
    if banned.shape[-1] != scores.shape[-1] or bool(banned.all()):
        raise VizError(f"The banned-token mask has {banned.shape[-1]:,} entries for {scores.shape[-1]:,} logits, "
                       "or bans every token: build it from this model (vizcore.decoder.vocabulary).")
    return scores.masked_fill(banned.to(scores.device), -torch.inf)


def shaped_logits(logits: torch.Tensor, settings: Settings, banned: torch.Tensor | None = None) -> torch.Tensor:
    """``logits`` [..., V] after the banned tokens (bool [V]), temperature, top-k and top-p, the removed ones
    at -inf (transformers' order); every leading row is shaped alike. Not for greedy (temperature 0)."""
    scores = allowed_logits(logits, banned) / settings.temperature
    if settings.top_k:
        kth = torch.topk(scores, settings.top_k).values[..., -1:]
        scores = scores.masked_fill(scores < kth, -torch.inf)
    if settings.top_p < 1.0:
        ascending, order = torch.sort(scores)
        cumulative = ascending.softmax(-1).cumsum(-1)
        remove = cumulative <= 1.0 - settings.top_p
        remove[..., -1] = False  # the most probable token always stays
        scores = scores.masked_fill(remove.scatter(-1, order, remove), -torch.inf)
    return scores


def shape(logits: torch.Tensor, settings: Settings, banned: torch.Tensor | None = None) -> Shaped:
    """The plain and the shaped next-token distribution of ``logits`` [V]; ``banned`` (bool [V]) get 0 in both."""
    settings.check(int(logits.shape[-1]))
    plain = allowed_logits(logits, banned).softmax(-1)
    if settings.greedy:
        shaped = torch.zeros_like(plain)
        shaped[int(plain.argmax())] = 1.0
    else:
        shaped = shaped_logits(logits, settings, banned).softmax(-1)
    return Shaped(plain=plain.cpu().numpy(), shaped=shaped.cpu().numpy(), kept=(shaped > 0).cpu().numpy())


def draw(shaped: Shaped, generator: torch.Generator | None = None) -> int:
    """The next token: the arg-max of a greedy (one-hot) distribution, else a draw from ``shaped``."""
    return draw_from(torch.as_tensor(shaped.shaped), generator)


def draw_from(probs: torch.Tensor, generator: torch.Generator | None = None) -> int:
    """A token from ``probs`` [V] (float64): see ``draw_rows``."""
    return draw_rows(probs[None], [0], [generator])[0]


def draw_rows(probs: torch.Tensor, which: list[int], generators: list[torch.Generator | None]) -> list[int]:
    """One token per draw ``i`` from the distribution ``probs[which[i]]`` ((K, V) float64) with its own
    ``generators[i]``: the only token kept, without touching the generator (greedy, top-k 1), else by the
    inverse of the cumulative distribution at one uniform number from the generator (``torch.multinomial``
    takes 2 ms for one draw from 30,000 tokens; this, a few microseconds once the sums are made)."""
    cumulative = probs.cumsum(-1)  # (K, V)
    kept = (probs > 0).sum(-1)
    tokens = []
    for row, generator in zip(which, generators):
        if int(kept[row]) == 1:
            tokens.append(int(probs[row].argmax()))
            continue
        uniform = torch.rand((), generator=generator, dtype=torch.float64)
        tokens.append(int(torch.searchsorted(cumulative[row], uniform * cumulative[row, -1], right=True)))
    return tokens
