"""What the Why? methods explain: the masked-LM's answer at a ``[MASK]``, as logits of one position.

Every method of this topic asks the same question of different inputs (ablated, patched, scaled,
interpolated): how much does the model believe word ``w`` at the mask? ``masked_input`` prepares the
sentence once (the model's own mask token, the mask's position), ``word_id`` checks that an answer
is one token, ``top_answer`` is the model's own answer (what the methods explain by default), and
``mask_logits`` runs a batch through the model with any hooks and returns the
logits at one position per row, the masked-LM head applied there only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

from vizcore.errors import VizError
from vizcore.mlm.fill_mask import logits_at, preprocess
from vizcore.model.loading import LoadedModel
from vizcore.model.run import Hook, model_inputs


@dataclass(frozen=True)
class MaskedInput:
    """One sentence with at least one mask, ready for the model (a batch of one)."""

    text: str  # as typed
    tokens: list[str]
    inputs: dict[str, torch.Tensor]  # model inputs, each (1, T)
    masks: list[int]  # token positions of the masks

    @property
    def num_tokens(self) -> int:
        return len(self.tokens)


def masked_input(loaded: LoadedModel, text: str) -> MaskedInput:
    """Tokenise ``text`` (typed ``[MASK]``/``<mask>`` become the model's mask token); VizError without a mask."""
    encoding, masks, _ = preprocess(loaded, text)
    ids = encoding["input_ids"][0]
    return MaskedInput(text=text, tokens=loaded.tokenizer.convert_ids_to_tokens(ids.tolist()),
                       inputs=model_inputs(loaded, encoding), masks=masks)


def word_id(loaded: LoadedModel, word: str, what: str = "answer") -> int:
    """The vocabulary id of ``word`` as the model would predict it at a mask (after a space for RoBERTa's
    byte-level BPE); VizError when the word is empty or not exactly one token."""
    word = (word or "").strip()
    if not word:
        raise VizError(f"The {what} is empty: type one word.")
    tokenizer = loaded.tokenizer
    spaced = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(" " + word)) if "Ġ" in "".join(
        tokenizer.tokenize(" a")) else None
    ids = spaced or tokenizer(word, add_special_tokens=False)["input_ids"]
    if len(ids) != 1 or ids[0] == tokenizer.unk_token_id:
        pieces = " + ".join(tokenizer.convert_ids_to_tokens(ids)) or "nothing"
        raise VizError(f"The {what} '{word}' is not one token for {loaded.name} (it becomes {pieces}): "
                       "choose a word the model has as a single token.")
    return int(ids[0])


def top_answer(loaded: LoadedModel, text: str) -> str | None:
    """The model's own answer at the first mask of ``text``: its most probable token there, as the word that
    ``word_id`` reads back to that token; None when there is no such word (a ``##`` piece, say)."""
    masked = masked_input(loaded, text)
    best = int(mask_logits(loaded, masked.inputs, masked.masks[0])[0].argmax())
    word = loaded.tokenizer.decode([best]).strip()
    try:
        return word if word_id(loaded, word) == best else None
    except VizError:
        return None


def mask_logits(loaded: LoadedModel, inputs: dict[str, torch.Tensor], positions: Sequence[int] | int,
                specs: Sequence[Hook] = (), grad: bool = False) -> torch.Tensor:
    """Vocabulary logits ``(B, V)`` at ``positions`` (one per row, or one for all rows) of a batch run
    with ``specs``; with ``grad`` the graph is kept (gradients with respect to embeddings or head scales)."""
    rows = next(iter(inputs.values())).shape[0]
    index = torch.as_tensor([positions] * rows if isinstance(positions, int) else list(positions))
    return logits_at(loaded, inputs, torch.arange(rows), index, specs, grad=grad)[0]
