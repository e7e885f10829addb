"""Held-out sentences for the masked-LM and their masking: the set head importance is measured on.

``SENTENCES`` were written for this page (everyday English, none taken from a corpus the shipped
masked-LM was trained on, none from the fill-mask probes). ``masked_batch`` masks them the same way
every time: about ``rate`` of the word pieces that hold a letter or digit in each sentence (at least
one; never a special token, never bare punctuation, which is too easy to guess to say much), chosen by
a generator seeded with ``seed`` and the sentence itself, so a sentence is masked the same way in any
batch. Every chosen piece becomes the mask token (no 80/10/10 mix: this is evaluation, not training).

The metric is the mean, over all masked positions of the set, of the log-probability the model gives
the original piece there; ``log_prob_sums`` gives its per-row parts for any hooked batch.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from vizcore.errors import VizError
from vizcore.mlm.fill_mask import logits_at
from vizcore.mlm.masking import IGNORE
from vizcore.model.loading import LoadedModel
from vizcore.model.run import Hook, check_text, model_inputs

DEFAULT_RATE = 0.15

SENTENCES: tuple[str, ...] = (
    "My sister always forgets where she left her glasses.",
    "We planted tomatoes along the fence behind the garage.",
    "The bus was late again, so I walked to work.",
    "He fixed the broken chair with some glue and a clamp.",
    "Our neighbours hold a small party every summer.",
    "The bakery on the corner sells bread until noon.",
    "She folded the towels and put them in the cupboard.",
    "I need to charge my phone before we leave tonight.",
    "The little boy hid behind the curtain during the game.",
    "They painted the kitchen a pale shade of yellow.",
    "Grandma keeps her old letters in a wooden box.",
    "The meeting ran long, and everyone missed lunch.",
    "Please wash your hands before you sit down to eat.",
    "A strong wind knocked over the bins last night.",
    "The library closes early on Sundays.",
    "We watched the boats come into the harbour at dusk.",
    "He likes his coffee strong and without sugar.",
    "The puppy chewed one of my new shoes.",
    "She practises the piano for an hour after school.",
    "Turn left at the bridge and the station is on your right.",
    "The soup needs a little more salt and pepper.",
    "Our flight was cancelled because of the fog.",
    "The students handed in their essays on Friday.",
    "I found a twenty dollar bill in my winter coat.",
    "The nurse checked his temperature twice that night.",
    "They argued about who should do the dishes.",
    "The river rose quickly after three days of rain.",
    "My uncle grows apples on a farm near the coast.",
    "She wrapped the present in bright blue paper.",
    "The shop gave me a refund for the broken lamp.",
    "We stayed up late talking about our favourite films.",
    "The cat sleeps on the warm windowsill every afternoon.",
    "He missed the last train and had to take a taxi.",
    "The doctor told her to rest and drink plenty of water.",
    "Our team lost the match by a single goal.",
    "The children built a snowman in the front yard.",
    "I borrowed a ladder to clean the gutters.",
    "The museum opens a new exhibition next month.",
    "She keeps a list of books she wants to read.",
    "The old clock in the hall stopped at midnight.",
    "We bought fresh fish at the market this morning.",
    "My brother is learning to drive this year.",
    "The printer ran out of ink in the middle of the report.",
    "A family of ducks crossed the road in front of us.",
    "He writes his shopping list on the back of an envelope.",
    "The hotel room had a view of the mountains.",
    "They moved to a smaller house after their children left.",
    "The teacher asked everyone to bring a pencil and a ruler.",
)


@dataclass(frozen=True)
class MaskedBatch:
    """Sentences masked for evaluation, right-padded to one width ``T``."""

    sentences: tuple[str, ...]
    inputs: dict[str, torch.Tensor]  # model inputs, each (N, T); masked positions hold the mask token
    labels: torch.Tensor  # (N, T): the original token id where masked, IGNORE elsewhere

    @property
    def lengths(self) -> np.ndarray:
        """Real (unpadded) tokens per sentence, [N]."""
        return self.inputs["attention_mask"].sum(1).cpu().numpy()

    @property
    def masked(self) -> int:
        return int((self.labels != IGNORE).sum())


def heldout_sentences(count: int | None = None) -> tuple[str, ...]:
    """The first ``count`` held-out sentences (all when None); VizError outside 1..len(SENTENCES)."""
    if count is None:
        return SENTENCES
    if not 1 <= count <= len(SENTENCES):
        raise VizError(f"Choose from 1 to {len(SENTENCES)} held-out sentences, not {count}.")
    return SENTENCES[:count]


def _chosen(candidates: list[int], rate: float, seed: int, sentence: str) -> list[int]:
    """About ``rate`` of ``candidates`` (at least one), the same for this sentence and seed in any batch."""
    rng = np.random.default_rng([seed, zlib.crc32(sentence.encode("utf-8"))])
    count = max(1, int(round(rate * len(candidates))))
    return sorted(rng.choice(candidates, size=count, replace=False).tolist())


def masked_batch(loaded: LoadedModel, sentences: Sequence[str], rate: float = DEFAULT_RATE,
                 seed: int = 0) -> MaskedBatch:
    """Tokenise ``sentences`` (padded, truncated to the model's maximum) and mask about ``rate`` of each
    one's word pieces deterministically (see the module docstring)."""
    sentences = tuple(sentences)
    if not sentences:
        raise VizError("There are no sentences to measure on: give at least one.")
    if not 0.0 < rate <= 1.0:
        raise VizError(f"The masking rate must be above 0 and at most 1, not {rate}.")
    tokenizer = loaded.tokenizer
    if tokenizer.mask_token_id is None:
        raise VizError(f"'{loaded.name}' has no mask token: choose a masked-LM (BERT, RoBERTa, DistilBERT).")
    for text in sentences:
        check_text(text, "sentence")
    encoding = tokenizer(list(sentences), padding=True, truncation=True, max_length=loaded.max_length,
                         return_special_tokens_mask=True, return_tensors="pt", verbose=False)
    ids, labels = encoding["input_ids"].clone(), torch.full_like(encoding["input_ids"], IGNORE)
    for row, text in enumerate(sentences):
        pieces = tokenizer.convert_ids_to_tokens(ids[row].tolist())
        candidates = [i for i, piece in enumerate(pieces) if not encoding["special_tokens_mask"][row, i]
                      and encoding["attention_mask"][row, i] and any(ch.isalnum() for ch in piece)]
        if not candidates:
            raise VizError(f"The sentence {text[:80]!r} has no word to mask: give it at least one word.")
        chosen = _chosen(candidates, rate, seed, text)
        labels[row, chosen] = ids[row, chosen]
        ids[row, chosen] = tokenizer.mask_token_id
    encoding["input_ids"] = ids
    return MaskedBatch(sentences=sentences, inputs=model_inputs(loaded, encoding), labels=labels.to(loaded.device))


def log_prob_sums(loaded: LoadedModel, inputs: dict[str, torch.Tensor], labels: torch.Tensor,
                  specs: Sequence[Hook] = (), grad: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Per row of a batch run with ``specs``: the sum of log p(original piece) over its masked positions,
    and their number; both ``(B,)``. The masked-LM head is applied at the masked positions only."""
    rows, cols = torch.nonzero(labels != IGNORE, as_tuple=True)  # (M,) each
    logits, _ = logits_at(loaded, inputs, rows, cols, specs, grad=grad)  # (M, V)
    with torch.enable_grad() if grad else torch.inference_mode():
        picked = torch.log_softmax(logits.float(), dim=-1).gather(1, labels[rows, cols, None])[:, 0]  # (M,)
        sums = torch.zeros(labels.shape[0], dtype=picked.dtype, device=picked.device).index_add(0, rows, picked)
    counts = (labels != IGNORE).sum(1).to(sums.dtype)
    return sums, counts
