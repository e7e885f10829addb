"""BERT's masking rule (Devlin et al. 2019, section 3.1): pick 15 % of the tokens to predict; of
those, 80 % become [MASK], 10 % a random token, 10 % stay unchanged.

Selection is one independent draw per token (as transformers' DataCollatorForLanguageModeling does),
so a short sentence may get no selected token at all, and the rates hold on average. Special tokens
([CLS], [SEP], padding) are never selected. Random replacements are drawn uniformly from the
vocabulary's ordinary tokens (``replacement_ids``), never from special or unused entries.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

IGNORE = -100  # label of a position that is not predicted (cross_entropy's ignore_index)
NOT_SELECTED, MASKED, RANDOM, UNCHANGED = 0, 1, 2, 3
KIND_NAMES = {NOT_SELECTED: "not selected", MASKED: "[MASK]", RANDOM: "random token", UNCHANGED: "unchanged"}


@dataclass(frozen=True)
class MaskingRule:
    rate: float = 0.15
    mask_fraction: float = 0.8
    random_fraction: float = 0.1

    def __post_init__(self) -> None:
        if not 0 < self.rate <= 1 or self.mask_fraction < 0 or self.random_fraction < 0 \
                or self.mask_fraction + self.random_fraction > 1:
            raise ValueError("rate must be in (0, 1] and mask + random fractions at most 1")


def mask_tokens(
    input_ids: torch.Tensor,
    special: torch.Tensor,
    mask_id: int,
    replacement_ids: torch.Tensor,
    generator: torch.Generator,
    rule: MaskingRule = MaskingRule(),
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Apply the rule to a batch.

    input_ids, special: (B, T) long / bool. Returns (inputs, labels, kinds), each (B, T):
    inputs with the replacements made, labels = original id at selected positions else IGNORE,
    kinds = NOT_SELECTED / MASKED / RANDOM / UNCHANGED per position.
    """
    device = input_ids.device
    draw = torch.rand(input_ids.shape, generator=generator, device=device)
    selected = (draw < rule.rate) & ~special
    # A second draw decides what happens to a selected token: [0, .8) mask, [.8, .9) random, rest kept.
    fate = torch.rand(input_ids.shape, generator=generator, device=device)
    masked = selected & (fate < rule.mask_fraction)
    randomised = selected & ~masked & (fate < rule.mask_fraction + rule.random_fraction)
    picks = torch.randint(len(replacement_ids), input_ids.shape, generator=generator, device=device)
    inputs = input_ids.clone()
    inputs[masked] = mask_id
    inputs[randomised] = replacement_ids.to(device)[picks[randomised]]
    labels = torch.where(selected, input_ids, torch.full_like(input_ids, IGNORE))
    kinds = torch.full_like(input_ids, NOT_SELECTED)
    kinds[selected] = UNCHANGED
    kinds[masked] = MASKED
    kinds[randomised] = RANDOM
    return inputs, labels, kinds


def ordinary_token_ids(tokenizer) -> torch.Tensor:
    """Ids a random replacement may take: not special, not ``[unusedN]``, not padding."""
    special = set(tokenizer.all_special_ids)
    vocab = tokenizer.get_vocab()
    ids = [i for tok, i in vocab.items()
           if i not in special and not (tok.startswith("[") and tok.endswith("]"))
           and not (tok.startswith("<") and tok.endswith(">"))]
    return torch.tensor(sorted(ids), dtype=torch.long)
