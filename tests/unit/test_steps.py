"""The step-by-step recomputation against the model's own forward pass (embedded, tiny BERT, DistilBERT)."""

import math

import numpy as np
import pytest
import torch
from transformers import AutoTokenizer, BertConfig, BertModel

from vizcore.errors import VizError
from vizcore.model.loading import DEFAULT_MODEL, LoadedModel, load_model
from vizcore.inside.steps import TOLERANCE, activate, embedding_parts, layer_steps, run_model

TEXT = "The animal didn't cross the street because it was too tired."


@pytest.fixture(scope="module")
def minilm():
    return load_model(DEFAULT_MODEL, device="cpu")


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


@pytest.mark.parametrize("kind", ["bert", "distilbert"])
def test_tiny_random_models_are_reproduced_for_every_head(tiny_model_dir, kind):
    loaded = load_model(str(tiny_model_dir(kind)), device="cpu")
    run = run_model(loaded, "A tiny random model, with a long-ish sentence to attend over.")
    for layer in range(loaded.num_layers):
        for head in range(loaded.num_heads):
            steps = layer_steps(loaded, run, layer, head)
            assert steps.attention_diff <= TOLERANCE and steps.output_diff <= TOLERANCE
    parts = embedding_parts(loaded, run)
    assert parts.max_abs_diff <= TOLERANCE
    assert (parts.segment is None) == (kind == "distilbert")


@pytest.mark.parametrize("act", ["gelu_new", "relu"])
def test_the_activation_named_in_the_config_is_used(tiny_bert_dir, act):
    torch.manual_seed(1)
    config = BertConfig(vocab_size=30522, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64, hidden_act=act)
    model = BertModel(config, add_pooling_layer=False).eval()
    model.config._attn_implementation = "eager"
    loaded = LoadedModel(name=f"tiny-{act}", model=model, tokenizer=AutoTokenizer.from_pretrained(tiny_bert_dir),
                         device=torch.device("cpu"), is_decoder=False, num_layers=1, num_heads=2, max_length=64)
    steps = layer_steps(loaded, run_model(loaded, "Which activation?"), 0, 1)
    assert steps.output_diff <= TOLERANCE and steps.attention_diff <= TOLERANCE


def test_activations_match_torch():
    x = torch.linspace(-6, 6, 101, dtype=torch.float64)
    torch.testing.assert_close(activate(x, "gelu"), torch.nn.functional.gelu(x))
    torch.testing.assert_close(activate(x, "gelu_new"), torch.nn.functional.gelu(x, approximate="tanh"))
    torch.testing.assert_close(activate(x, "relu"), torch.relu(x))
    with pytest.raises(VizError, match="not supported"):
        activate(x, "swish")


def test_long_input_is_truncated_and_still_exact(tiny_bert_dir):
    loaded = load_model(str(tiny_bert_dir), device="cpu")
    run = run_model(loaded, "word " * 300)
    assert run.truncated and len(run.tokens) == 64 and run.num_input_tokens == 302
    assert layer_steps(loaded, run, 1, 3).output_diff <= TOLERANCE


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


def test_tiny_roberta_positions_start_after_padding_and_are_reproduced(tiny_bert_dir):
    from transformers import RobertaConfig, RobertaModel

    torch.manual_seed(2)
    config = RobertaConfig(vocab_size=30522, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                           intermediate_size=32, max_position_embeddings=66, pad_token_id=1, type_vocab_size=1)
    model = RobertaModel(config, add_pooling_layer=False).eval()
    model.config._attn_implementation = "eager"
    loaded = LoadedModel(name="tiny-roberta", model=model, tokenizer=AutoTokenizer.from_pretrained(tiny_bert_dir),
                         device=torch.device("cpu"), is_decoder=False, num_layers=2, num_heads=2, max_length=64)
    run = run_model(loaded, "RoBERTa counts positions from padding_idx + 1.")
    parts = embedding_parts(loaded, run)
    assert parts.position_ids[0] == 2 and parts.max_abs_diff <= TOLERANCE
    assert layer_steps(loaded, run, 1, 1).output_diff <= TOLERANCE
