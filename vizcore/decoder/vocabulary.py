"""Which vocabulary entries generation may draw: never the ones training never taught, and, when asked,
only tokens that start a word.

A vocabulary holds entries a model never saw as a next token. BERT's has 994 ``[unusedN]`` slots (free
rows kept for users' own words; pre-training never produced them, so their logits are noise that a high
temperature turns into draws), ``[PAD]``, ``[CLS]``, ``[MASK]`` and ``[UNK]``; RoBERTa's ``madeupwordN``
pad its table; a model's output layer may have rows past the tokenizer's last entry (padded to a
multiple of 64), which decode to nothing. ``banned_tokens`` marks all of them, from the tokenizer and the
model's output layer, so that decoding sets their logits to -inf before any softmax: the bars, the draws,
greedy and beam search all agree that they cannot come next. The stop tokens (``stop_ids``: the
end-of-sequence token, or ``[SEP]`` for a BERT turned decoder, which training ended every text with) are
legitimate next tokens and stay, even when a tokenizer reuses one as ``[UNK]`` or ``<|endoftext|>`` as
padding. GPT-2's vocabulary has no unused entries: only ids past the tokenizer, if any, are banned.

Whole words only (``Banned.mask(whole_words=True)``) also removes every token that continues the word
before it: WordPiece's ``##`` pieces; byte-level BPE tokens (GPT-2, RoBERTa) whose text begins with a
letter or digit, no space before it (read through the byte alphabet: ``Ċ`` is a newline, not a letter);
SentencePiece pieces that begin with a letter or digit but not with ``▁``. Then each drawn token begins a new word or is
punctuation, so "the" + "##written" -> "thewritten" cannot happen; the price is that a word the
vocabulary has only in pieces (windowsill = window + ##sill) cannot be written whole, and a plural or an
ending (cat + ##s) not at all. Shapes: V = the model's output size (logits per position).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch

from vizcore.model.loading import LoadedModel

UNUSED = re.compile(r"^(\[unused\d+\]|<unused\d+>|madeupword\d+)$")
SCHEMES = ("pieces", "bytes", "marks")  # WordPiece's ##, byte-level BPE's Ġ, SentencePiece's ▁


def byte_alphabet() -> dict[str, int]:
    """Byte-level BPE's stand-in character for each byte (GPT-2's ``bytes_to_unicode``), as char -> byte:
    printable bytes stand for themselves, the others (space, newline, ...) for characters from U+0100 on."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    others = [b for b in range(256) if b not in printable]
    return {**{chr(b): b for b in printable}, **{chr(256 + n): b for n, b in enumerate(others)}}


BYTES = byte_alphabet()


@dataclass(frozen=True)
class Banned:
    """Tokens generation may not draw, bool [V] each (True = removed)."""

    never: torch.Tensor  # never-trained: special tokens (not the stop ones), unused slots, rows past the tokenizer
    continuation: torch.Tensor  # tokens that continue the previous token's word (removed for whole words only)
    reasons: tuple[tuple[str, int], ...]  # (what, how many) of ``never``, for the page and the docs

    def mask(self, whole_words: bool = False) -> torch.Tensor:
        """bool [V]: the tokens whose logits go to -inf."""
        return self.never | self.continuation if whole_words else self.never

    def describe(self) -> str:
        """One phrase: "4 special tokens ([PAD], [UNK], [CLS], [MASK]) and 994 unused entries ([unused0]…)"."""
        parts = [f"{count:,} {what}" for what, count in self.reasons if count]
        return " and ".join([", ".join(parts[:-1]), parts[-1]] if len(parts) > 1 else parts) or "no token"


def stop_ids(tokenizer) -> set[int]:
    """Tokens that end a generation: the end-of-sequence token, and [SEP] for BERT-style decoders."""
    return {i for i in (tokenizer.eos_token_id, tokenizer.sep_token_id) if i is not None}


def output_size(loaded: LoadedModel) -> int:
    """V: the number of logits the model gives per position (its output layer's rows)."""
    head = loaded.model.get_output_embeddings()
    return int(head.weight.shape[0]) if head is not None else int(loaded.model.config.vocab_size)


def continues_word(token: str | None, scheme: str) -> bool:
    """Whether a vocabulary entry continues the word before it, in its tokenizer's ``scheme`` (``SCHEMES``)."""
    if not token:
        return False
    if scheme == "pieces":
        return token.startswith("##") and len(token) > 2
    if scheme == "bytes":
        if any(char not in BYTES for char in token):  # an added token, not one of the byte alphabet
            return False
        text = bytes(BYTES[char] for char in token).decode("utf-8", errors="ignore")
        return bool(text) and text[0].isalnum()
    return token[0].isalnum() and not token.startswith("▁")


def word_scheme(tokens: list[str | None]) -> str | None:
    """How a vocabulary marks word boundaries (``SCHEMES``), None when it does not."""
    for scheme, mark in zip(SCHEMES, ("##", "Ġ", "▁")):
        if any(t is not None and t.startswith(mark) for t in tokens):
            return scheme
    return None


def _flags(size: int, ids) -> torch.Tensor:
    flags = torch.zeros(size, dtype=torch.bool)
    flags[torch.tensor([i for i in ids if 0 <= i < size], dtype=torch.long)] = True
    return flags


def banned_tokens(loaded: LoadedModel) -> Banned:
    """The never-drawn tokens of ``loaded`` and its word-continuation pieces."""
    tokenizer, size = loaded.tokenizer, output_size(loaded)
    stop = stop_ids(tokenizer)
    known = min(size, len(tokenizer))
    tokens = tokenizer.convert_ids_to_tokens(list(range(known)))
    special = sorted(set(tokenizer.all_special_ids) - stop)
    unused = [i for i, t in enumerate(tokens) if t is not None and UNUSED.match(t)]
    config = getattr(loaded.model, "generation_config", None)
    suppressed = sorted(set(getattr(config, "suppress_tokens", None) or ()) - stop)
    never = _flags(size, [*special, *unused, *suppressed, *range(known, size)])
    scheme = word_scheme(tokens)
    continuation = _flags(size, [i for i, t in enumerate(tokens) if scheme and continues_word(t, scheme)])
    continuation &= ~(never | _flags(size, stop))
    names, first = ", ".join(tokenizer.convert_ids_to_tokens(special)), tokens[unused[0]] if unused else ""
    reasons = ((f"special token{'s' if len(special) != 1 else ''} ({names})", len(special)),
               (f"unused entr{'ies' if len(unused) != 1 else 'y'} ({first}…)", len(unused)),
               ("tokens the model's generation config suppresses", len(suppressed)),
               ("output rows past the tokenizer's last entry", size - known))
    return Banned(never=never, continuation=continuation, reasons=reasons)
