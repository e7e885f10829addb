"""Which configs count as causal: BERT-family models only with is_decoder set, whatever their class name."""

from transformers import BertConfig, GPT2Config

from vizcore.model.loading import is_causal


def test_a_bert_lm_head_model_saved_without_is_decoder_is_not_causal():
    assert not is_causal(BertConfig(architectures=["BertLMHeadModel"]))
    assert is_causal(BertConfig(architectures=["BertLMHeadModel"], is_decoder=True))
    assert not is_causal(BertConfig(architectures=["BertForMaskedLM"]))


def test_gpt2_is_causal_by_its_architecture():
    assert is_causal(GPT2Config(architectures=["GPT2LMHeadModel"]))
