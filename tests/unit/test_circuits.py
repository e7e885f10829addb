"""Circuits from the weights (Elhage et al. 2021): QK pairs, OV copying and composition scores equal the weight
products formed directly here, from the state dict of a tiny random BERT and GPT-2 (fused Conv1D Q|K|V)."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from vizcore.circuits import cli as circuits_cli
from vizcore.circuits.circuits import DEFAULT_TOKENS, FREQUENCY_TEXT, MAX_TOP, circuits, qk_top
from vizcore.cli import main
from vizcore.model.loading import load_model

COUNT = 60  # frequent tokens: the OV matrix is formed whole, N x N, and its eigenvalues taken


@pytest.fixture(scope="module", params=["bert", "gpt2"])
def family(request, tiny_model_dir):
    folder = tiny_model_dir(request.param)
    return request.param, folder, load_model(str(folder), device="cpu")


def frequent(tokenizer, count: int) -> list[int]:
    counts = Counter()
    for line in FREQUENCY_TEXT.read_text(encoding="utf-8").splitlines():
        if line.strip():
            counts.update(tokenizer(line, add_special_tokens=False)["input_ids"])
    return sorted(counts, key=lambda i: (-counts[i], i))[:count]


def matrices(kind: str, loaded) -> dict:
    """Per layer and head W_Q, W_K, W_V (d, d_head) and W_O (d_head, d), row convention, from the state dict."""
    state = {k: v.double().numpy() for k, v in loaded.model.state_dict().items()}
    heads, layers = loaded.num_heads, loaded.num_layers
    if kind == "bert":
        embeddings = state["embeddings.word_embeddings.weight"]
        d = embeddings.shape[1]
        part = {name: [state[f"encoder.layer.{l}.attention.{path}.weight"].T for l in range(layers)]
                for name, path in (("q", "self.query"), ("k", "self.key"), ("v", "self.value"), ("o", "output.dense"))}
    else:
        embeddings = state["wte.weight"]
        d = embeddings.shape[1]
        fused = [state[f"h.{l}.attn.c_attn.weight"] for l in range(layers)]  # (d, 3 d): Q | K | V
        part = {"q": [w[:, :d] for w in fused], "k": [w[:, d:2 * d] for w in fused],
                "v": [w[:, 2 * d:] for w in fused], "o": [state[f"h.{l}.attn.c_proj.weight"] for l in range(layers)]}
    k = d // heads
    cols = [slice(h * k, (h + 1) * k) for h in range(heads)]
    return {"E": embeddings, "d_head": k,
            **{name: [[w[:, c] for c in cols] for w in part[name]] for name in "qkv"},
            "o": [[w[c, :] for c in cols] for w in part["o"]]}


def test_frequent_tokens_qk_pairs_and_ov_copying_are_the_weight_products(family):
    kind, _, loaded = family
    m = matrices(kind, loaded)
    ids = frequent(loaded.tokenizer, COUNT)
    result = circuits(loaded, COUNT)
    assert result.token_ids.tolist() == ids
    E = m["E"][ids]
    names = loaded.tokenizer.convert_ids_to_tokens(ids)
    for layer in range(loaded.num_layers):
        for head in range(loaded.num_heads):
            ov = E @ m["v"][layer][head] @ m["o"][layer][head] @ E.T  # (N, N): token -> logit of each token
            eigenvalues = np.linalg.eigvals(ov)
            assert result.ov_copying[layer, head] == pytest.approx(
                eigenvalues.sum().real / np.abs(eigenvalues).sum(), abs=1e-6)
    layer, head = loaded.num_layers - 1, 1
    scores = E @ m["q"][layer][head] @ m["k"][layer][head].T @ E.T / np.sqrt(m["d_head"])
    best = np.argsort(-scores, axis=None)[:5]
    shown = qk_top(loaded, result.token_ids, layer, head, top=5)
    assert [(p["query_token"], p["key_token"]) for p in shown] == \
        [(names[q], names[k]) for q, k in zip(*np.unravel_index(best, scores.shape))]
    np.testing.assert_allclose([p["score"] for p in shown], np.sort(scores, axis=None)[::-1][:5], rtol=1e-6)


def test_composition_scores_are_the_normalised_frobenius_norms_of_the_products(family):
    kind, _, loaded = family
    m = matrices(kind, loaded)
    result = circuits(loaded, COUNT)

    def score(a, b):
        return np.linalg.norm(a @ b) / (np.linalg.norm(a) * np.linalg.norm(b))

    heads = loaded.num_heads
    for layer in range(loaded.num_layers - 1):
        for a in range(heads):
            ov_a = m["v"][layer][a] @ m["o"][layer][a]  # (d, d)
            for b in range(heads):
                qk_b = m["q"][layer + 1][b] @ m["k"][layer + 1][b].T
                ov_b = m["v"][layer + 1][b] @ m["o"][layer + 1][b]
                expected = {"q": score(ov_a, qk_b), "k": score(ov_a, qk_b.T), "v": score(ov_a, ov_b)}
                for name, value in expected.items():
                    assert result.composition[name][layer, a, b] == pytest.approx(value, rel=1e-6), (name, a, b)
    assert result.composition["q"].shape == (loaded.num_layers - 1, heads, heads)


def test_cli_prints_one_heads_circuits(capsys, family):
    kind, folder, loaded = family
    code = main(["circuits", "--layer", "2", "--head", "3", "--top", "4", "--tokens", str(COUNT),
                 "--model", str(folder), "--device", "cpu", "--format", "json"])
    payload = json.loads(capsys.readouterr().out)
    assert code == 0
    m, ids = matrices(kind, loaded), frequent(loaded.tokenizer, COUNT)
    assert {"model", "layer", "head", "qk_top", "ov_copying"} <= set(payload)
    assert (payload["model"], payload["layer"], payload["head"]) == (str(folder), 1, 2)  # 0-based in the JSON
    assert len(payload["qk_top"]) == 4 and set(payload["qk_top"][0]) == {"query_token", "key_token", "score"}
    E = m["E"][ids]
    eigenvalues = np.linalg.eigvals(E @ m["v"][1][2] @ m["o"][1][2] @ E.T)
    assert payload["ov_copying"] == pytest.approx(eigenvalues.sum().real / np.abs(eigenvalues).sum(), abs=1e-6)
    scores = E @ m["q"][1][2] @ m["k"][1][2].T @ E.T / np.sqrt(m["d_head"])
    assert payload["qk_top"][0]["score"] == pytest.approx(scores.max(), rel=1e-6)
    assert len(payload["composition_from_previous"]["v"]) == loaded.num_heads
    assert payload["frequent_tokens"] == COUNT


@pytest.mark.parametrize(("argv", "part"), [
    (["--layer", "0", "--head", "1"], "--layer counts from 1, not 0."),
    (["--layer", "3", "--head", "1"], "Layer 3, head 1 does not exist"),
    (["--layer", "1", "--head", "1", "--top", "500"], "--top must be from 1 to 200"),
])
def test_cli_refuses_a_head_that_does_not_exist_in_one_line(capsys, tiny_model_dir, argv, part):
    code = main(["circuits", *argv, "--model", str(tiny_model_dir("bert")), "--device", "cpu"])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert captured.err.startswith("error: python -m vizcore circuits:") and part in captured.err


def test_cli_limits_are_the_computations():
    assert (circuits_cli.DEFAULT_TOKENS, circuits_cli.MAX_TOP) == (DEFAULT_TOKENS, MAX_TOP)


def test_the_default_model_is_the_embedded_one():
    from vizcore.cli import build_parser
    from vizcore.model.catalog import DEFAULT_MODEL

    assert build_parser().parse_args(["circuits", "--layer", "1", "--head", "1"]).model == DEFAULT_MODEL
