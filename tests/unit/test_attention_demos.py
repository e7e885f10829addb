"""The √d_k, mask and permutation demos against closed forms and the model's own forward pass."""

import copy
import math

import numpy as np
import pytest
import torch
from scipy.stats import entropy

from vizcore.errors import VizError
from vizcore.inside.demos import (
    causal_weights,
    entropy_bits,
    padding_demo,
    permutation_demo,
    scaling_demo,
    shuffle_order,
    softmax,
    variance_curve,
    weight_above_diagonal,
)
from vizcore.inside.steps import TOLERANCE, run_model
from vizcore.model.loading import load_model

TEXT = "The animal didn't cross the street because it was too tired."


@pytest.fixture(scope="module")
def tiny(tiny_bert_dir):
    return load_model(str(tiny_bert_dir), device="cpu")


def test_variance_of_q_dot_k_grows_like_d_k_and_scaling_brings_it_to_one():
    for row in variance_curve(samples=4000):
        assert row["measured Var(q·k)"] == pytest.approx(row["d_k"], rel=0.12)
        assert row["measured Var(q·k/√d_k)"] == pytest.approx(1.0, rel=0.12)
    with pytest.raises(VizError, match="between 1 and 1024"):
        scaling_demo(0)


def test_unscaled_softmax_saturates_and_scaling_keeps_entropy_up():
    demo = scaling_demo(256)
    assert demo.unscaled_weights.max() > 0.9 and demo.unscaled_entropy < 0.5
    assert demo.scaled_entropy > 1.5 and demo.max_entropy == pytest.approx(math.log2(10))
    np.testing.assert_allclose(demo.scaled_weights, softmax(demo.scores / 16.0))
    assert demo.scaled_entropy == pytest.approx(entropy(demo.scaled_weights, base=2))


def test_entropy_in_bits():
    assert entropy_bits(np.full(8, 1 / 8)) == pytest.approx(3.0)
    assert entropy_bits(np.array([1.0, 0.0, 0.0])) == 0.0
    p = np.array([0.5, 0.25, 0.25])
    assert entropy_bits(p) == pytest.approx(entropy(p, base=2))


def test_causal_rows_are_the_softmax_of_the_visible_prefix():
    scores = np.random.default_rng(3).normal(size=(6, 6)) * 3
    weights = causal_weights(scores)
    assert weight_above_diagonal(weights) == 0.0
    for i in range(6):
        prefix = np.exp(scores[i, :i + 1]) / np.exp(scores[i, :i + 1]).sum()
        np.testing.assert_allclose(weights[i, :i + 1], prefix, atol=1e-12)
    assert weight_above_diagonal(softmax(scores)) > 0.01


def test_padded_keys_get_zero_weight_and_real_tokens_do_not_change(tiny):
    demo = padding_demo(tiny, "A much longer first sentence than the other one.", "Short one.", 1, 2)
    assert demo.short == 1 and demo.attention_mask[1].tolist().count(0) == 12 - 5  # [CLS] short one . [SEP]
    assert demo.tokens[1][-1] == "[PAD]" and demo.max_on_padding <= 1e-12
    assert demo.max_diff_vs_alone <= TOLERANCE
    np.testing.assert_allclose(demo.weights.sum(1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(demo.weights[:, demo.attention_mask[1] == 0], 0.0)


def test_padding_needs_different_lengths_a_text_and_a_pad_token(tiny, tiny_model_dir):
    with pytest.raises(VizError, match="same number of tokens"):
        padding_demo(tiny, "The cat sat.", "The dog ran.", 0, 0)
    with pytest.raises(VizError, match="empty"):
        padding_demo(tiny, "The cat sat.", "", 0, 0)
    gpt2 = load_model(str(tiny_model_dir("gpt2")), device="cpu")
    if gpt2.tokenizer.pad_token is None:
        with pytest.raises(VizError, match="padding token"):
            padding_demo(gpt2, "a b c", "a", 0, 0)


def test_shuffle_keeps_specials_and_is_never_the_identity():
    tokens = ["[CLS]", "a", "b", "c", "[SEP]"]
    special = np.array([True, False, False, False, True])
    for seed in range(20):
        order = shuffle_order(tokens, special, seed)
        assert order[0] == 0 and order[-1] == 4 and sorted(order) == list(range(5))
        assert order.tolist() != list(range(5))
    with pytest.raises(VizError, match="two different words"):
        shuffle_order(["[CLS]", "a", "[SEP]"], np.array([True, False, True]))


def _model_outputs(model, ids, token_types):
    with torch.inference_mode():
        return model(input_ids=ids, token_type_ids=token_types).last_hidden_state[0].double()


def test_permutation_demo_against_the_real_model(tiny):
    run = run_model(tiny, TEXT)
    demo = permutation_demo(tiny, run, seed=1)
    assert demo.diff_without_positions <= TOLERANCE and demo.diff_with_positions > 0.1
    ids = torch.from_numpy(run.input_ids)[None]
    types = torch.zeros_like(ids)
    order = torch.from_numpy(demo.order)
    # With positions: the real model on the shuffled ids.
    real = _model_outputs(tiny.model, ids[:, order], types) - _model_outputs(tiny.model, ids, types)[order]
    assert float(real.abs().max()) == pytest.approx(demo.diff_with_positions, abs=1e-4)
    # Without positions: a copy of the model whose position table is zero is permutation-equivariant.
    blind = copy.deepcopy(tiny.model)
    blind.embeddings.position_embeddings.weight.data.zero_()
    real = _model_outputs(blind, ids[:, order], types) - _model_outputs(blind, ids, types)[order]
    assert float(real.abs().max()) <= TOLERANCE
