"""The encoder-decoder: equal to a reference built on torch's scaled_dot_product_attention with the same
weights, the decoder's causal mask, padding that changes nothing, the [layer, head, ...] contract."""

import math

import pytest
import torch
import torch.nn.functional as F

from vizcore.errors import VizError
from vizcore.positional.encoding import sinusoidal_encoding
from vizcore.seq2seq.dates import OUTPUT_VOCAB, input_ids, output_ids, tokenize
from vizcore.seq2seq.model import DateModelConfig, DateTransformer, attention, causal_mask

CONFIG = DateModelConfig(d_model=16, heads=4, encoder_layers=2, decoder_layers=2, d_ff=24)


@pytest.fixture(scope="module")
def model() -> DateTransformer:
    torch.manual_seed(0)
    model = DateTransformer(CONFIG).eval()
    with torch.no_grad():  # LayerNorms away from (1, 0), so that a wrong norm placement shows
        for module in model.modules():
            if isinstance(module, torch.nn.LayerNorm):
                module.weight.uniform_(0.5, 1.5)
                module.bias.uniform_(-0.5, 0.5)
    return model


def batch(*texts: str, length: int = 11) -> tuple[torch.Tensor, torch.Tensor]:
    """Padded word ids (B, I) and arbitrary decoder inputs (B, length)."""
    ids = [input_ids(tokenize(t)) for t in texts]
    width = max(map(len, ids))
    source = torch.tensor([i + [0] * (width - len(i)) for i in ids])
    target = torch.randint(1, len(OUTPUT_VOCAB), (len(texts), length), generator=torch.Generator().manual_seed(1))
    return source, target


def sdpa_reference(model: DateTransformer, source: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """The paper's encoder-decoder, recomputed with torch's fused attention from the model's parameters."""
    d, h = CONFIG.d_model, CONFIG.heads
    table = torch.tensor(sinusoidal_encoding(32, d), dtype=torch.float32)
    keep = (source != 0)[:, None, None, :]  # (B, 1, 1, I)

    def heads(x: torch.Tensor) -> torch.Tensor:
        return x.view(x.size(0), x.size(1), h, d // h).transpose(1, 2)

    def mha(m, x, memory, mask=None, is_causal=False):
        out = F.scaled_dot_product_attention(heads(F.linear(x, m.query.weight, m.query.bias)),
                                             heads(F.linear(memory, m.key.weight, m.key.bias)),
                                             heads(F.linear(memory, m.value.weight, m.value.bias)),
                                             attn_mask=mask, is_causal=is_causal)
        return F.linear(out.transpose(1, 2).reshape(x.shape), m.out.weight, m.out.bias)

    def norm(n, x):
        return F.layer_norm(x, (d,), n.weight, n.bias, n.eps)

    def ffn(f, x):
        return F.linear(F.relu(F.linear(x, f[0].weight, f[0].bias)), f[2].weight, f[2].bias)

    x = F.embedding(source, model.source_embed.weight) + table[: source.size(1)]
    for layer in model.encoder:
        x = norm(layer.norm1, x + mha(layer.self_attention, x, x, keep))
        x = norm(layer.norm2, x + ffn(layer.feed_forward, x))
    y = F.embedding(target, model.target_embed.weight) + table[: target.size(1)]
    for layer in model.decoder:
        y = norm(layer.norm1, y + mha(layer.self_attention, y, y, is_causal=True))
        y = norm(layer.norm2, y + mha(layer.cross_attention, y, x, keep))
        y = norm(layer.norm3, y + ffn(layer.feed_forward, y))
    return F.linear(y, model.generator.weight, model.generator.bias)


def test_the_model_equals_a_scaled_dot_product_attention_reference_on_the_same_weights(model):
    source, target = batch("the twenty first of march nineteen ninety nine", "may fifth, two thousand")
    with torch.no_grad():
        ours = model(source, target).logits
        reference = sdpa_reference(model, source, target)
    assert (ours - reference).abs().max() <= 1e-5


def test_the_reference_would_catch_a_pre_norm_model(model):
    source, target = batch("the first of may nineteen hundred")
    with torch.no_grad():
        x = model.position(model.source_embed(source))
        layer = model.encoder[0]
        pre_norm = x + layer.self_attention(layer.norm1(x), layer.norm1(x), None)[0]
        post_norm = layer(x, (source != 0)[:, None, None, :])[0]
    assert (pre_norm - post_norm).abs().max() > 0.1


def test_attention_matches_the_formula_and_masked_keys_get_no_weight():
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 3, 4, 8), torch.randn(2, 3, 5, 8), torch.randn(2, 3, 5, 8)
    mask = torch.tensor([True, True, True, False, False])
    out, weights = attention(q, k, v, mask)
    expected = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(8) + torch.where(mask, 0.0, -math.inf), -1)
    torch.testing.assert_close(weights, expected)
    torch.testing.assert_close(out, expected @ v)
    assert (weights[..., 3:] == 0).all()


def test_the_decoders_causal_mask_no_weight_on_later_outputs_and_later_outputs_change_nothing(model):
    source, target = batch("the twenty first of march nineteen ninety nine")
    with torch.no_grad():
        first = model(source, target)
        changed = target.clone()
        changed[0, 6:] = (changed[0, 6:] % (len(OUTPUT_VOCAB) - 1)) + 1  # other later outputs
        second = model(source, changed)
    above = ~causal_mask(11)
    assert first.decoder.shape == (1, 2, 4, 11, 11)
    assert (first.decoder[..., above] == 0).all() and (first.decoder[..., ~above] > 0).all()
    torch.testing.assert_close(second.logits[0, :6], first.logits[0, :6], rtol=0, atol=0)
    torch.testing.assert_close(second.cross[..., :6, :], first.cross[..., :6, :], rtol=0, atol=0)
    assert not torch.allclose(second.logits[0, 6:], first.logits[0, 6:])


def test_padding_changes_nothing_and_gets_no_attention(model):
    short, long = "may fifth two thousand", "the twenty first of march two thousand and forty two"
    source, target = batch(short, long)
    alone_source, _ = batch(short)
    with torch.no_grad():
        padded = model(source, target)
        alone = model(alone_source, target[:1])
    n = alone_source.size(1)
    torch.testing.assert_close(padded.logits[0], alone.logits[0], atol=1e-5, rtol=0)
    torch.testing.assert_close(padded.cross[0, ..., :n], alone.cross[0], atol=1e-6, rtol=0)
    assert (padded.cross[0, ..., n:] == 0).all() and (padded.encoder[0, ..., n:] == 0).all()


def test_forward_returns_logits_and_three_attentions_in_layer_head_order():
    model = DateTransformer(DateModelConfig(d_model=16, heads=2, encoder_layers=3, decoder_layers=1, d_ff=16))
    source, target = batch("may fifth two thousand", "the first of june nineteen hundred", length=8)  # I = 6
    out = model(source, target)
    assert out.logits.shape == (2, 8, len(OUTPUT_VOCAB))
    assert out.encoder.shape == (2, 3, 2, 6, 6) and out.decoder.shape == (2, 1, 2, 8, 8)
    assert out.cross.shape == (2, 1, 2, 8, 6)
    torch.testing.assert_close(out.cross.sum(-1), torch.ones(2, 1, 2, 8))
    assert output_ids("1999-03-21")[4] == OUTPUT_VOCAB.index("-")


@pytest.mark.parametrize(("config", "message"), [
    (DateModelConfig(d_model=30, heads=4), "split evenly"),
    (DateModelConfig(decoder_layers=0), "1 to 4 decoder layers"),
    (DateModelConfig(d_model=512, heads=8), "d_model 8 to 256"),
])
def test_bad_configurations_say_what_to_change(config, message):
    with pytest.raises(VizError, match=message):
        DateTransformer(config)
