"""Answers from a span model: batches of windows -> start/end logits -> the best span per question.

A span model is any module called as ``model(inputs) -> (start_logits, end_logits)``, each (B, T),
with an ``encoder`` attribute (the QA task's ``TaskModel``). Predictions run in eval mode under
``torch.inference_mode``; the caller's train/eval mode is restored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
from torch import nn

from vizcore.errors import VizError
from vizcore.finetune.qa import MAX_CONTEXT_CHARS, MAX_QUESTION_CHARS, Answer, QAExample
from vizcore.finetune.qa_metrics import answer_scores
from vizcore.finetune.qa_spans import (
    CLS,
    DOC_STRIDE,
    MAX_ANSWER_TOKENS,
    QAFeature,
    SpanChoice,
    answer_tokens,
    decode_example,
    encode_features,
    softmax,
)
from vizcore.finetune.tasks import collate, pad_id_of

BATCH = 32
ANSWER_POSITIONS = "answer_positions"  # an input the span model reads and the encoder never sees


def span_inputs(features: Sequence[QAFeature], pad_id: int, device: torch.device,
                encoder: nn.Module) -> dict[str, torch.Tensor]:
    """The encoder's inputs (ids, mask, segments when it takes them; (B, T) each, right-padded) and
    ``ANSWER_POSITIONS``, (B, T) bool: True at [CLS] and at the window's passage tokens, the only places
    an answer can start or end (the question, its [SEP], the last [SEP] and padding cannot)."""
    inputs = collate([list(f.input_ids) for f in features], pad_id, device, encoder,
                     [list(f.segments) for f in features])
    allowed = torch.zeros_like(inputs["attention_mask"], dtype=torch.bool)
    for row, feature in enumerate(features):
        allowed[row, CLS] = True
        allowed[row, feature.passage[0]: feature.passage[1] + 1] = True
    return {**inputs, ANSWER_POSITIONS: allowed}


def window_logits(model: nn.Module, tokenizer, features: Sequence[QAFeature]) -> list[tuple[np.ndarray, np.ndarray]]:
    """(start, end) logits of every window, each (T_w,) without padding."""
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    out = []
    with torch.inference_mode():
        for first in range(0, len(features), BATCH):
            chunk = features[first: first + BATCH]
            starts, ends = model(span_inputs(chunk, pad_id_of(tokenizer), device, model.encoder))  # (B, T) each
            for row, feature in enumerate(chunk):
                length = len(feature.input_ids)
                out.append((starts[row, :length].float().cpu().numpy(), ends[row, :length].float().cpu().numpy()))
    model.train(was_training)
    return out


def predict_spans(model: nn.Module, tokenizer, examples: Sequence[QAExample], max_length: int,
                  max_answer_tokens: int = MAX_ANSWER_TOKENS) -> list[tuple[SpanChoice, list[QAFeature], list]]:
    """Per example: the chosen span, its windows and their logits (a passage longer than ``max_length``
    is read in windows overlapping by up to ``DOC_STRIDE`` tokens)."""
    features = encode_features(tokenizer, examples, max_length, stride=DOC_STRIDE)
    logits = window_logits(model, tokenizer, features)
    grouped: list[list[int]] = [[] for _ in examples]
    for row, feature in enumerate(features):
        grouped[feature.example].append(row)
    results = []
    for rows in grouped:
        windows, scores = [features[r] for r in rows], [logits[r] for r in rows]
        choice = decode_example(windows, [s for s, _ in scores], [e for _, e in scores], max_answer_tokens)
        results.append((choice, windows, scores))
    return results


def predicted_answers(model: nn.Module, tokenizer, examples: Sequence[QAExample], max_length: int) -> list[str]:
    return [examples[i].context[choice.start_char: choice.end_char]
            for i, (choice, _, _) in enumerate(predict_spans(model, tokenizer, examples, max_length))]


def evaluate_answers(model: nn.Module, tokenizer, examples: Sequence[QAExample], max_length: int) -> dict[str, float]:
    """``{"token_f1", "exact_match"}``: SQuAD's metrics of the predicted spans, averaged over questions."""
    scores = answer_scores(predicted_answers(model, tokenizer, examples, max_length), examples)
    return {"token_f1": float(scores["token_f1"].mean()), "exact_match": float(scores["exact_match"].mean())}


@dataclass(frozen=True)
class QAReading:
    """One question read by the model, for the figures: the passage tokens of the window the answer came
    from, start and end probabilities over them (softmax over that window's passage tokens), the
    predicted span and, when the example has one inside the window, the gold span (token indices into
    ``tokens``; character offsets into ``context``)."""

    context: str
    question: str
    tokens: tuple[str, ...]  # (P,) passage tokens of the window
    offsets: tuple[tuple[int, int], ...]  # (P,) their characters in the context
    start_probs: np.ndarray  # (P,)
    end_probs: np.ndarray  # (P,)
    start: int
    end: int
    answer_chars: tuple[int, int]
    gold: tuple[int, int] | None
    gold_chars: tuple[int, int] | None
    windows: int  # how many windows the passage needed

    @property
    def answer(self) -> str:
        return self.context[self.answer_chars[0]: self.answer_chars[1]]

    @property
    def probability(self) -> float:
        """p_start(start) * p_end(end): the model's probability of the chosen span."""
        return float(self.start_probs[self.start] * self.end_probs[self.end])


def read_example(model: nn.Module, tokenizer, example: QAExample, max_length: int) -> QAReading:
    """The model's reading of one question (a gold answer, when given, is located in the window)."""
    choice, windows, logits = predict_spans(model, tokenizer, [example], max_length)[0]
    feature, (starts, ends) = windows[choice.window], logits[choice.window]
    first, last = feature.passage
    gold, gold_chars = None, None
    if example.answers:
        answer = example.answers[0]
        gold_chars = (answer.start, answer.end)
        start, end = answer_tokens(feature.offsets, feature.passage, answer.start, answer.end)
        gold = None if start == CLS else (start - first, end - first)
    tokens = tokenizer.convert_ids_to_tokens(list(feature.input_ids[first: last + 1]))
    return QAReading(example.context, example.question, tuple(tokens), feature.offsets[first: last + 1],
                     softmax(starts[first: last + 1]), softmax(ends[first: last + 1]), choice.start - first,
                     choice.end - first, (choice.start_char, choice.end_char), gold, gold_chars, len(windows))


def answer_question(model: nn.Module, tokenizer, context: str, question: str, max_length: int,
                    gold: str | None = None) -> QAReading:
    """Try-your-own: the model's answer to ``question`` about ``context`` (``gold``, if it occurs in the
    context, is marked too). VizError for empty or over-long text."""
    context, question = (context or "").strip(), (question or "").strip()
    if not context or not question:
        raise VizError("Type a passage and a question about it.")
    if len(context) > MAX_CONTEXT_CHARS or len(question) > MAX_QUESTION_CHARS:
        raise VizError(f"Keep the passage under {MAX_CONTEXT_CHARS:,} characters and the question under "
                       f"{MAX_QUESTION_CHARS}.")
    at = context.find(gold) if gold else -1
    answers = (Answer(gold, at),) if at >= 0 else ()
    return read_example(model, tokenizer, QAExample("yours", "", context, question, answers), max_length)
