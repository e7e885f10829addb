"""The date grammar: the issue's examples by hand, every generated date parses back, leap years, the
held-out set apart from training, the gold alignment of hand-written examples, the vocabularies."""

import calendar
import datetime as dt

import numpy as np
import pytest

from vizcore.errors import VizError
from vizcore.seq2seq.dates import (
    EXAMPLES,
    FORMS,
    HELDOUT_SIZE,
    INPUT_VOCAB,
    OUTPUT_VOCAB,
    gold_alignment,
    heldout_pairs,
    input_ids,
    is_reserved,
    parse_date,
    random_text,
    render,
    sample_pairs,
    tokenize,
    year_wordings,
)

# Written out by hand from the issue's description, not from the generator.
BY_HAND = [
    ("the twenty first of march nineteen ninety nine", "1999-03-21"),
    ("march twenty first, nineteen ninety nine", "1999-03-21"),
    ("march twenty first nineteen ninety nine", "1999-03-21"),
    ("the first of january nineteen hundred", "1900-01-01"),
    ("may fifth, nineteen oh five", "1905-05-05"),
    ("the twelfth of december nineteen ten", "1910-12-12"),
    ("the thirtieth of june two thousand", "2000-06-30"),
    ("the thirty first of july two thousand and seven", "2007-07-31"),
    ("july thirty first two thousand seven", "2007-07-31"),
    ("october twentieth two thousand and forty two", "2042-10-20"),
    ("october twentieth, two thousand forty two", "2042-10-20"),
    ("the second of august twenty forty two", "2042-08-02"),
    ("the nineteenth of april twenty ten", "2010-04-19"),
    ("the eleventh of november twenty ninety nine", "2099-11-11"),
    ("february twenty ninth, two thousand and twenty four", "2024-02-29"),
]


@pytest.mark.parametrize(("text", "iso"), BY_HAND)
def test_the_issues_examples_parse_to_their_iso_dates(text, iso):
    parsed = parse_date(text)
    assert (parsed.in_grammar, parsed.real, parsed.iso, parsed.reason) == (True, True, iso, "")


def test_every_generated_date_parses_back_to_its_iso_date_in_every_form():
    pairs = sample_pairs(3000, seed=7)
    assert all(parse_date(text).iso == iso for text, iso in pairs)
    assert {iso for _, iso in pairs} == {dt.date.fromisoformat(iso).isoformat() for _, iso in pairs}  # real ISO
    assert any(text.startswith("the ") for text, _ in pairs) and any("," in text for text, _ in pairs)
    assert sample_pairs(50, seed=7) == pairs[:50]  # seeded


def test_the_examples_show_both_forms_and_both_ways_out_and_random_texts_are_seeded_training_dates():
    parsed = [parse_date(text) for text in EXAMPLES]
    assert sum(p.real for p in parsed) == len(EXAMPLES) - 2
    assert parsed[-2].in_grammar and not parsed[-2].real and not parsed[-1].in_grammar
    assert random_text(5) == random_text(5) != random_text(6) and not is_reserved(parse_date(random_text(5)).iso)


def test_every_year_in_every_wording_and_every_day_of_a_leap_year_round_trip():
    for year in range(1900, 2100):
        for wording in range(len(year_wordings(year))):
            for form in FORMS:
                assert parse_date(render(dt.date(year, 6, 15), form, wording)).iso == f"{year}-06-15"
    day = dt.date(2024, 1, 1)
    while day.year == 2024:
        assert parse_date(render(day, "the-of")).iso == day.isoformat()
        day += dt.timedelta(days=1)


def test_year_wordings_follow_the_issue():
    assert year_wordings(1900) == ("nineteen hundred",)
    assert year_wordings(1905) == ("nineteen oh five",)
    assert year_wordings(2000) == ("two thousand",)
    assert set(year_wordings(2007)) == {"two thousand seven", "two thousand and seven"}
    assert set(year_wordings(2042)) == {"two thousand forty two", "two thousand and forty two", "twenty forty two"}
    assert "twenty oh seven" not in year_wordings(2007) and len(year_wordings(2009)) == 2


@pytest.mark.parametrize("year", range(1900, 2100))
def test_the_twenty_ninth_of_february_only_in_leap_years(year):
    parsed = parse_date(f"february twenty ninth {year_wordings(year)[0]}")
    assert parsed.in_grammar and parsed.real == calendar.isleap(year)
    if not parsed.real:
        assert f"{year} is not a leap year" in parsed.reason


def test_impossible_dates_are_in_the_grammar_but_not_real_with_a_reason():
    parsed = parse_date("the thirty first of february two thousand")
    assert parsed.in_grammar and not parsed.real and parsed.iso is None and parsed.outside_training
    assert "No such date: February has 29 days in 2000" in parsed.reason
    parsed = parse_date("april thirty first nineteen fifty")
    assert "April has 30 days" in parsed.reason and parsed.spans["year"] == (3, 5)


@pytest.mark.parametrize(("text", "why"), [
    ("march 21 1999", "'21' is not a word"),
    ("the twenty-first of march nineteen ninety nine", "'twenty-first' is not a word"),
    ("first of march nineteen ninety nine", "starts with 'the'"),
    ("the first march nineteen ninety nine", "needs 'of'"),
    ("march twenty nineteen ninety nine", "ordinal day"),
    ("the twenty of march nineteen ninety nine", "is not a day"),
    ("the first of of nineteen ninety nine", "not a month"),
    ("the first of march", "'(nothing)' is not a year"),
    ("the first of march twenty oh five", "'twenty oh five' is not a year"),
    ("the first of march nineteen hundred and five", "is not a year"),
    ("   ", "empty"),
])
def test_out_of_grammar_inputs_are_told_apart_from_impossible_dates(text, why):
    parsed = parse_date(text)
    assert not parsed.in_grammar and not parsed.real and parsed.outside_training
    assert why in parsed.reason


def test_tokens_are_lowercase_words_with_the_comma_apart_and_unknown_words_read_as_unk():
    assert tokenize(" March  first,nineteen hundred ") == ["march", "first", ",", "nineteen", "hundred"]
    assert parse_date("March First, Nineteen Hundred").iso == "1900-03-01"
    ids = input_ids(["march", "fourty", ","])
    assert [INPUT_VOCAB[i] for i in ids] == ["march", "<unk>", ","]
    assert set(OUTPUT_VOCAB) == set("0123456789-") | {"<s>", "</s>", "<pad>"}
    assert INPUT_VOCAB[:2] == ("<pad>", "<unk>") and len(set(INPUT_VOCAB)) == len(INPUT_VOCAB)


def test_the_held_out_dates_are_fixed_distinct_reserved_and_never_drawn_for_training():
    held = heldout_pairs()
    assert len(held) == HELDOUT_SIZE == len({iso for _, iso in held}) and held == heldout_pairs()
    assert all(is_reserved(iso) and parse_date(text).iso == iso for text, iso in held)
    training = sample_pairs(4000, seed=0)
    assert not {iso for _, iso in held} & {iso for _, iso in training}
    assert not any(is_reserved(iso) for _, iso in training)
    share = np.mean([is_reserved(f"2001-01-{d:02d}") or is_reserved(f"1950-{m:02d}-01")
                     for d in range(1, 32) for m in range(1, 13)])
    assert share < 0.2  # about 1 in 40 per date: most dates are for training
    with pytest.raises(VizError, match="1 to 1,000"):
        heldout_pairs(1001)


def test_gold_alignment_of_the_day_first_form_by_hand():
    # the twenty first of march nineteen ninety nine
    #  0    1     2    3   4      5       6     7
    gold = gold_alignment(parse_date("the twenty first of march nineteen ninety nine"))
    expected = np.zeros((10, 8), dtype=bool)
    expected[0:4, 5:8] = True  # 1 9 9 9 <- nineteen ninety nine
    expected[5:7, 4] = True  # 0 3 <- march
    expected[8:10, 1:3] = True  # 2 1 <- twenty first
    np.testing.assert_array_equal(gold, expected)


def test_gold_alignment_of_the_month_first_form_with_and_and_comma_by_hand():
    # may fifth , two thousand and seven: the comma aligns with nothing, 'and' belongs to the year
    gold = gold_alignment(parse_date("may fifth, two thousand and seven"))
    assert gold.shape == (10, 7)
    assert [np.flatnonzero(row).tolist() for row in gold] == [[3, 4, 5, 6]] * 4 + [[]] + [[0]] * 2 + [[]] + [[1]] * 2
    assert not gold[:, 2].any()
    gold = gold_alignment(parse_date("the thirty first of february two thousand"))  # no such date, still aligned
    assert gold[8:10, 1:3].all() and gold[5:7, 4].all()
    with pytest.raises(VizError, match="No gold alignment: Not in the grammar"):
        gold_alignment(parse_date("march 21 1999"))
