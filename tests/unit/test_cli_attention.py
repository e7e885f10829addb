"""head-stats and aggregate commands: JSON shapes, values against an independent computation, errors."""

import json

import numpy as np
import pytest

from vizcore.attention.extract import extract_attention
from vizcore.cli import main
from vizcore.model.loading import load_model

TEXT = "The cat sat on the mat."


@pytest.fixture(scope="module")
def tiny(tiny_bert_dir):
    return str(tiny_bert_dir), extract_attention(load_model(str(tiny_bert_dir), device="cpu"), TEXT)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err


def test_head_stats_json_matches_a_direct_computation(capsys, tiny):
    folder, result = tiny
    code, data, _ = run(capsys, "head-stats", "--text", TEXT, "--model", folder, "--device", "cpu")
    assert code == 0 and data["shape"] == "[layer][head]"
    a = result.attention.astype(np.float64)
    np.testing.assert_allclose(data["statistics"]["max_weight"], a.max(-1).mean(-1), atol=1e-7)
    np.testing.assert_allclose(data["statistics"]["cls"], a[..., 0].mean(-1), atol=1e-7)
    np.testing.assert_allclose(data["statistics"]["next"],
                               np.mean([a[..., q, q + 1] for q in range(a.shape[-1] - 1)], axis=0), atol=1e-7)


def test_aggregate_rollout_and_mean(capsys, tiny):
    folder, result = tiny
    code, data, _ = run(capsys, "aggregate", "--text", TEXT, "--model", folder, "--kind", "rollout")
    assert code == 0 and data["shape"] == "[layer][query][key]" and data["tokens"] == result.tokens
    eye = np.eye(len(result.tokens))
    mixed = [0.5 * result.attention[l].astype(np.float64).mean(0) + 0.5 * eye for l in range(2)]
    np.testing.assert_allclose(data["values"][1], mixed[1] @ mixed[0], atol=1e-6)
    code, data, _ = run(capsys, "aggregate", "--text", TEXT, "--model", folder, "--kind", "mean", "--hide-special")
    assert "[CLS]" not in data["tokens"]
    np.testing.assert_allclose(np.sum(data["values"], -1), 1.0, atol=1e-6)


def test_aggregate_flow_for_chosen_queries(capsys, tiny):
    folder, result = tiny
    code, data, _ = run(capsys, "aggregate", "--text", TEXT, "--model", folder, "--kind", "flow", "--query", "0,2")
    assert code == 0 and data["queries"] == [0, 2] and data["shape"] == "[query][key]"
    values = np.asarray(data["values"])
    assert values[1].sum() == 0 and (values[0] > 0).all() and (values[0] <= 1 + 1e-9).all()


@pytest.mark.parametrize("argv, message", [
    (["head-stats", "--text", "  "], "empty"),
    (["aggregate", "--text", "hi", "--model", "/no/such/folder"], "does not exist"),
    (["aggregate", "--text", "hi", "--kind", "flow", "--query", "x"], "--query"),
    (["aggregate", "--text", "hi", "--kind", "flow", "--query", "99"], "between 0 and"),
    (["aggregate", "--text", "word " * 50, "--kind", "flow"], "limited to 40 tokens"),
])
def test_errors_are_one_line_and_non_zero(capsys, tiny, argv, message):
    folder, _ = tiny
    if "--model" not in argv:
        argv = [*argv, "--model", folder]
    code, _, err = run(capsys, *argv)
    assert code != 0 and message in err and err.count("\n") == 1


def test_attention_keeps_one_layer_and_one_head_counted_from_1_and_says_so_from_0(capsys, tiny):
    folder, result = tiny
    code, data, _ = run(capsys, "attention", "--text", TEXT, "--model", folder, "--layer", "2", "--head", "3")
    assert code == 0 and data["layers"] == [1] and data["heads"] == [2]
    assert data["shape"] == "[layer][head][query][key]" and data["num_layers"] == result.num_layers
    np.testing.assert_allclose(data["attention"], result.attention[1:2, 2:3], atol=1e-7)
    code, data, _ = run(capsys, "attention", "--text", TEXT, "--model", folder, "--head", str(result.num_heads))
    assert data["layers"] == list(range(result.num_layers)) and data["heads"] == [result.num_heads - 1]
    np.testing.assert_allclose(data["attention"], result.attention[:, -1:], atol=1e-7)
    code, data, _ = run(capsys, "attention", "--text", TEXT, "--model", folder)
    assert data["heads"] == list(range(result.num_heads))
    np.testing.assert_allclose(data["attention"], result.attention, atol=1e-7)


@pytest.mark.parametrize(("flag", "count"), [("--layer", "layers"), ("--head", "heads")])
def test_a_layer_or_head_the_model_lacks_names_the_command_and_the_range(capsys, tiny, flag, count):
    folder, result = tiny
    top = result.num_layers if count == "layers" else result.num_heads
    code, _, err = run(capsys, "attention", "--text", TEXT, "--model", folder, flag, str(top + 1))
    assert code == 2 and err.startswith(f"error: python -m vizcore attention: {flag} must be from 1 to {top} ")
    assert f"has {top} {count}" in err


@pytest.mark.parametrize("argv, message", [
    (["attention", "--text", TEXT, "--layer", "9"], "--layer must be from 1 to 2"),
    (["attention", "--text", TEXT, "--head", "5"], "--head must be from 1 to 4"),
    (["ablate", "--text", "a [MASK] b", "--heads", "99.5"],
     "Layer 99, head 5 does not exist (99.5): the model has no layer 99 (it has layers 1-2) and head 5"),
    (["circuits", "--layer", "3", "--head", "1"], "Layer 3, head 1 does not exist"),
])
def test_layers_and_heads_are_checked_against_the_configuration_before_the_weights_load(capsys, tiny, monkeypatch,
                                                                                         argv, message):
    from vizcore.model import loading

    def never(*args, **kwargs):
        raise AssertionError("the weights were loaded")

    monkeypatch.setattr(loading, "_load_model", never)
    code, _, err = run(capsys, *argv, "--model", tiny[0])
    assert code == 2 and message in err and "weights were loaded" not in err
