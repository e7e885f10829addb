"""BERT's 80/10/10 masking rule shown on one sentence, and its rates measured over many draws.

``draw_masking`` applies ``vizcore.mlm.masking.mask_tokens`` (the very function training uses) to a
sentence with a seed and returns what happened to each token. ``measure_rates`` repeats it many
times in one batch and counts: the share of ordinary tokens selected (target 15 %) and, of the
selected ones, the shares turned into [MASK] (80 %), a random token (10 %) or left unchanged (10 %),
each with its binomial standard error so a reader can tell noise from a bug.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from transformers import PreTrainedTokenizerBase

from vizcore.errors import VizError
from vizcore.mlm.masking import KIND_NAMES, MASKED, RANDOM, UNCHANGED, MaskingRule, mask_tokens, ordinary_token_ids
from vizcore.model.run import check_text

MAX_TOKENS = 512
MAX_DRAWS = 20_000


@dataclass(frozen=True)
class MaskingDraw:
    """One application of the rule. T tokens, specials included."""

    seed: int
    tokens: list[str]  # the original tokens
    shown: list[str]  # what the model is given instead
    kinds: np.ndarray  # int [T]: vizcore.mlm.masking NOT_SELECTED / MASKED / RANDOM / UNCHANGED
    special: np.ndarray  # bool [T]
    mask_token: str = "[MASK]"  # as the model's tokenizer writes it (MPNet's is <mask>)

    @property
    def kind_names(self) -> list[str]:
        names = {**KIND_NAMES, MASKED: self.mask_token}
        return ["special (never selected)" if s else names[int(k)] for k, s in zip(self.kinds, self.special)]


@dataclass(frozen=True)
class MaskingRates:
    draws: int
    eligible: int  # ordinary-token positions over all draws
    selected: int
    masked: int
    randomised: int
    unchanged: int
    rule: MaskingRule
    mask_token: str = "[MASK]"  # as the model's tokenizer writes it (MPNet's is <mask>)

    def rows(self) -> list[dict]:
        """Measured share, target, standard error and counts, one row per quantity."""
        r = self.rule
        keep = round(1 - r.mask_fraction - r.random_fraction, 10)  # 0.1, not 0.09999999999999995
        spec = [("selected for prediction (of ordinary tokens)", self.selected, self.eligible, r.rate),
                (f"→ replaced by {self.mask_token} (of selected)", self.masked, self.selected, r.mask_fraction),
                ("→ replaced by a random token (of selected)", self.randomised, self.selected, r.random_fraction),
                ("→ left unchanged (of selected)", self.unchanged, self.selected, keep)]
        return [{"what": what, "measured": count / total if total else float("nan"), "target": target,
                 "std_error": float(np.sqrt(target * (1 - target) / total)) if total else float("nan"),
                 "count": count, "out_of": total} for what, count, total, target in spec]


def _encode(tokenizer: PreTrainedTokenizerBase, text: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(1, T) ids and special mask, truncated to MAX_TOKENS (the rule is per token, so a prefix shows it)."""
    check_text(text)
    if tokenizer.mask_token_id is None:
        raise VizError("This tokenizer has no mask token, so BERT's masking rule cannot be shown with it.")
    encoding = tokenizer(text, truncation=True, max_length=min(MAX_TOKENS, tokenizer.model_max_length),
                         return_special_tokens_mask=True, return_tensors="pt", verbose=False)
    # Typed special tokens ("[CLS]", "[MASK]") count as special too, as in Hugging Face's MLM collator.
    special = encoding["special_tokens_mask"].bool() | torch.isin(
        encoding["input_ids"], torch.tensor(tokenizer.all_special_ids))
    if bool(special.all()):
        raise VizError("The text produced no ordinary tokens: type some words.")
    return encoding["input_ids"], special


def draw_masking(tokenizer: PreTrainedTokenizerBase, text: str, seed: int,
                 replacement_ids: torch.Tensor | None = None, rule: MaskingRule = MaskingRule()) -> MaskingDraw:
    """Apply the rule once to ``text`` with ``seed``."""
    ids, special = _encode(tokenizer, text)
    replacement = ordinary_token_ids(tokenizer) if replacement_ids is None else replacement_ids
    generator = torch.Generator().manual_seed(int(seed))
    inputs, _, kinds = mask_tokens(ids, special, tokenizer.mask_token_id, replacement, generator, rule)
    return MaskingDraw(seed=int(seed), tokens=tokenizer.convert_ids_to_tokens(ids[0].tolist()),
                       shown=tokenizer.convert_ids_to_tokens(inputs[0].tolist()),
                       kinds=kinds[0].numpy(), special=special[0].numpy(), mask_token=str(tokenizer.mask_token))


def measure_rates(tokenizer: PreTrainedTokenizerBase, text: str, draws: int = 2000, seed: int = 0,
                  replacement_ids: torch.Tensor | None = None, rule: MaskingRule = MaskingRule()) -> MaskingRates:
    """Apply the rule ``draws`` times (one batch) and count what happened to the ordinary tokens."""
    if not 1 <= draws <= MAX_DRAWS:
        raise VizError(f"The number of draws must be between 1 and {MAX_DRAWS:,}, not {draws:,}.")
    ids, special = _encode(tokenizer, text)
    replacement = ordinary_token_ids(tokenizer) if replacement_ids is None else replacement_ids
    generator = torch.Generator().manual_seed(int(seed))
    batch, special_batch = ids.expand(draws, -1), special.expand(draws, -1)  # (draws, T)
    _, _, kinds = mask_tokens(batch, special_batch, tokenizer.mask_token_id, replacement, generator, rule)
    counted = kinds[~special_batch]
    return MaskingRates(draws=draws, eligible=int(counted.numel()), selected=int((counted != 0).sum()),
                        masked=int((counted == MASKED).sum()), randomised=int((counted == RANDOM).sum()),
                        unchanged=int((counted == UNCHANGED).sum()), rule=rule,
                        mask_token=str(tokenizer.mask_token))
