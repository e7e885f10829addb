"""Model sizes: parameters per component counted from the tensors, checked against hand counts on configs written
here and against the model's own total; the ``sizes`` command on tiny models."""

from __future__ import annotations

import json

import pytest
import torch
from transformers import BertConfig, BertForMaskedLM, BertModel, GPT2Config, GPT2Model, MPNetConfig, MPNetModel

from vizcore.cli import main
from vizcore.finetune.tiny import TinyConfig, TinyTransformer
from vizcore.sizes.sizes import COMPONENTS, parameter_bytes, parameter_counts, tiny_sizes

V, D, F, L, P = 100, 8, 16, 2, 20  # vocabulary, hidden, feed-forward, layers, positions


def projection(d_in: int, d_out: int) -> int:
    return d_in * d_out + d_out  # a weight and a bias


def bert_by_hand(pooler: bool) -> dict[str, int]:
    square = projection(D, D)
    return {"embeddings": V * D + P * D + 2 * D,  # token, position, two segments
            "attention_q": L * square, "attention_k": L * square, "attention_v": L * square, "attention_o": L * square,
            "feed_forward": L * (projection(D, F) + projection(F, D)),
            "layernorm": (1 + 2 * L) * 2 * D,  # the embeddings' and two per layer, each a scale and a shift
            "heads": square if pooler else 0}


def total(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def test_bert_counts_match_a_hand_count_and_sum_to_the_total():
    model = BertModel(BertConfig(vocab_size=V, hidden_size=D, num_hidden_layers=L, num_attention_heads=2,
                                 intermediate_size=F, max_position_embeddings=P, type_vocab_size=2))
    counts = parameter_counts(model)
    assert counts == bert_by_hand(pooler=True)
    assert sum(counts.values()) == total(model)
    assert parameter_bytes(model) == 4 * total(model)  # float32


def test_a_tied_masked_lm_head_counts_the_token_table_once():
    model = BertForMaskedLM(BertConfig(vocab_size=V, hidden_size=D, num_hidden_layers=L, num_attention_heads=2,
                                       intermediate_size=F, max_position_embeddings=P, type_vocab_size=2))
    counts = parameter_counts(model)
    # The head: a D x D transform, its LayerNorm and the output bias over the vocabulary; its matrix is the token table.
    assert counts["heads"] == projection(D, D) + V
    assert counts["layernorm"] == bert_by_hand(False)["layernorm"] + 2 * D
    assert sum(counts.values()) == total(model)


def test_gpt2_fused_qkv_is_split_in_three():
    model = GPT2Model(GPT2Config(vocab_size=V, n_embd=D, n_layer=L, n_head=2, n_positions=P))
    counts = parameter_counts(model)
    assert counts["attention_q"] == counts["attention_k"] == counts["attention_v"] == L * projection(D, D)
    assert counts["feed_forward"] == L * (projection(D, 4 * D) + projection(4 * D, D))
    assert counts["layernorm"] == (2 * L + 1) * 2 * D  # two per block and the final one
    assert counts["embeddings"] == V * D + P * D and counts["heads"] == 0
    assert sum(counts.values()) == total(model)


def test_mpnet_relative_bias_table_is_an_embedding():
    heads, buckets = 2, 32
    model = MPNetModel(MPNetConfig(vocab_size=V, hidden_size=D, num_hidden_layers=L, num_attention_heads=heads,
                                   intermediate_size=F, max_position_embeddings=P,
                                   relative_attention_num_buckets=buckets))
    counts = parameter_counts(model)
    assert counts["embeddings"] == V * D + P * D + buckets * heads  # no segments; the bias table per bucket, head
    assert counts["attention_o"] == L * projection(D, D) and counts["heads"] == projection(D, D)  # the pooler
    assert sum(counts.values()) == total(model)


def test_tiny_transformer_by_hand_and_its_lengths():
    c = TinyConfig()
    model = TinyTransformer(c)
    counts = parameter_counts(model)
    d = c.d_model
    assert counts == {"embeddings": 10 * d, "attention_q": c.layers * projection(d, d),
                      "attention_k": c.layers * projection(d, d), "attention_v": c.layers * projection(d, d),
                      "attention_o": c.layers * projection(d, d),
                      "feed_forward": c.layers * (projection(d, c.d_ff) + projection(c.d_ff, d)),
                      "layernorm": c.layers * 2 * 2 * d, "heads": projection(d, 10)}
    assert sum(counts.values()) == total(model)
    sizes = tiny_sizes(lengths=(16, 128), runs=1)
    assert sizes.forward_ms["16"] > 0 and sizes.forward_ms["128"] is None  # its sinusoidal table holds 64
    assert (sizes.d_k, sizes.total) == (d // c.heads, total(model))


def test_cli_prints_each_models_row_and_says_how_to_install_a_missing_one(capsys, tiny_model_dir, monkeypatch):
    from vizcore.model import install

    monkeypatch.setattr(install, "installed_folder", lambda spec=None: None)
    code = main(["sizes", "--model", str(tiny_model_dir("mpnet")), "--model", "all-mpnet-base-v2",
                 "--model", "tiny-transformer", "--lengths", "16", "80", "--runs", "1"])
    printed = capsys.readouterr()
    out = json.loads(printed.out)
    assert code == 0 and out["components"] == list(COMPONENTS) and out["lengths"] == [16, 80]
    progress = [line for line in printed.err.splitlines() if line.startswith("sizes:")]  # stdout is the JSON
    assert progress[2] == "sizes: 2/3 all-mpnet-base-v2: not installed" and progress[-1].startswith(
        "sizes: 3/3 tiny-transformer: done in ")
    mpnet, missing, tiny = out["models"]
    assert mpnet["total"] == sum(mpnet["parameters"].values()) and (mpnet["layers"], mpnet["heads"]) == (2, 4)
    assert mpnet["forward_ms"]["16"] > 0 and mpnet["forward_ms"]["80"] is None  # over its 64 positions
    assert mpnet["measured_at"] and mpnet["threads"] == 1 and mpnet["memory_bytes"] == 4 * mpnet["total"]
    assert missing == {"model": "all-mpnet-base-v2", "installed": False,
                       "install": missing["install"]} and "install-model all-mpnet-base-v2" in missing["install"]
    assert tiny["model"] == "tiny-transformer" and tiny["forward_ms"]["80"] is None


@pytest.mark.parametrize(("argv", "message"), [(["--lengths", "0"], "Lengths must be 1 to 4096"),
                                               (["--runs", "0"], "--runs must be 1 to 50"),
                                               (["--model", "/no/such/folder"], "does not exist")])
def test_cli_bad_input_is_one_line(capsys, argv, message):
    assert main(["sizes", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: python -m vizcore sizes:") and message in err[0]
