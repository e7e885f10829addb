"""Entities from BIO tags and entity-level precision, recall and F1, as the CoNLL evaluation counts them.

An entity is a maximal run of tags of one type. It starts at a ``B-`` tag, or at an ``I-`` tag whose
type differs from the tag before it (an ``I-`` after ``O`` or after another type): the rule of the
CoNLL-2000/2003 ``conlleval`` script and of seqeval's default mode, so a file in IOB1 or a model that
starts an entity with ``I-`` is scored as those tools score it. A predicted entity counts as correct
only when its type, first word and last word all equal a gold entity's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import pandas as pd

MICRO = "all types (micro)"


@dataclass(frozen=True)
class Span:
    """One entity: words ``start`` to ``end - 1`` of a sentence, of type ``kind`` (e.g. "PER")."""

    kind: str
    start: int
    end: int  # exclusive


def bio_entities(tags: Sequence[str]) -> list[Span]:
    """The entities of one sentence's tags (strings such as "B-PER", "I-PER", "O"), in order."""
    spans: list[Span] = []
    kind: str | None = None
    start = 0
    for i, tag in enumerate([*tags, "O"]):
        prefix, _, name = tag.partition("-")
        begins = prefix == "B" or (prefix == "I" and name != kind)
        if kind is not None and (prefix not in ("B", "I") or begins):
            spans.append(Span(kind, start, i))
            kind = None
        if begins:
            kind, start = name, i
    return spans


@dataclass(frozen=True)
class EntityScore:
    """Entity-level figures of one type (or of all types, micro-averaged: ``kind == MICRO``)."""

    kind: str
    precision: float  # correct / predicted; 0 when nothing was predicted (seqeval's zero_division=0)
    recall: float  # correct / support; 0 when the gold data has none
    f1: float
    support: int  # gold entities
    predicted: int
    correct: int


def _score(kind: str, correct: int, predicted: int, support: int) -> EntityScore:
    precision = correct / predicted if predicted else 0.0
    recall = correct / support if support else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return EntityScore(kind, precision, recall, f1, support, predicted, correct)


def entity_scores(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> list[EntityScore]:
    """Per-type scores (types sorted by name, every type seen in gold or predictions), then the micro row.

    ``gold[i]`` and ``predicted[i]`` are the tags of sentence ``i`` and must be equally long.
    """
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold sentences but {len(predicted)} predicted")
    gold_set: set[tuple[int, Span]] = set()
    pred_set: set[tuple[int, Span]] = set()
    for i, (g, p) in enumerate(zip(gold, predicted)):
        if len(g) != len(p):
            raise ValueError(f"sentence {i}: {len(g)} gold tags but {len(p)} predicted")
        gold_set.update((i, span) for span in bio_entities(g))
        pred_set.update((i, span) for span in bio_entities(p))
    correct = gold_set & pred_set
    kinds = sorted({span.kind for _, span in gold_set | pred_set})
    rows = [_score(k, sum(s.kind == k for _, s in correct), sum(s.kind == k for _, s in pred_set),
                   sum(s.kind == k for _, s in gold_set)) for k in kinds]
    return [*rows, _score(MICRO, len(correct), len(pred_set), len(gold_set))]


def scores_table(scores: Sequence[EntityScore]) -> pd.DataFrame:
    """One row per type and the micro row: type, precision, recall, F1, support, predicted, correct."""
    return pd.DataFrame([{"type": s.kind, "precision": s.precision, "recall": s.recall, "F1": s.f1,
                          "support": s.support, "predicted": s.predicted, "correct": s.correct}
                         for s in scores])
