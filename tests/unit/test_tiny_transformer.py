"""The from-scratch Transformer: attention contract, positional table, post-norm layers, jobs (that it learns
reversal: tests/integration/test_tiny_transformer.py)."""

import numpy as np
import pytest
import torch

from vizcore.errors import VizError
from vizcore.finetune.tiny import (
    EncoderLayer,
    MultiHeadAttention,
    PositionalEncoding,
    TinyConfig,
    TinyJob,
    TinyTransformer,
    anti_diagonal_mass,
    attention,
    example_digits,
    make_batch,
    predict_tiny,
    train_tiny,
)
from vizcore.positional.encoding import sinusoidal_encoding


def test_attention_matches_the_formula_and_rows_sum_to_one():
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 3, 5, 4), torch.randn(2, 3, 5, 4), torch.randn(2, 3, 5, 4)
    out, weights = attention(q, k, v)
    expected = torch.softmax(torch.einsum("bhqd,bhkd->bhqk", q, k) / 2.0, dim=-1)  # sqrt(d_k) = 2
    torch.testing.assert_close(weights, expected)
    torch.testing.assert_close(out, expected @ v)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 3, 5))


def test_multi_head_attention_shapes_and_positional_table():
    x = torch.randn(2, 7, 16)
    out, weights = MultiHeadAttention(16, 4)(x)
    assert out.shape == (2, 7, 16) and weights.shape == (2, 4, 7, 7)
    encoding = PositionalEncoding(16, 32)
    np.testing.assert_allclose((encoding(torch.zeros(1, 7, 16)) - 0)[0].numpy(),
                               sinusoidal_encoding(7, 16), atol=1e-6)


def test_model_returns_logits_and_attention_in_layer_head_query_key_order():
    model = TinyTransformer(TinyConfig(length=6, layers=3, heads=2, d_model=16, d_ff=32))
    logits, maps = model(torch.randint(0, 10, (4, 6)))
    assert logits.shape == (4, 6, 10) and maps.shape == (4, 3, 2, 6, 6)


def test_an_encoder_layer_is_post_norm_layer_norm_of_x_plus_sublayer_as_the_page_says():
    """Recomputed from the layer's weights: h = LayerNorm(x + MHA(x)), out = LayerNorm(h + FFN(h))."""
    torch.manual_seed(0)
    layer = EncoderLayer(16, 4, 32)
    with torch.no_grad():
        for norm in (layer.norm1, layer.norm2):
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.uniform_(-0.5, 0.5)
    x = torch.randn(2, 5, 16) * 3 + 1
    out, weights = layer(x)

    def linear(t, module):
        return t @ module.weight.T + module.bias

    def heads(t):  # (B, T, D) -> (B, H, T, d_k)
        return t.view(2, 5, 4, 4).transpose(1, 2)

    qkv = linear(x, layer.attention.qkv)
    q, k, v = heads(qkv[..., :16]), heads(qkv[..., 16:32]), heads(qkv[..., 32:])
    attention_weights = torch.softmax(q @ k.transpose(-1, -2) / 2.0, dim=-1)  # sqrt(d_k) = 2
    mixed = linear((attention_weights @ v).transpose(1, 2).reshape(2, 5, 16), layer.attention.out)
    norm1, norm2 = layer.norm1, layer.norm2
    h = torch.nn.functional.layer_norm(x + mixed, (16,), norm1.weight, norm1.bias, norm1.eps)
    feed_forward = linear(torch.relu(linear(h, layer.feed_forward[0])), layer.feed_forward[2])
    expected = torch.nn.functional.layer_norm(h + feed_forward, (16,), norm2.weight, norm2.bias, norm2.eps)
    torch.testing.assert_close(weights, attention_weights)
    torch.testing.assert_close(out, expected)


def test_targets_are_reversed_or_sorted():
    digits, target = make_batch("reverse", 3, 5, torch.Generator().manual_seed(0))
    assert torch.equal(target, digits.flip(1))
    digits, target = make_batch("sort", 3, 5, torch.Generator().manual_seed(0))
    assert torch.equal(target, torch.sort(digits, 1).values)


def test_untrained_model_is_at_chance():
    result = train_tiny(TinyConfig(task="sort", length=6, steps=10, snapshot_every=10), eval_every=10)
    assert result.sequence_accuracy < 0.05


def test_anti_diagonal_mass_of_known_matrices():
    assert anti_diagonal_mass(np.fliplr(np.eye(4))) == 1.0
    assert anti_diagonal_mass(np.eye(4)) == 0.0
    assert anti_diagonal_mass(np.full((4, 4), 0.25)) == 0.25


def test_example_is_seeded_and_uses_distinct_digits():
    config = TinyConfig(length=8, seed=3)
    assert sorted(example_digits(config).tolist()) == list(range(8))
    assert example_digits(config).tolist() == example_digits(TinyConfig(length=8, seed=3)).tolist()


def test_job_stops_cleanly_with_a_final_snapshot():
    job = TinyJob(TinyConfig(steps=5000, length=6, snapshot_every=1000)).start()
    while job.step < 3:
        job.join(0.02)
    job.stop()
    job.join(30)
    assert not job.running and job.result is not None and job.result.stopped
    done = job.result.history.steps[-1]["step"]
    assert 3 <= done < 5000 and job.result.history.snapshots[-1][0] == done


@pytest.mark.parametrize(("config", "message"), [
    (TinyConfig(task="fly"), "Unknown task"), (TinyConfig(length=1), "2 to 16"),
    (TinyConfig(d_model=30, heads=4), "split evenly"),
])
def test_bad_settings(config, message):
    with pytest.raises(VizError, match=message):
        train_tiny(config)


def test_prediction_needs_the_trained_length():
    result = train_tiny(TinyConfig(length=4, steps=10))
    with pytest.raises(VizError, match="exactly 4 digits"):
        predict_tiny(result, [1, 2, 3])
