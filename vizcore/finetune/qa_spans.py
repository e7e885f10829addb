"""Question answering's token side: features ([CLS] question [SEP] passage [SEP]) and span decoding.

Features. The question comes first and is never cut; only the passage is truncated. A training
example gives one feature whose targets are the token positions of the answer's first and last
characters; when truncation cut the answer off, both targets point at [CLS] (position 0), as in
BERT's SQuAD recipe, so the model is not taught a wrong span. For evaluation a passage longer than
the window is read in overlapping windows (``stride`` tokens shared by neighbours, Hugging Face's
doc-stride scheme), and the best span over all windows wins, so no part of a long passage is
unreadable.

Decoding. The answer is the span (i, j) of passage tokens with i <= j and j - i + 1 <= the maximum
answer length that maximises start_logit[i] + end_logit[j], the log of p_start(i) * p_end(j) up to
a constant: the whole i x j table at once (at most 512 x 512), not a Python loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from vizcore.errors import VizError
from vizcore.finetune.qa import QAExample

MAX_ANSWER_TOKENS = 30
DOC_STRIDE = 128  # tokens shared by neighbouring windows of a long passage (the HF / BERT recipe)
MIN_PASSAGE_TOKENS = 16  # a window must leave at least this much room for the passage
CLS = 0  # the position of [CLS] (BERT, RoBERTa's <s>, DistilBERT): where cut-off answers point
NO_OFFSET = (-1, -1)


@dataclass(frozen=True)
class QAFeature:
    """One window of one example: ids and segments (T,), passage tokens' character offsets, targets."""

    example: int  # index of the example in its list
    input_ids: tuple[int, ...]
    segments: tuple[int, ...]  # 0 for [CLS] question [SEP], 1 for passage [SEP] (BERT's token_type_ids)
    offsets: tuple[tuple[int, int], ...]  # character span in the context of each passage token, else NO_OFFSET
    passage: tuple[int, int]  # first and last token position of the passage in this window
    start: int  # answer's first token, CLS when cut off
    end: int

    @property
    def cut_off(self) -> bool:
        return self.start == CLS


def passage_mask(feature: QAFeature) -> np.ndarray:
    """(T,) bool: True on the window's passage tokens, the only places a span may start or end."""
    mask = np.zeros(len(feature.input_ids), dtype=bool)
    mask[feature.passage[0]: feature.passage[1] + 1] = True
    return mask


def answer_tokens(offsets: Sequence[tuple[int, int]], passage: tuple[int, int], start_char: int,
                  end_char: int) -> tuple[int, int]:
    """Token positions (first, last) covering characters [start_char, end_char) of the context, or
    (CLS, CLS) when the window's passage does not contain them all."""
    first, last = passage
    if start_char < offsets[first][0] or end_char > offsets[last][1]:
        return CLS, CLS
    start = next(i for i in range(first, last + 1) if offsets[i][1] > start_char)
    end = next(i for i in range(last, first - 1, -1) if offsets[i][0] < end_char)
    return start, end


def encode_features(tokenizer, examples: Sequence[QAExample], max_length: int,
                    stride: int | None = None) -> list[QAFeature]:
    """Features of ``examples``: one each (truncated passage) when ``stride`` is None, else every
    window of ``max_length`` tokens with ``stride`` tokens of overlap, for evaluation. ``max_length``
    is capped at the tokenizer's ``model_max_length`` (the model has no position embeddings beyond)."""
    limit = getattr(tokenizer, "model_max_length", None)
    if limit is not None and 0 < limit < 1_000_000:  # hub tokenizers without a limit say 1e30
        max_length = min(max_length, int(limit))
    if not getattr(tokenizer, "is_fast", False):
        raise VizError("Question answering needs a 'fast' tokenizer (it maps tokens back to characters); "
                       "this model's tokenizer is not one. Choose another model.")
    room = _passage_room(tokenizer, examples, max_length)
    if not examples:
        return []
    windows = stride is not None
    stride = min(stride, room // 2) if windows else None  # the tokenizer needs stride < the passage's room
    encoded = tokenizer([e.question for e in examples], [e.context for e in examples], truncation="only_second",
                        max_length=max_length, stride=stride or 0, return_overflowing_tokens=windows,
                        return_offsets_mapping=True, verbose=False)
    owners = encoded["overflow_to_sample_mapping"] if windows else range(len(examples))
    return [_feature(encoded, row, int(owner), examples[owner]) for row, owner in enumerate(owners)]


def _feature(encoded, row: int, owner: int, example: QAExample) -> QAFeature:
    sequence = encoded.sequence_ids(row)  # None for special tokens, 0 question, 1 passage
    inside = [i for i, s in enumerate(sequence) if s == 1]
    if not inside:
        raise VizError(f"The passage of question {example.question[:60]!r} has no tokens (only spaces or "
                       "invisible characters?). Give it a real passage.")
    passage = (inside[0], inside[-1])
    offsets = tuple(tuple(o) if s == 1 else NO_OFFSET for o, s in zip(encoded["offset_mapping"][row], sequence))
    start, end = CLS, CLS  # a question of your own has no gold answer
    if example.answers:
        answer = example.answers[0]
        start, end = answer_tokens(offsets, passage, answer.start, answer.end)
    segments = tuple(int(i >= passage[0]) for i in range(len(sequence)))
    return QAFeature(owner, tuple(encoded["input_ids"][row]), segments, offsets, passage, start, end)


def _passage_room(tokenizer, examples: Sequence[QAExample], max_length: int) -> int:
    """Tokens left for the passage beside the longest question, which is never truncated: VizError when
    fewer than ``MIN_PASSAGE_TOKENS``."""
    if not examples:
        return max_length
    lengths = [len(ids) for ids in tokenizer([e.question for e in examples], add_special_tokens=False,
                                             verbose=False)["input_ids"]]
    longest = int(np.argmax(lengths))
    room = max_length - tokenizer.num_special_tokens_to_add(pair=True) - lengths[longest]
    if room < MIN_PASSAGE_TOKENS:
        fit = max(room + lengths[longest] - MIN_PASSAGE_TOKENS, 0)
        raise VizError(f"The question {examples[longest].question[:60]!r} has {lengths[longest]} tokens; with a "
                       f"maximum length of {max_length} at most {fit} fit (the passage needs room too). "
                       "Shorten the question or raise the maximum length.")
    return room


# ---- decoding ---------------------------------------------------------------------------------------

def best_span(start_logits: np.ndarray, end_logits: np.ndarray, allowed: np.ndarray,
              max_answer_tokens: int = MAX_ANSWER_TOKENS) -> tuple[int, int, float]:
    """The best valid (start, end, start_logit + end_logit) of one window.

    ``start_logits``, ``end_logits``, ``allowed`` are (T,); valid means start <= end,
    end - start + 1 <= ``max_answer_tokens`` and both ends ``allowed`` (passage tokens). Ties go to
    the earliest start, then the earliest end. Raises ValueError when nothing is allowed.
    """
    start_logits, end_logits = np.asarray(start_logits, np.float64), np.asarray(end_logits, np.float64)
    allowed = np.asarray(allowed, bool)
    if not allowed.any():
        raise ValueError("no position is allowed")
    positions = np.arange(len(allowed))
    width = positions[None, :] - positions[:, None]  # (T, T): end - start
    valid = (width >= 0) & (width < max_answer_tokens) & allowed[:, None] & allowed[None, :]
    scores = np.where(valid, start_logits[:, None] + end_logits[None, :], -np.inf)  # (T, T) [start, end]
    start, end = np.unravel_index(int(np.argmax(scores)), scores.shape)
    return int(start), int(end), float(scores[start, end])


@dataclass(frozen=True)
class SpanChoice:
    """The decoded answer of one example: which window, which tokens, which characters."""

    window: int  # index into the example's features
    start: int  # token positions in that window
    end: int
    score: float  # start_logit + end_logit
    start_char: int
    end_char: int


def decode_example(features: Sequence[QAFeature], start_logits: Sequence[np.ndarray],
                   end_logits: Sequence[np.ndarray], max_answer_tokens: int = MAX_ANSWER_TOKENS) -> SpanChoice:
    """The best span over one example's windows (logits per window, each (T_w,)), with its characters."""
    choices = []
    for window, (feature, starts, ends) in enumerate(zip(features, start_logits, end_logits)):
        start, end, score = best_span(starts, ends, passage_mask(feature), max_answer_tokens)
        choices.append(SpanChoice(window, start, end, score, feature.offsets[start][0], feature.offsets[end][1]))
    return max(choices, key=lambda choice: choice.score)  # max keeps the first window on a tie


def softmax(logits: np.ndarray) -> np.ndarray:
    shifted = np.asarray(logits, np.float64) - np.max(logits)
    weights = np.exp(shifted)
    return weights / weights.sum()
