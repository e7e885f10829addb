"""Attention extraction: text (or a text pair) in, tokens and ``[layer, head, query, key]`` weights out.

Stages, as in Hugging Face pipelines: ``encode`` (validate, tokenise, truncate and say so) ->
``forward`` (the model only) -> ``AttentionResult`` (plain numpy, JSON-friendly via ``to_dict``).
"""

from __future__ import annotations

import inspect
import re
import unicodedata

import numpy as np
import torch
from transformers import BatchEncoding

from vizcore.attention_result import AttentionResult
from vizcore.errors import VizError
from vizcore.models import LoadedModel

# Longer texts are refused before tokenising (a paste of a whole book); anything the model cannot
# take in one pass is truncated to its maximum length and reported.
MAX_CHARS = 200_000
# Characters that can come from bytes of another encoding read with errors="surrogateescape"
# (a command line in a non-UTF-8 locale): tokenizers and JSON refuse them.
_SURROGATE = re.compile("[\ud800-\udfff]")


def is_blank(text: str | None) -> bool:
    """True when the text has nothing a tokenizer keeps: only spaces, invisible format characters
    (zero-width space, byte-order mark, joiners) and control characters."""
    return text is None or all(ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf") for ch in text)


def check_text(text: str | None, what: str = "text") -> str:
    if is_blank(text):
        raise VizError(f"The {what} is empty: type a sentence.")
    if len(text) > MAX_CHARS:
        raise VizError(f"The {what} has {len(text):,} characters; the limit is {MAX_CHARS:,}. Shorten it.")
    if bad := _SURROGATE.search(text):
        raise VizError(f"The {what} has an invalid character at position {bad.start() + 1:,} (bytes that are "
                       "not UTF-8?): retype it, or save it as UTF-8.")
    return text


def encode(loaded: LoadedModel, text: str, pair: str | None = None) -> tuple[BatchEncoding, int]:
    """Tokenise, truncating to the model's maximum. Returns the encoding and the untruncated length."""
    check_text(text)
    if is_blank(pair):
        pair = None
    if pair is not None:
        check_text(pair, "second sentence")

    def tokenise(truncation: bool) -> BatchEncoding:
        return loaded.tokenizer(
            text, pair, truncation="longest_first" if truncation else False, max_length=loaded.max_length,
            return_offsets_mapping=True, return_special_tokens_mask=True, return_tensors="pt", verbose=False,
        )

    encoding = tokenise(truncation=False)  # one pass in the common case; a second only when too long
    full_length = int(encoding["input_ids"].shape[1])
    if full_length > loaded.max_length:
        encoding = tokenise(truncation=True)
    if encoding["input_ids"].shape[1] == 0:
        raise VizError("The text produced no tokens for this model: try other words.")
    return encoding, full_length


def segment_ids(encoding: BatchEncoding) -> np.ndarray:
    """0 for segment A, 1 for B; special tokens belong to the segment they close (or open, at the start)."""
    if "token_type_ids" in encoding:
        return encoding["token_type_ids"][0].numpy().astype(np.int64)
    ids, current = [], 0
    for sequence in encoding.sequence_ids(0):
        current = sequence if sequence is not None else current
        ids.append(current)
    return np.asarray(ids, dtype=np.int64)


def model_inputs(loaded: LoadedModel, encoding: BatchEncoding) -> dict[str, torch.Tensor]:
    """The tensors the model's forward accepts (DistilBERT and GPT-2 take no token_type_ids, etc.)."""
    accepted = inspect.signature(loaded.model.forward).parameters
    names = ("input_ids", "attention_mask", "token_type_ids")
    return {n: encoding[n].to(loaded.device) for n in names if n in encoding and n in accepted}


def forward_attention(loaded: LoadedModel, inputs: dict[str, torch.Tensor]) -> np.ndarray:
    """Run the model once. Returns float32 ``[layer, head, query, key]``."""
    with torch.inference_mode():
        output = loaded.model(**inputs, output_attentions=True)
    if not output.attentions or output.attentions[0] is None:
        raise VizError(f"'{loaded.name}' returned no attention weights (it needs eager attention).")
    stacked = torch.stack([layer[0] for layer in output.attentions])  # (L, H, T, T)
    return stacked.float().cpu().numpy()


def extract_attention(loaded: LoadedModel, text: str, pair: str | None = None) -> AttentionResult:
    """Tokens, offsets, specials, segments and attention for ``text`` (and ``pair``)."""
    encoding, full_length = encode(loaded, text, pair)
    attention = forward_attention(loaded, model_inputs(loaded, encoding))
    num_tokens = int(encoding["input_ids"].shape[1])
    return AttentionResult(
        model=loaded.name,
        text=text,
        pair=None if is_blank(pair) else pair,
        tokens=loaded.tokenizer.convert_ids_to_tokens(encoding["input_ids"][0].tolist()),
        offsets=[(int(a), int(b)) for a, b in encoding["offset_mapping"][0].tolist()],
        special_mask=encoding["special_tokens_mask"][0].numpy().astype(bool),
        segment_ids=segment_ids(encoding),
        attention=attention,
        truncated=full_length > num_tokens,
        num_input_tokens=full_length,
    )
