"""extract_attention against direct transformers calls and against attention recomputed by hand."""

import numpy as np
import pytest
import torch
from transformers import AutoModel, AutoTokenizer

from vizcore.attention.extract import extract_attention
from vizcore.errors import VizError
from vizcore.model.loading import load_model
from vizcore.text import MAX_CHARS


@pytest.fixture(scope="module")
def tiny(tiny_bert_dir):
    return load_model(str(tiny_bert_dir), device="cpu")


def _direct(folder, text, pair=None, max_length=64):
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
    inputs = tokenizer(text, pair, truncation=True, max_length=max_length, return_tensors="pt")
    with torch.no_grad():
        out = model(**inputs, output_attentions=True, output_hidden_states=True)
    return inputs, out


def test_rows_sum_to_one_and_shape_is_layer_head_query_key(tiny):
    result = extract_attention(tiny, "The cat sat on the mat.")
    n = len(result.tokens)
    assert result.attention.shape == (2, 4, n, n)
    assert result.attention.dtype == np.float32
    np.testing.assert_allclose(result.attention.sum(-1), 1.0, atol=1e-5)
    assert result.tokens[0] == "[CLS]" and result.tokens[-1] == "[SEP]"
    assert result.special_mask.tolist() == [True] + [False] * (n - 2) + [True]


def test_pair_matches_transformers_and_marks_segments(tiny, tiny_bert_dir):
    result = extract_attention(tiny, "The cat sat.", "A dog barked loudly.")
    inputs, out = _direct(tiny_bert_dir, "The cat sat.", "A dog barked loudly.")
    expected = torch.stack([a[0] for a in out.attentions]).numpy()
    np.testing.assert_allclose(result.attention, expected, atol=1e-6)
    assert result.segment_ids.tolist() == inputs["token_type_ids"][0].tolist()
    assert result.segment_ids.tolist().count(1) == len("a dog barked loudly . [SEP]".split())


def test_layer_one_equals_softmax_of_scaled_dot_products_recomputed_by_hand(tiny, tiny_bert_dir):
    text = "Attention is all you need."
    result = extract_attention(tiny, text)
    _, out = _direct(tiny_bert_dir, text)
    x = out.hidden_states[0][0].numpy()  # (T, d) input to layer 1
    self_attn = tiny.model.encoder.layer[0].attention.self
    q = x @ self_attn.query.weight.numpy().T + self_attn.query.bias.numpy()
    k = x @ self_attn.key.weight.numpy().T + self_attn.key.bias.numpy()
    d = q.shape[1] // tiny.num_heads
    for h in range(tiny.num_heads):
        scores = q[:, h * d:(h + 1) * d] @ k[:, h * d:(h + 1) * d].T / np.sqrt(d)
        weights = np.exp(scores - scores.max(1, keepdims=True))
        weights /= weights.sum(1, keepdims=True)
        np.testing.assert_allclose(result.attention[0, h], weights, atol=1e-5)


def test_offsets_point_back_into_the_text_for_non_ascii_and_markup(tiny):
    text = "Café naïve 東京 🦊 <script>alert(1)</script>"
    result = extract_attention(tiny, text)
    pieces = [text[a:b] for (a, b), special in zip(result.offsets, result.special_mask) if not special]
    assert "Café"[:3] in "".join(pieces) and "東" in pieces and "<" in pieces
    assert all(b >= a for a, b in result.offsets)


def test_long_input_is_truncated_and_reported(tiny):
    result = extract_attention(tiny, "word " * 300)
    assert result.truncated is True
    assert len(result.tokens) == 64 and result.num_input_tokens == 302
    assert result.tokens[-1] == "[SEP]"


def test_short_input_is_not_reported_as_truncated(tiny):
    result = extract_attention(tiny, "short")
    assert result.truncated is False and result.num_input_tokens == len(result.tokens)


def test_decoder_attention_is_causal(tiny_model_dir):
    gpt = load_model(str(tiny_model_dir("gpt2")), device="cpu")
    result = extract_attention(gpt, "the cat sat on the mat")
    upper = np.triu(np.ones(result.attention.shape[-2:], dtype=bool), k=1)
    assert np.all(result.attention[..., upper] == 0)
    np.testing.assert_allclose(result.attention.sum(-1), 1.0, atol=1e-5)


def test_distilbert_takes_no_segment_ids_and_still_works(tiny_model_dir):
    distil = load_model(str(tiny_model_dir("distilbert")), device="cpu")
    result = extract_attention(distil, "one sentence", "and another")
    assert result.segment_ids.tolist()[-1] == 1 and result.attention.shape[0] == 2


@pytest.mark.parametrize("text", ["", "   \n\t", None, "\u200b\ufeff\u200d", "\x00\x07\x1b"])
def test_empty_text_is_refused(tiny, text):
    with pytest.raises(VizError, match="empty"):
        extract_attention(tiny, text)


def test_huge_text_is_refused_before_tokenising(tiny):
    with pytest.raises(VizError, match="limit"):
        extract_attention(tiny, "a" * (MAX_CHARS + 1))


@pytest.mark.parametrize("pair", ["   ", "\u200b\ufeff"])
def test_blank_pair_is_treated_as_no_pair(tiny, pair):
    result = extract_attention(tiny, "hello", pair)
    assert result.pair is None and result.tokens == extract_attention(tiny, "hello").tokens


def test_bytes_that_are_not_utf8_get_a_message_not_a_tokenizer_error(tiny):
    text = b"caf\xe9 [MASK]".decode("utf-8", "surrogateescape")  # what argv holds in a non-UTF-8 locale
    with pytest.raises(VizError, match="invalid character at position 4"):
        extract_attention(tiny, text)
