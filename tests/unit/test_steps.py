"""The step-by-step recomputation against the model's own forward pass on tiny BERT and DistilBERT (the embedded
model: tests/integration/test_steps.py)."""


import numpy as np
import pytest
import torch
from transformers import AutoTokenizer, BertConfig, BertModel

from vizcore.errors import VizError
from vizcore.inside.steps import TOLERANCE, activate, embedding_parts, input_sum, layer_steps, run_model
from vizcore.model.loading import LoadedModel, load_model

TEXT = "The animal didn't cross the street because it was too tired."


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
    # what the pages say the model adds up is what it adds up (issue 47 B: MPNet has no segment table)
    assert input_sum(loaded) == ("token + position" if parts.segment is None else "token + position + segment")


def test_mpnet_adds_no_segment(tiny_model_dir):
    loaded = load_model(str(tiny_model_dir("mpnet")), device="cpu")
    assert embedding_parts(loaded, run_model(loaded, "A tiny MPNet.")).segment is None
    assert input_sum(loaded) == "token + position"


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


def test_tiny_mpnet_is_reproduced_with_its_relative_bias_added_in_every_layer(tiny_model_dir):
    """MPNet: the same layer as BERT under other names, plus one (H, T, T) bias looked up once and added to every
    layer's scaled scores; checked against transformers' own bias and forward pass."""
    from vizcore.inside.demos import permutation_demo
    from vizcore.inside.steps import additive_mask, layer_forward, layer_weights

    loaded = load_model(str(tiny_model_dir("mpnet")), device="cpu")
    run = run_model(loaded, "A tiny random MPNet, with a long-ish sentence to attend over.")
    encoder = loaded.model.base_model.encoder
    with torch.no_grad():
        theirs = encoder.compute_position_bias(torch.zeros(1, len(run.tokens), 1))[0].double().numpy()  # (H, T, T)
    for layer in range(loaded.num_layers):
        for head in range(loaded.num_heads):
            steps = layer_steps(loaded, run, layer, head)
            assert steps.attention_diff <= TOLERANCE and steps.output_diff <= TOLERANCE, (layer, head)
            np.testing.assert_allclose(steps.bias, theirs[head], atol=1e-6)
    # Without the bias the same weights do not give the model's attention: the bias is really in it.
    x = torch.from_numpy(run.hidden_states[1]).double()
    unbiased = layer_forward(layer_weights(loaded, 1), x, additive_mask(torch.ones(len(run.tokens))))["attention"]
    assert np.abs(unbiased.numpy() - run.attention[1]).max() > 1e-2
    parts = embedding_parts(loaded, run)
    assert parts.max_abs_diff <= TOLERANCE and parts.segment is None and parts.position_ids[0] == 2
    # Word order: with neither absolute nor relative positions, a shuffle only shuffles the outputs.
    demo = permutation_demo(loaded, run, seed=0)
    assert demo.diff_without_positions < 1e-9 < demo.diff_with_positions
