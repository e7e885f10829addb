"""Token classification (NER): a linear head on every token's hidden state -> a BIO tag per word.

Training: the loss is the cross-entropy over the pieces whose label is not -100, i.e. each word's
first piece (vizcore/finetune/tokens.py aligns the labels). Prediction: a word's tag is read at its
first piece; a word the tokenizer cut off (past ``max_length``) is predicted ``O``. Held-out figures:
entity-level precision, recall and F1 (micro over all types, and F1 per type) by the CoNLL rule
(vizcore/finetune/entities.py), and the share of words whose tag is right (``token_accuracy``).

Typed text is split into words as the held-out file is (``tokens.split_words``), tagged, and returned
as entity spans with character offsets, for colouring the text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch
from torch import nn

from vizcore.errors import VizError
from vizcore.finetune.entities import Span, bio_entities, entity_scores
from vizcore.finetune.tasks import Batch, Task, TaskModel, collate, hidden_size, pad_id_of, pad_targets, register
from vizcore.finetune.tokens import (
    IGNORE,
    TaggedSentences,
    align_labels,
    first_pieces,
    join_words,
    load_token_data,
    split_words,
)

MAX_TRY_CHARS = 2_000


class TokenTagger(TaskModel):
    """Encoder -> hidden (B, T, H) -> dropout -> linear -> tag logits (B, T, C) at every piece."""

    def __init__(self, encoder: nn.Module, num_tags: int, dropout: float = 0.1):
        super().__init__(encoder, nn.Linear(hidden_size(encoder), num_tags))
        self.dropout = nn.Dropout(dropout)

    def from_hidden(self, hidden: torch.Tensor, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.head(self.dropout(hidden))  # (B, T, C)


def encode_sentences(tokenizer, sentences: Sequence[Sequence[str]], max_length: int
                     ) -> tuple[list[list[int]], list[list[int | None]]]:
    """Piece ids with special tokens, truncated to ``max_length`` (or to the most the tokenizer's model reads,
    when that is less), and each piece's word (None for special tokens)."""
    if not sentences:
        return [], []
    encoded = tokenizer([list(s) for s in sentences], is_split_into_words=True, truncation=True,
                        max_length=min(max_length, tokenizer.model_max_length), verbose=False)
    return encoded["input_ids"], [encoded.word_ids(i) for i in range(len(sentences))]


def word_probabilities(model: TokenTagger, tokenizer, sentences: Sequence[Sequence[str]], max_length: int,
                       batch_size: int = 32) -> list[np.ndarray]:
    """Per sentence, (words, C) tag probabilities read at each word's first piece; a word cut off by
    truncation gets probability 1 for ``O`` (tag 0). ``model`` is used in eval mode (dropout off)."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    ids, word_ids = encode_sentences(tokenizer, sentences, max_length)
    pad, out = pad_id_of(tokenizer), []
    with torch.inference_mode():
        for start in range(0, len(ids), batch_size):
            inputs = collate(ids[start: start + batch_size], pad, device, model.encoder)
            probs = torch.softmax(model(inputs).float(), dim=-1).cpu().numpy()  # (B, T, C)
            for row, words in enumerate(word_ids[start: start + batch_size]):
                n = len(sentences[start + row])
                table = np.zeros((n, probs.shape[-1]), dtype=np.float32)
                table[:, 0] = 1.0
                for word, position in enumerate(first_pieces(words, n)):
                    if position is not None:
                        table[word] = probs[row, position]
                out.append(table)
    model.train(was_training)
    return out


def predict_tags(model: TokenTagger, tokenizer, sentences: Sequence[Sequence[str]], max_length: int,
                 tag_names: Sequence[str]) -> list[list[str]]:
    """The most probable tag of every word of every sentence."""
    return [[tag_names[i] for i in probs.argmax(1)]
            for probs in word_probabilities(model, tokenizer, sentences, max_length)]


def token_scores(gold: TaggedSentences, predicted: list[list[str]]) -> dict[str, float]:
    """Entity-level micro precision, recall, F1 (``entity_f1``), F1 per type (``f1_PER``, ...) and the share
    of words tagged right (``token_accuracy``)."""
    gold_tags = [gold.tag_strings(i) for i in range(len(gold))]
    scores = entity_scores(gold_tags, predicted)
    micro = scores[-1]
    by_type = {s.kind: s.f1 for s in scores[:-1]}
    words = sum(len(tags) for tags in gold_tags)
    right = sum(g == p for gs, ps in zip(gold_tags, predicted) for g, p in zip(gs, ps))
    return {"entity_f1": micro.f1, "precision": micro.precision, "recall": micro.recall,
            **{f"f1_{kind}": by_type.get(kind, 0.0) for kind in gold.types},
            "token_accuracy": right / words if words else float("nan")}


def example_records(split: TaggedSentences, predicted: list[list[str]]) -> list[dict]:
    """One row per sentence: its text, the gold and predicted entities as "words (TYPE)", those missed
    (gold, not predicted exactly), the wrong ones (predicted, not gold), the number of mistakes."""
    rows = []
    for i, tags in enumerate(predicted):
        words = split.words[i]
        gold, guessed = bio_entities(split.tag_strings(i)), bio_entities(tags)
        missed, wrong = [s for s in gold if s not in guessed], [s for s in guessed if s not in gold]
        rows.append({"sentence": join_words(words)[0], "gold": _describe(words, gold),
                     "predicted": _describe(words, guessed), "missed": _describe(words, missed),
                     "wrong": _describe(words, wrong), "mistakes": len(missed) + len(wrong)})
    return rows


def _describe(words: Sequence[str], spans: Sequence[Span]) -> str:
    return ", ".join(f"{join_words(words[s.start:s.end])[0]} ({s.kind})" for s in spans)


@dataclass(frozen=True)
class FoundEntity:
    """An entity found in typed text: ``text[start:end]``, its type and the mean probability of its tags."""

    kind: str
    text: str
    start: int
    end: int
    confidence: float


def predict_entities(model: TokenTagger, tokenizer, text: str, tag_names: Sequence[str], max_length: int
                     ) -> tuple[list[str], list[str], list[FoundEntity]]:
    """Words of ``text``, their predicted tags, and the entities as character spans of ``text``."""
    if len(text) > MAX_TRY_CHARS:
        raise VizError(f"The text is {len(text):,} characters; type at most {MAX_TRY_CHARS:,}.")
    words = split_words(text)
    if not words:
        return [], [], []
    probs = word_probabilities(model, tokenizer, [[w for w, _, _ in words]], max_length)[0]  # (W, C)
    tags = [tag_names[i] for i in probs.argmax(1)]
    found = [FoundEntity(span.kind, text[words[span.start][1]: words[span.end - 1][2]], words[span.start][1],
                         words[span.end - 1][2], float(probs[span.start: span.end].max(1).mean()))
             for span in bio_entities(tags)]
    return [w for w, _, _ in words], tags, found


class TokenTask(Task):
    """A BIO tag per word (named entities): ``TaggedData`` with silver training and hand-checked held-out
    sentences, or a CoNLL upload."""

    name = "token"
    title = "Token classification (named entities)"
    metric = "entity_f1"
    metric_label = "entity F1"
    batch_label = "accuracy of the labelled pieces"
    extra_metrics = {"token_accuracy": "word accuracy"}
    # The silver sentences are 29 pieces long on average, 77 at most (embedded tokenizer): 128 cuts none.
    # Full fine-tuning of the embedded MiniLM at lr 5e-5, batch 16: held-out entity F1 0.777 after 3 epochs,
    # 0.797 after 4, 0.816 after 5 (spaCy's own score there, the silver labels' ceiling): 5 reaches the goal.
    defaults = {"max_length": 128, "epochs": 5}

    def load_data(self, train: str, eval_path: str | None, seed: int, columns: dict[str, str | None]) -> Any:
        return load_token_data(train, eval_path)

    def build(self, encoder: nn.Module, data: Any, config: Any) -> TokenTagger:
        return TokenTagger(encoder, len(data.train.tag_names))

    def encode(self, tokenizer, split: TaggedSentences, max_length: int) -> list[dict]:
        ids, word_ids = encode_sentences(tokenizer, split.words, max_length)
        return [{"ids": i, "labels": align_labels(w, tags)} for i, w, tags in zip(ids, word_ids, split.tags)]

    def collate(self, features: list[dict], pad_id: int, device, encoder: nn.Module) -> Batch:
        inputs = collate([f["ids"] for f in features], pad_id, device, encoder)
        width = inputs["input_ids"].shape[1]
        return Batch(inputs, pad_targets([f["labels"] for f in features], width, IGNORE, device))

    def loss(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(outputs.flatten(0, 1), targets.flatten(), ignore_index=IGNORE)

    def batch_score(self, outputs: torch.Tensor, targets: torch.Tensor) -> float:
        labelled = targets != IGNORE
        return float((outputs.argmax(-1)[labelled] == targets[labelled]).float().mean())

    def evaluate(self, model: TokenTagger, tokenizer, split: TaggedSentences, max_length: int) -> dict:
        if not len(split):
            return {"entity_f1": float("nan"), "precision": float("nan"), "recall": float("nan"),
                    "token_accuracy": float("nan")}
        predicted = predict_tags(model, tokenizer, split.words, max_length, split.tag_names)
        return token_scores(split, predicted)

    def held_out_records(self, model: TokenTagger, tokenizer, split: TaggedSentences, max_length: int) -> list[dict]:
        """Per sentence: its words, gold and predicted BIO tags, and ``example_records``' entity summary."""
        predicted = predict_tags(model, tokenizer, split.words, max_length, split.tag_names)
        return [{"words": list(split.words[i]), "gold_tags": split.tag_strings(i), "predicted_tags": tags, **row}
                for i, (tags, row) in enumerate(zip(predicted, example_records(split, predicted)))]


TOKEN = register(TokenTask())
