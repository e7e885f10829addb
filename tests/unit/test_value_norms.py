"""Value-weighted attention (Kobayashi et al. 2020): ||alpha_ij f(x_j)|| equals a hand einsum over values read
with a hook of the test's own and W_O read from the state dict; the sink shares and residual norms follow."""

from __future__ import annotations

import inspect
import json

import numpy as np
import pytest
import torch

from vizcore.cli import main
from vizcore.model.loading import load_model
from vizcore.norms.value_norms import value_norms

TEXT = "The cat sat on the mat, because it was tired."
# Where each family keeps a layer's value projection and W_O, written out here (not asked of vizcore's adapter).
PATHS = {
    "bert": ("encoder.layer.{}.attention.self.value", "encoder.layer.{}.attention.output.dense"),
    "distilbert": ("transformer.layer.{}.attention.v_lin", "transformer.layer.{}.attention.out_lin"),
    "gpt2": ("h.{}.attn.c_attn", "h.{}.attn.c_proj"),  # fused Q|K|V; Conv1D weights are (in, out)
}


@pytest.fixture(scope="module", params=list(PATHS))
def family(request, tiny_model_dir):
    """A fresh load of the tiny model, its biases drawn at random (a default init leaves them 0, where
    keeping b_V and leaving out W_O's bias would go untested)."""
    loaded = load_model(str(tiny_model_dir(request.param)), device="cpu")
    generator = torch.Generator().manual_seed(1)
    for name, parameter in loaded.model.named_parameters():
        if name.endswith("bias"):
            parameter.data.copy_(torch.randn(parameter.shape, generator=generator) * 0.5)
    return request.param, loaded


def reference(kind: str, loaded) -> dict[str, np.ndarray]:
    """Weights, values and hidden states from the model's own forward with plain hooks; the norms by einsum."""
    model, heads = loaded.model, loaded.num_heads
    modules = dict(model.named_modules())
    values: dict[int, torch.Tensor] = {}

    def keep(layer):
        def hook(module, inputs, output):
            values[layer] = output[..., -output.shape[-1] // 3:] if kind == "gpt2" else output
        return hook

    handles = [modules[PATHS[kind][0].format(i)].register_forward_hook(keep(i)) for i in range(loaded.num_layers)]
    try:
        encoding = loaded.tokenizer(TEXT, return_tensors="pt")
        accepted = inspect.signature(model.forward).parameters  # DistilBERT takes no token_type_ids
        inputs = {k: v for k, v in encoding.items() if k in accepted}
        with torch.no_grad():
            output = model(**inputs, output_attentions=True, output_hidden_states=True)
    finally:
        for handle in handles:
            handle.remove()
    state = model.state_dict()
    alpha = torch.stack([a[0] for a in output.attentions]).numpy()  # (L, H, T, T)
    norms = []
    for layer in range(loaded.num_layers):
        w_o = state[PATHS[kind][1].format(layer) + ".weight"].numpy()
        w_o = w_o if kind == "gpt2" else w_o.T  # (H * d_head, d): row vectors times W_O
        v = values[layer][0].numpy()  # (T, H * d_head), bias included
        t, d_head = v.shape[0], v.shape[1] // heads
        f = np.einsum("thc,hcd->htd", v.reshape(t, heads, d_head), w_o.reshape(heads, d_head, -1))
        moved = np.einsum("hqk,hkd->hqkd", alpha[layer], f)  # alpha_ij f(x_j), every vector
        norms.append(np.linalg.norm(moved, axis=-1))
    hidden = torch.stack([h[0] for h in output.hidden_states]).numpy()
    return {"alpha": alpha, "norms": np.stack(norms), "residual": np.linalg.norm(hidden, axis=-1),
            "tokens": loaded.tokenizer.convert_ids_to_tokens(encoding["input_ids"][0])}


def test_norms_are_the_hand_einsum_over_the_captured_values(family):
    kind, loaded = family
    result, expected = value_norms(loaded, TEXT), reference(kind, loaded)
    assert result.tokens == expected["tokens"]
    np.testing.assert_allclose(result.weights, expected["alpha"], atol=1e-6)
    np.testing.assert_allclose(result.norms, expected["norms"], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(result.residual_norms, expected["residual"], rtol=1e-5)
    shares = result.norm_shares(1, 2)
    np.testing.assert_allclose(shares, expected["norms"][1, 2] / expected["norms"][1, 2].sum(-1, keepdims=True),
                               rtol=1e-4)


def test_sink_shares_of_weights_and_of_norms(family):
    kind, loaded = family
    result, expected = value_norms(loaded, TEXT), reference(kind, loaded)
    shares, tokens = result.sink_shares(), expected["tokens"]
    special = [t in loaded.tokenizer.all_special_tokens for t in tokens]
    cls = [i for i, s in enumerate(special) if s and i == 0]
    sep = [i for i, s in enumerate(special) if s and i > 0]
    punctuation = [i for i, t in enumerate(tokens) if t in (",", ".")]
    assert punctuation, tokens
    norm_rows = expected["norms"] / expected["norms"].sum(-1, keepdims=True)
    for sink, keys in (("cls", cls), ("sep", sep), ("punctuation", punctuation)):
        np.testing.assert_allclose(shares["weights"][sink], expected["alpha"][..., keys].sum(-1).mean((1, 2)),
                                   atol=1e-6)
        np.testing.assert_allclose(shares["norms"][sink], norm_rows[..., keys].sum(-1).mean((1, 2)), atol=1e-5)


def test_cli_prints_weights_and_norms_as_layer_head_query_key(capsys, tiny_model_dir):
    folder = tiny_model_dir("bert")
    code = main(["value-norms", "--text", TEXT, "--model", str(folder), "--device", "cpu", "--format", "json"])
    payload = json.loads(capsys.readouterr().out)
    assert code == 0
    expected = reference("bert", load_model(str(folder), device="cpu"))
    assert {"model", "tokens", "weights", "norms"} <= set(payload)
    assert payload["model"] == str(folder) and payload["tokens"] == expected["tokens"]
    np.testing.assert_allclose(payload["weights"], expected["alpha"], atol=1e-6)
    np.testing.assert_allclose(payload["norms"], expected["norms"], rtol=1e-4, atol=1e-6)
    assert np.shape(payload["residual_norms"]) == expected["residual"].shape


def test_cli_refuses_empty_text_in_one_line(capsys):
    code = main(["value-norms", "--text", "\u200b"])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert captured.err.strip() == "error: python -m vizcore value-norms: The text is empty: type a sentence."


def test_an_encoder_decoder_gets_a_clear_message():
    from transformers import BartConfig, BartModel

    from vizcore.errors import VizError
    from vizcore.model.loading import LoadedModel

    config = BartConfig(vocab_size=64, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                        decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=32)
    loaded = LoadedModel(name="tiny-bart", model=BartModel(config).eval(), tokenizer=None, device=torch.device("cpu"),
                         is_decoder=False, num_layers=1, num_heads=2, max_length=32)
    with pytest.raises(VizError, match="'tiny-bart' is an encoder-decoder: value-weighted attention reads one stack"):
        value_norms(loaded, TEXT)


def test_the_default_model_is_the_embedded_one_as_for_attention():
    from vizcore.cli import build_parser
    from vizcore.model.catalog import DEFAULT_MODEL

    parser = build_parser()
    value_norms_model = parser.parse_args(["value-norms", "--text", "x"]).model
    assert value_norms_model == parser.parse_args(["attention", "--text", "x"]).model == DEFAULT_MODEL
