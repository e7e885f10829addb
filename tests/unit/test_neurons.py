"""Feed-forward neurons: the captured activations equal the feed-forward's first dense layer and activation
applied by hand to what enters it (read with a hook of the test's own); the corpus job's streaming top-k per
neuron equals a brute-force top-k over every token of the corpus; NMF recovers a known non-negative low-rank
matrix without its error ever increasing; search counts and the CLI's JSON follow."""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

from vizcore.cli import main
from vizcore.corpus.engine import Settings, make_worker, run_corpus
from vizcore.errors import VizError
from vizcore.model.loading import load_model
from vizcore.model.run import Capture, run
from vizcore.neurons.corpus import join_spans, load_neurons, search_token
from vizcore.neurons.nmf import nmf
from vizcore.neurons.sentence import from_run, sentence_factors, strongest
from vizcore.neurons.topk import top_k_rows

TEXT = "The cat sat on the mat, because it was tired."
LINES = ["The cat sat on the mat.", "", "Dogs bark at the mailman every day.", "Go.",
         "She gave him the book, and he read it twice!", " ".join(["word"] * 80) + ".",
         "Unbelievably, the dog didn't bite anyone.", "The old man the boats."]
K = 3


def gelu(x):
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


def gelu_tanh(x):  # GPT-2's gelu_new
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


# What enters each family's feed-forward, its first dense layer and its activation, written out here.
FAMILIES = {
    "bert": ("encoder.layer.{}.attention", "encoder.layer.{}.intermediate.dense", gelu, False),
    "distilbert": ("transformer.layer.{}.sa_layer_norm", "transformer.layer.{}.ffn.lin1", gelu, False),
    "gpt2": ("h.{}.ln_2", "h.{}.mlp.c_fc", gelu_tanh, True),  # Conv1D: x @ W + b
}


@pytest.mark.parametrize("kind", list(FAMILIES))
def test_captured_neurons_equal_the_first_dense_layer_and_activation_by_hand(tiny_model_dir, kind):
    loaded = load_model(str(tiny_model_dir(kind)), device="cpu")
    entering, dense, act, conv = FAMILIES[kind]
    base = loaded.model.base_model
    inputs = {}
    before = sum(len(m._forward_hooks) for m in loaded.model.modules())  # transformers keeps hooks of its own
    handles = [base.get_submodule(entering.format(l)).register_forward_hook(
        lambda m, i, o, l=l: inputs.__setitem__(l, (o[0] if isinstance(o, tuple) else o).detach()))
        for l in range(loaded.num_layers)]
    try:
        record = run(loaded, TEXT, capture=Capture(hidden=False, neurons=True))
    finally:
        for handle in handles:
            handle.remove()
    assert record.neurons.shape[:2] == (loaded.num_layers, len(record.tokens))
    for l in range(loaded.num_layers):
        layer = base.get_submodule(dense.format(l))
        weight = layer.weight if conv else layer.weight.T
        expected = act(inputs[l][0] @ weight + layer.bias).numpy()
        np.testing.assert_allclose(record.neurons[l], expected, atol=1e-5)
    assert sum(len(m._forward_hooks) for m in loaded.model.modules()) == before  # none of ours left behind


@pytest.fixture(scope="module")
def neuron_run(tiny_bert_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("neurons")
    (folder / "c.txt").write_text("\n".join(LINES) + "\n", encoding="utf-8")
    worker = make_worker(str(tiny_bert_dir), "cpu", syntax=False)
    settings = Settings(input=str(folder / "c.txt"), out=str(folder / "out"), model=worker.loaded.name, device="cpu",
                        batch_size=2, shard_size=3, neurons=K)  # 3 shards of 1-2 batches: both merges
    summary = run_corpus(settings, worker=worker)
    return worker.loaded, folder / "out", summary


def brute_force(loaded) -> dict[tuple[int, int], list[tuple[float, int, int]]]:
    """Every (activation, sentence, position) of every neuron, one sentence at a time, largest first."""
    every: dict[tuple[int, int], list] = {}
    for sentence_id, line in enumerate(LINES):
        if not line.strip():
            continue
        record = run(loaded, line, capture=Capture(hidden=False, neurons=True))
        for l in range(record.neurons.shape[0]):
            for t in np.flatnonzero(~record.special_mask):
                for n, value in enumerate(record.neurons[l, t]):
                    every.setdefault((l, n), []).append((float(value), sentence_id, int(t)))
    return {key: sorted(hits, key=lambda h: -h[0]) for key, hits in every.items()}


def test_the_streaming_top_k_equals_a_brute_force_top_k_over_every_token(neuron_run):
    loaded, out, summary = neuron_run
    assert summary["complete"] and summary["neurons"] == K and summary["shards"] == 3
    table = load_neurons(out)
    expected = brute_force(loaded)
    assert len(table) == len(expected) * K
    for (l, n), hits in expected.items():
        mine = table[(table["layer"] == l) & (table["neuron"] == n)].sort_values("rank")
        # a padded batch and a sentence alone differ by float rounding: values within 1e-5
        np.testing.assert_allclose(mine["activation"], [h[0] for h in hits[:K]], atol=1e-5)
        boundary = hits[K - 1][0]  # a tie at the k-th value (within rounding) may keep either token
        sure = {(s, p) for v, s, p in hits if v > boundary + 1e-5}
        possible = {(s, p) for v, s, p in hits if v >= boundary - 1e-5}
        chosen = set(zip(mine["sentence_id"], mine["position"]))
        assert sure <= chosen <= possible


def test_each_hit_carries_its_token_and_context(neuron_run):
    loaded, out, _ = neuron_run
    table = load_neurons(out)
    for row in table.sample(20, random_state=0).itertuples():
        tokens = run(loaded, LINES[row.sentence_id]).tokens
        assert row.token == tokens[row.position]
        word = row.token.removeprefix("##")
        assert word in row.context and "[CLS]" not in row.context and "[SEP]" not in row.context
        assert row.context[row.start:row.end] == word


def test_search_counts_the_neurons_whose_examples_are_the_token(neuron_run):
    table = load_neurons(neuron_run[1])
    token = table["token"].value_counts().index[0]
    found = search_token(table, token.upper(), top=1000)
    mine = table[table["token"] == token]
    counts = mine.groupby(["layer", "neuron"]).size()
    assert dict(zip(zip(found["layer"], found["neuron"]), found["hits"])) == counts.to_dict()
    assert list(found["hits"]) == sorted(found["hits"], reverse=True)
    first = found.iloc[0]
    assert first["max_activation"] == pytest.approx(mine[(mine["layer"] == first["layer"]) & (
        mine["neuron"] == first["neuron"])]["activation"].max())
    assert search_token(table, "zzzqqq").empty
    with pytest.raises(VizError, match="one token"):
        search_token(table, "two words")


def test_cli_top_and_search_read_the_run_with_0_based_indices(neuron_run, capsys):
    _, out, _ = neuron_run
    table = pq.read_table(out / "neurons.parquet").to_pandas()
    assert main(["neurons", "--layer", "2", "--neuron", "5", "--corpus", str(out), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    rows = table[(table["layer"] == 1) & (table["neuron"] == 4)].sort_values("rank")
    assert (data["layer"], data["neuron"], data["k"]) == (1, 4, K)
    assert [h["activation"] for h in data["top"]] == pytest.approx(rows["activation"].tolist())
    assert [h["sentence_id"] for h in data["top"]] == rows["sentence_id"].tolist()
    assert set(data["top"][0]) >= {"sentence_id", "token", "position", "activation", "context"}
    assert main(["neurons", "search", "--token", rows["token"].iloc[0], "--corpus", str(out)]) == 0
    assert {"layer": 1, "neuron": 4} in [{"layer": n["layer"], "neuron": n["neuron"]}
                                         for n in json.loads(capsys.readouterr().out)["neurons"]]
    assert main(["neurons", "--layer", "0", "--neuron", "1", "--corpus", str(out)]) == 2
    assert "--layer counts from 1" in capsys.readouterr().err
    assert main(["neurons", "--layer", "1", "--neuron", "99", "--corpus", str(out)]) == 2
    assert "Neuron 99 does not exist" in capsys.readouterr().err


def test_cli_sentence_and_nmf(tiny_bert_dir, capsys):
    model = str(tiny_bert_dir)
    assert main(["neurons", "sentence", "--text", TEXT, "--layer", "2", "--neuron", "7", "--model", model]) == 0
    data = json.loads(capsys.readouterr().out)
    record = run(load_model(model, device="cpu"), TEXT, capture=Capture(hidden=False, neurons=True))
    assert data["tokens"] == record.tokens and (data["layer"], data["neuron"]) == (1, 6)
    np.testing.assert_allclose(data["activations"], record.neurons[1, :, 6], atol=1e-6)
    assert main(["neurons", "nmf", "--text", TEXT, "--layer", "1", "--factors", "3", "--model", model]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["factors"]) == 3 and len(data["factors"][0]) == len(record.tokens) - 2  # no [CLS], [SEP]
    assert main(["neurons", "nmf", "--model", model]) == 2
    assert "needs --text" in capsys.readouterr().err


def test_strongest_and_factors_of_a_sentence(tiny_bert_dir):
    record = run(load_model(str(tiny_bert_dir), device="cpu"), TEXT, capture=Capture(hidden=False, neurons=True))
    s = from_run(record)
    best = strongest(s, top=5)
    words = record.neurons[:, ~record.special_mask]
    assert best[0]["activation"] == pytest.approx(words.max())
    assert [b["activation"] for b in best] == sorted((b["activation"] for b in best), reverse=True)
    f = sentence_factors(s, 4)  # every layer side by side, as Ecco's default
    assert f.strengths.shape == (4, len(s.tokens) - 2) and (f.strengths >= 0).all()
    matrix = np.maximum(record.neurons[:, ~record.special_mask], 0).transpose(1, 0, 2).reshape(len(f.tokens), -1)
    assert matrix.min() >= 0 and f.relative_error < 1
    with pytest.raises(VizError, match="factors"):
        sentence_factors(s, 50)


def test_nmf_recovers_a_known_low_rank_matrix_and_its_error_never_increases():
    rng = np.random.default_rng(3)
    w = rng.random((30, 3)) * (rng.random((30, 3)) < 0.5)  # sparse, so the factors are identifiable
    w[:3] = np.eye(3)
    h = rng.random((3, 40)) * (rng.random((3, 40)) < 0.6)
    h[:, :3] = np.eye(3)
    result = nmf(w @ h, 3, iterations=3000, seed=0)
    assert np.linalg.norm(w @ h - result.strengths @ result.components) / np.linalg.norm(w @ h) < 1e-2
    assert (np.diff(result.errors) <= 1e-9 * result.errors[0]).all()
    unit = lambda m: m / np.linalg.norm(m, axis=0, keepdims=True)  # noqa: E731
    match = unit(w).T @ unit(result.strengths)  # cosine of each true factor with each found one
    assert (match.max(axis=1) > 0.99).all()
    again = nmf(w @ h, 3, iterations=3000, seed=0)
    np.testing.assert_array_equal(again.strengths, result.strengths)
    with pytest.raises(VizError, match="non-negative"):
        nmf(-np.ones((3, 3)), 2)


@pytest.mark.parametrize("tokens, text", [
    (["", "un", "##bel", "##ievable", "dog", "!", ""], "unbelievable dog !"),
    (["<s>", "Ġthe", "Ġun", "believ", "able", "Ġdog", "</s>"], "<s> the unbelievable dog</s>"),
])
def test_word_pieces_join_into_text_with_each_token_s_span(tokens, text):
    joined, spans = join_spans(tokens)
    assert joined == text
    for token, (start, end) in zip(tokens, spans):
        assert joined[start:end] == token.removeprefix("##").lstrip("Ġ▁")


@pytest.mark.parametrize("equal_counts", [True, False])
def test_top_k_rows_equal_a_plain_sort_of_every_row(equal_counts):
    rng = np.random.default_rng(5)
    unit = np.repeat(np.arange(7), 30) if equal_counts else rng.integers(0, 7, 200)
    rng.shuffle(unit)
    activation = rng.integers(0, 6, len(unit)).astype(np.float32)  # many ties
    sentence, position = rng.integers(0, 9, len(unit)), rng.integers(0, 5, len(unit))
    rows = sorted(range(len(unit)), key=lambda i: (unit[i], -activation[i], sentence[i], position[i]))
    expected = [i for i in rows if sum(unit[j] == unit[i] for j in rows[:rows.index(i)]) < 4]
    assert top_k_rows(unit, activation, sentence, position, 4).tolist() == expected
