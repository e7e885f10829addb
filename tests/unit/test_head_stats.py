"""Clark et al. per-head statistics against hand computations on small matrices."""

import numpy as np
import pytest

from vizcore.attention.head_stats import STATISTICS, head_statistics, statistics_table, token_classes

TOKENS = ["[CLS]", "hello", ",", "world", "[SEP]"]
SPECIAL = np.array([True, False, False, False, True])


def one_head(matrix):
    return np.asarray(matrix, dtype=np.float64)[None, None]


def test_token_classes_find_cls_sep_and_punctuation():
    classes = token_classes(TOKENS, SPECIAL)
    assert classes["cls"].tolist() == [True, False, False, False, False]
    assert classes["sep"].tolist() == [False, False, False, False, True]
    assert classes["punctuation"].tolist() == [False, False, True, False, False]


def test_identity_head_has_zero_entropy_and_all_mass_on_self():
    stats = head_statistics(one_head(np.eye(5)), TOKENS, SPECIAL)
    assert stats["entropy"][0, 0] == pytest.approx(0.0)
    assert stats["max_weight"][0, 0] == pytest.approx(1.0)
    assert stats["self"][0, 0] == pytest.approx(1.0)
    assert stats["previous"][0, 0] == stats["next"][0, 0] == 0.0
    assert stats["cls"][0, 0] == pytest.approx(1 / 5)  # only the [CLS] row itself
    assert stats["sep"][0, 0] == pytest.approx(1 / 5)
    assert stats["punctuation"][0, 0] == pytest.approx(1 / 5)


def test_uniform_head_has_log_n_entropy_and_even_masses():
    stats = head_statistics(one_head(np.full((5, 5), 0.2)), TOKENS, SPECIAL)
    assert stats["entropy"][0, 0] == pytest.approx(np.log(5))
    for name in ("max_weight", "cls", "sep", "punctuation", "self", "previous", "next"):
        assert stats[name][0, 0] == pytest.approx(0.2), name


def test_previous_token_head_and_a_hand_computed_mixed_head():
    previous = np.zeros((5, 5))
    previous[0, 0] = 1.0
    for q in range(1, 5):
        previous[q, q - 1] = 1.0
    stats = head_statistics(one_head(previous), TOKENS, SPECIAL)
    assert stats["previous"][0, 0] == pytest.approx(1.0)  # every query that has a previous token
    assert stats["cls"][0, 0] == pytest.approx(2 / 5)  # rows 0 and 1 put all weight on [CLS]

    mixed = np.array([[0.5, 0.5, 0, 0, 0],
                      [0.1, 0.2, 0.3, 0.4, 0],
                      [0, 0, 1, 0, 0],
                      [0.25, 0.25, 0.25, 0.25, 0],
                      [0, 0, 0, 0.5, 0.5]])
    stats = head_statistics(one_head(mixed), TOKENS, SPECIAL)
    entropies = [np.log(2), -sum(p * np.log(p) for p in (0.1, 0.2, 0.3, 0.4)), 0.0, np.log(4), np.log(2)]
    assert stats["entropy"][0, 0] == pytest.approx(np.mean(entropies))
    assert stats["max_weight"][0, 0] == pytest.approx(np.mean([0.5, 0.4, 1.0, 0.25, 0.5]))
    assert stats["cls"][0, 0] == pytest.approx(np.mean([0.5, 0.1, 0, 0.25, 0]))
    assert stats["sep"][0, 0] == pytest.approx(np.mean([0, 0, 0, 0, 0.5]))
    assert stats["punctuation"][0, 0] == pytest.approx(np.mean([0, 0.3, 1.0, 0.25, 0]))
    assert stats["self"][0, 0] == pytest.approx(np.mean([0.5, 0.2, 1.0, 0.25, 0.5]))
    assert stats["previous"][0, 0] == pytest.approx(np.mean([0.1, 0, 0.25, 0.5]))
    assert stats["next"][0, 0] == pytest.approx(np.mean([0.5, 0.3, 0, 0]))


def test_table_has_one_row_per_head_counted_from_one():
    rng = np.random.default_rng(0)
    a = rng.random((2, 3, 5, 5))
    a /= a.sum(-1, keepdims=True)
    stats = head_statistics(a, TOKENS, SPECIAL)
    assert set(stats) == set(STATISTICS) and stats["entropy"].shape == (2, 3)
    table = statistics_table(stats)
    assert len(table) == 6
    row = table[(table["layer"] == 2) & (table["head"] == 3)].iloc[0]
    assert row["mass on self"] == pytest.approx(np.diagonal(a[1, 2]).mean())
