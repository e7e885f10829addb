"""Entity extraction from BIO tags and entity-level scores, against seqeval and a hand-computed example."""

from __future__ import annotations

import random

import pytest
from seqeval.metrics import classification_report
from seqeval.metrics.sequence_labeling import get_entities

from vizcore.finetune.entities import MICRO, Span, bio_entities, entity_scores, scores_table

TYPES = ("PER", "LOC", "ORG", "MISC")
TAGS = ("O", *[f"{p}-{t}" for t in TYPES for p in ("B", "I")])


def random_tags(rng: random.Random, n: int) -> list[str]:
    # O-heavy, with many I- tags after O or another type: the cases where the conll rule matters
    return [rng.choice(TAGS) if rng.random() < 0.6 else "O" for _ in range(n)]


def by_kind(scores) -> dict:
    return {s.kind: s for s in scores}


def test_spans_follow_the_conll_rule():
    tags = ["B-PER", "I-PER", "O", "I-LOC", "I-LOC", "I-ORG", "B-ORG", "I-ORG", "B-MISC"]
    assert bio_entities(tags) == [Span("PER", 0, 2), Span("LOC", 3, 5), Span("ORG", 5, 6), Span("ORG", 6, 8),
                                  Span("MISC", 8, 9)]
    assert bio_entities(["O", "O"]) == [] and bio_entities([]) == []


def test_spans_equal_seqevals_on_random_sequences():
    rng = random.Random(0)
    for _ in range(500):
        tags = random_tags(rng, rng.randint(1, 25))
        ours = [(s.kind, s.start, s.end - 1) for s in bio_entities(tags)]  # seqeval's end is inclusive
        assert ours == get_entities(tags), tags


def test_a_hand_computed_example():
    gold = [["B-PER", "I-PER", "O", "B-LOC", "O"], ["B-ORG", "I-ORG", "O", "B-LOC", "B-LOC"]]
    predicted = [["B-PER", "I-PER", "O", "B-ORG", "O"], ["B-ORG", "O", "O", "B-LOC", "I-LOC"]]
    # gold: PER(0,2) LOC(3) | ORG(0,2) LOC(3) LOC(4)      -> PER 1, LOC 3, ORG 1
    # pred: PER(0,2) ORG(3) | ORG(0) LOC(3,5)             -> PER 1, ORG 2, LOC 1; only PER is right
    scores = by_kind(entity_scores(gold, predicted))
    assert (scores["PER"].precision, scores["PER"].recall, scores["PER"].f1) == (1.0, 1.0, 1.0)
    assert (scores["LOC"].correct, scores["LOC"].predicted, scores["LOC"].support) == (0, 1, 3)
    assert scores["LOC"].f1 == 0.0
    assert (scores["ORG"].correct, scores["ORG"].predicted, scores["ORG"].support) == (0, 2, 1)
    micro = scores[MICRO]
    assert (micro.correct, micro.predicted, micro.support) == (1, 4, 5)
    assert micro.precision == pytest.approx(1 / 4) and micro.recall == pytest.approx(1 / 5)
    assert micro.f1 == pytest.approx(2 * 0.25 * 0.2 / 0.45)
    assert list(scores_table(entity_scores(gold, predicted))["type"]) == ["LOC", "ORG", "PER", MICRO]


def test_scores_equal_seqevals_on_random_sequences():
    rng = random.Random(1)
    for _ in range(60):
        lengths = [rng.randint(1, 20) for _ in range(rng.randint(1, 12))]
        gold = [random_tags(rng, n) for n in lengths]
        predicted = [random_tags(rng, n) if rng.random() < 0.7 else list(g) for n, g in zip(lengths, gold)]
        report = classification_report(gold, predicted, output_dict=True, zero_division=0)
        ours = by_kind(entity_scores(gold, predicted))
        for kind, row in report.items():
            if kind in ("macro avg", "weighted avg"):
                continue
            mine = ours[MICRO if kind == "micro avg" else kind]
            assert mine.precision == pytest.approx(row["precision"]), kind
            assert mine.recall == pytest.approx(row["recall"]), kind
            assert mine.f1 == pytest.approx(row["f1-score"]), kind
            assert mine.support == row["support"], kind


def test_nothing_predicted_scores_zero_not_nan():
    gold, predicted = [["B-PER", "O"]], [["O", "O"]]
    micro = by_kind(entity_scores(gold, predicted))[MICRO]
    assert (micro.precision, micro.recall, micro.f1, micro.support) == (0.0, 0.0, 0.0, 1)


def test_mismatched_lengths_are_refused():
    with pytest.raises(ValueError):
        entity_scores([["O"]], [["O", "O"]])
    with pytest.raises(ValueError):
        entity_scores([["O"]], [])
