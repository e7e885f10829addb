"""A shipped file of changed tensors must fit the model it is applied to: heads the model lacks are
skipped (a bare encoder reads the masked-LM's file), any other key is refused, not silently dropped."""

import pytest
import torch
from transformers import BertConfig, BertForMaskedLM, BertModel

from vizcore.mlm.weights import MASK_ROW_KEY, apply_changed_state

CONFIG = BertConfig(vocab_size=50, hidden_size=8, num_hidden_layers=2, num_attention_heads=2, intermediate_size=16,
                    max_position_embeddings=16)


def shipped(model) -> dict[str, torch.Tensor]:
    state = {k: torch.full_like(v, 0.5) for k, v in model.state_dict().items()
             if "layer.1." in k or k.startswith("cls.")}
    return {**state, MASK_ROW_KEY: torch.full((8,), 0.25)}


def test_a_file_applies_to_the_masked_lm_and_to_a_bare_encoder_skipping_the_head():
    torch.manual_seed(0)
    state = shipped(BertForMaskedLM(CONFIG))
    for model in (BertForMaskedLM(CONFIG), BertModel(CONFIG, add_pooling_layer=False)):
        apply_changed_state(model, state, mask_id=4)
        encoder = model.bert if hasattr(model, "bert") else model
        assert torch.all(encoder.encoder.layer[1].output.dense.weight == 0.5)
        assert torch.all(encoder.embeddings.word_embeddings.weight[4] == 0.25)


def test_keys_the_model_cannot_take_are_refused():
    model = BertForMaskedLM(CONFIG)
    state = {**shipped(model), "bert.encoder.layer.7.output.dense.weight": torch.zeros(8, 16)}
    with pytest.raises(ValueError, match="layer.7"):
        apply_changed_state(model, state, mask_id=4)


def test_a_file_of_the_next_sentence_heads_applies_to_a_masked_lm_without_them():
    model = BertForMaskedLM(CONFIG)
    state = {"bert.encoder.layer.1.output.dense.bias": torch.ones(8), "bert.pooler.dense.weight": torch.zeros(8, 8),
             "cls.seq_relationship.weight": torch.zeros(2, 8)}
    apply_changed_state(model, state, mask_id=4)
    assert torch.all(model.bert.encoder.layer[1].output.dense.bias == 1)
