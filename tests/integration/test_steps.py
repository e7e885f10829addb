"""The step-by-step recomputation against the embedded model's own forward pass (tiny models:
tests/unit/test_steps.py)."""

import math

import numpy as np
import pytest

from vizcore.errors import VizError
from vizcore.inside.steps import TOLERANCE, embedding_parts, layer_steps, run_model
from vizcore.model.loading import load_model

TEXT = "The animal didn't cross the street because it was too tired."


@pytest.mark.parametrize(("text", "pair"), [(TEXT, None), ("The cat sat.", "It was tired and 🦊 <b>sleepy</b>.")])
def test_every_layer_of_the_embedded_model_is_reproduced(minilm, text, pair):
    run = run_model(minilm, text, pair)
    for layer in range(minilm.num_layers):
        steps = layer_steps(minilm, run, layer, head=layer * 2)
        assert steps.all_heads_diff <= TOLERANCE and steps.output_diff <= TOLERANCE, layer
        assert steps.attention_diff <= steps.all_heads_diff
    parts = embedding_parts(minilm, run)
    assert parts.max_abs_diff <= TOLERANCE
    assert parts.segment_ids.tolist() == run.segment_ids.tolist()
    assert (pair is None) == (parts.segment_ids.max() == 0)


def test_steps_are_consistent_with_each_other_and_with_the_raw_weights(minilm):
    run = run_model(minilm, TEXT)
    steps = layer_steps(minilm, run, layer=2, head=5)
    d_k = steps.d_k
    assert d_k == 384 // 12 and steps.scores.shape == (16, 16) and steps.ffn_hidden.shape == (16, 1536)
    # Q of head 6 from the raw float32 parameters, independently of the float64 recomputation.
    attention = minilm.model.encoder.layer[2].attention.self
    x = run.hidden_states[2]
    q = x @ attention.query.weight.numpy().T + attention.query.bias.numpy()
    np.testing.assert_allclose(steps.q, q[:, 5 * d_k:6 * d_k], atol=1e-4)
    np.testing.assert_allclose(steps.scaled, steps.scores / math.sqrt(d_k), rtol=1e-12)
    np.testing.assert_allclose(steps.weights.sum(1), 1.0, atol=1e-12)
    np.testing.assert_array_equal(steps.concat[:, 5 * d_k:6 * d_k], steps.head_output)
    np.testing.assert_allclose(steps.head_output, steps.weights @ steps.v, atol=1e-12)
    assert np.all(steps.mask == 0.0)  # one sentence: nothing padded
    assert np.abs(steps.attn_norm.mean(1)).max() < 1.0  # LayerNorm output, then its affine parameters


def test_layer_output_chains_into_the_next_layer(minilm):
    run = run_model(minilm, "Attention is all you need.")
    first = layer_steps(minilm, run, 0, 0)
    second = layer_steps(minilm, run, 1, 0)
    np.testing.assert_allclose(first.output, second.x, atol=TOLERANCE)


def test_decoders_and_bad_layer_or_head_are_refused(tiny_model_dir, minilm):
    gpt2 = load_model(str(tiny_model_dir("gpt2")), device="cpu")
    with pytest.raises(VizError, match="decoder"):
        run_model(gpt2, "Hello there.")
    run = run_model(minilm, "Hello there.")
    with pytest.raises(VizError, match="layers 1 to 6"):
        layer_steps(minilm, run, 6, 0)
    with pytest.raises(VizError, match="heads 1 to 12"):
        layer_steps(minilm, run, 0, 12)
    with pytest.raises(VizError, match="empty"):
        run_model(minilm, "  ")
