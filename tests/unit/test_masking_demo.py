"""The 80/10/10 demo: one draw token by token, and the rates measured over many draws."""

from __future__ import annotations

import numpy as np
import pytest
from transformers import AutoTokenizer

from vizcore.errors import VizError
from vizcore.mlm.masking import MASKED, NOT_SELECTED, RANDOM, UNCHANGED, MaskingRule, ordinary_token_ids
from vizcore.mlm.masking_demo import draw_masking, measure_rates
from vizcore.model.loading import BUILTIN_MODELS, DEFAULT_MODEL

TEXT = "The quick brown fox jumps over the lazy dog while the old cat sleeps in the warm sun."


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(str(BUILTIN_MODELS[DEFAULT_MODEL].source()))


def test_one_draw_is_reproducible_and_each_token_shows_what_happened(tokenizer):
    replacement = ordinary_token_ids(tokenizer)
    draws = [draw_masking(tokenizer, TEXT, seed, replacement) for seed in range(40)]
    again = draw_masking(tokenizer, TEXT, 3)
    assert again.shown == draws[3].shown and (again.kinds == draws[3].kinds).all()
    assert len({tuple(d.kinds) for d in draws}) > 20  # seeds give different draws
    vocab = tokenizer.get_vocab()
    seen = set()
    for draw in draws:
        assert draw.tokens == tokenizer.convert_ids_to_tokens(tokenizer(TEXT)["input_ids"])
        assert not draw.kinds[draw.special].any() and draw.special[[0, -1]].all()
        for token, shown, kind in zip(draw.tokens, draw.shown, draw.kinds):
            seen.add(int(kind))
            if kind == MASKED:
                assert shown == "[MASK]"
            elif kind in (NOT_SELECTED, UNCHANGED):
                assert shown == token
            else:
                assert kind == RANDOM and vocab[shown] not in tokenizer.all_special_ids
                assert not shown.startswith("[unused")
    assert seen == {NOT_SELECTED, MASKED, RANDOM, UNCHANGED}
    assert draws[0].kind_names[0] == "special (never selected)"


def test_measured_rates_match_berts_targets_within_their_error(tokenizer):
    rates = measure_rates(tokenizer, TEXT, draws=2000, seed=0)
    ordinary = len(tokenizer(TEXT, add_special_tokens=False)["input_ids"])
    assert rates.eligible == 2000 * ordinary
    assert rates.masked + rates.randomised + rates.unchanged == rates.selected
    for row in rates.rows():
        assert abs(row["measured"] - row["target"]) < 4 * row["std_error"], row
    assert [row["target"] for row in rates.rows()] == [0.15, 0.8, 0.1, 0.1]


def test_rates_follow_the_rule_they_are_given_not_fixed_numbers(tokenizer):
    rule = MaskingRule(rate=0.5, mask_fraction=0.5, random_fraction=0.3)
    rows = measure_rates(tokenizer, TEXT, draws=1000, seed=1, rule=rule).rows()
    assert [r["target"] for r in rows] == pytest.approx([0.5, 0.5, 0.3, 0.2])
    for row in rows:
        assert abs(row["measured"] - row["target"]) < 4 * row["std_error"], row


def test_standard_error_is_the_binomial_one(tokenizer):
    rates = measure_rates(tokenizer, TEXT, draws=500, seed=2)
    first = rates.rows()[0]
    assert first["std_error"] == pytest.approx(np.sqrt(0.15 * 0.85 / rates.eligible))


@pytest.mark.parametrize(("text", "draws", "message"), [
    ("", 10, "empty"),
    ("   ", 10, "empty"),
    ("[CLS] [SEP] [MASK]", 10, "no ordinary tokens"),  # typed special tokens are never selected
    (TEXT, 0, "between 1 and 20,000"),
    (TEXT, 20_001, "between 1 and 20,000"),
])
def test_bad_input_is_refused_clearly(tokenizer, text, draws, message):
    with pytest.raises(VizError, match=message):
        measure_rates(tokenizer, text, draws=draws)


def test_a_tokenizer_without_mask_is_refused(tiny_model_dir):
    gpt2 = AutoTokenizer.from_pretrained(str(tiny_model_dir("gpt2")))
    gpt2.mask_token = None
    with pytest.raises(VizError, match="no mask token"):
        draw_masking(gpt2, TEXT, 0)


def test_long_text_is_cut_to_512_tokens(tokenizer):
    draw = draw_masking(tokenizer, "word " * 2000, 0)
    assert len(draw.tokens) == 512
