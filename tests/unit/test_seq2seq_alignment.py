"""Alignment accuracy on hand-made attention arrays, counted by hand."""

import numpy as np
import pytest

from vizcore.errors import VizError
from vizcore.seq2seq.alignment import aligned, alignment_accuracy, best_head, year_aligned
from vizcore.seq2seq.dates import gold_alignment, parse_date

# the twenty first of march nineteen ninety nine
#  0    1     2    3   4      5       6     7
GOLD = gold_alignment(parse_date("the twenty first of march nineteen ninety nine"))


def looking_at(columns: list[int]) -> np.ndarray:
    """[10, 8] attention rows: row j puts 0.6 on columns[j], 0.4 / 7 on every other word."""
    rows = np.full((10, 8), 0.4 / 7)
    rows[np.arange(10), columns] = 0.6
    return rows


def test_a_head_on_the_gold_words_scores_one_and_a_head_on_the_month_scores_the_month_share():
    perfect = looking_at([5, 6, 7, 7, 0, 4, 4, 3, 1, 2])  # the dashes (rows 4 and 7) look anywhere
    month = looking_at([4] * 10)
    cross = np.stack([np.stack([perfect, month])])  # [L=1, H=2, 10, 8]
    np.testing.assert_allclose(alignment_accuracy(cross, GOLD), [[1.0, 2 / 8]])
    np.testing.assert_array_equal(year_aligned(cross, GOLD), [[True, False]])


def test_one_year_digit_off_breaks_the_year_but_costs_one_eighth_of_the_accuracy():
    off = looking_at([5, 6, 4, 7, 0, 4, 4, 3, 1, 2])  # the third year digit looks at 'march'
    assert alignment_accuracy(off[None, None], GOLD)[0, 0] == pytest.approx(7 / 8)
    assert not year_aligned(off, GOLD)
    np.testing.assert_array_equal(aligned(off, GOLD), [True, True, False, True, False, True, True, False, True, True])


def test_a_batch_with_padding_and_broadcast_gold():
    cross = np.stack([looking_at([5, 6, 7, 7, 0, 4, 4, 3, 1, 2]), looking_at([0] * 10)])[:, None, None]
    assert year_aligned(cross, np.stack([GOLD, GOLD])[:, None, None]).ravel().tolist() == [True, False]


def test_shapes_that_do_not_match_are_refused_and_the_best_head_is_found():
    with pytest.raises(VizError, match="do not match the gold"):
        alignment_accuracy(np.zeros((1, 1, 10, 7)), GOLD)
    with pytest.raises(VizError, match="10 outputs of YYYY-MM-DD"):
        year_aligned(np.zeros((9, 8)), GOLD[:9])
    assert best_head(np.array([[0.2, 0.9], [0.95, np.nan]])) == (1, 0, 0.95)
    assert np.isnan(alignment_accuracy(np.zeros((1, 1, 10, 8)), np.zeros((10, 8), dtype=bool))).all()
