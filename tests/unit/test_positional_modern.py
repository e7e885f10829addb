"""Rotary, ALiBi and learned relative biases (vizcore/positional/modern.py) against closed forms written here,
on tiny models (BERT, and MPNet for its relative bias through the one forward core), and the CLI's kinds."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from transformers import AutoModel
from transformers.models.mpnet.modeling_mpnet import MPNetEncoder

from vizcore.cli import main
from vizcore.errors import VizError
from vizcore.model.catalog import BASE_MODEL
from vizcore.model.loading import load_model
from vizcore.model.run import Capture, run
from vizcore.positional import modern
from vizcore.positional.figures import alibi_slopes_figure, relative_bias_figure, rotary_offset_figure
from vizcore.positional.modern import (
    alibi_bias,
    alibi_on_head,
    alibi_slopes,
    pre_softmax_scores,
    relative_bias_from_folder,
    relative_bias_of,
    relative_buckets,
    rotary_check,
    rotate,
)

TEXT = "The quick brown fox jumps over the lazy dog near the river bank."


def rotation(vector: np.ndarray, position: int) -> np.ndarray:
    """RoPE written out: one 2 x 2 rotation matrix per pair, θ_i = 10000^(-2i/d)."""
    d = len(vector)
    out = np.empty(d)
    for i in range(d // 2):
        angle = position * 10000 ** (-2 * i / d)
        block = np.array([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]])
        out[2 * i:2 * i + 2] = block @ vector[2 * i:2 * i + 2]
    return out


def paper_slopes(n: int) -> list[float]:
    """Press et al.'s get_slopes, as in their repository."""
    def power_of_2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        return [start * start ** i for i in range(n)]

    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + paper_slopes(2 * closest)[0::2][:n - closest]


# ---- rotary ------------------------------------------------------------------------------------------------

def test_rotate_is_a_rotation_of_each_pair_by_m_theta():
    vectors = np.random.default_rng(3).normal(size=(5, 12))
    positions = np.array([0, 1, 7, 40, 511])
    rotated = rotate(vectors, positions)
    for row, m in enumerate(positions):
        np.testing.assert_allclose(rotated[row], rotation(vectors[row], m), atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(rotated, axis=1), np.linalg.norm(vectors, axis=1), atol=1e-12)
    np.testing.assert_array_equal(rotated[0], vectors[0])  # position 0: no turn


def test_rotary_scores_depend_only_on_the_offset():
    check = rotary_check(24, 16, seed=5)
    q, k = np.random.default_rng(5).normal(size=(2, 16))
    for m, n in [(0, 0), (3, 1), (1, 3), (23, 0), (10, 17)]:
        expected = rotation(q, m) @ rotation(k, n)
        assert check.scores[m, n] == pytest.approx(expected, abs=1e-12)
        for shift in (1, 4):  # the same offset elsewhere: the same score
            if max(m, n) + shift < 24:
                assert check.scores[m + shift, n + shift] == pytest.approx(expected, abs=1e-12)
        assert check.by_offset[m - n + 23] == pytest.approx(expected, abs=1e-12)
    assert check.max_diagonal_spread < 1e-12 and check.max_closed_form_error < 1e-12
    assert check.unrotated == pytest.approx(q @ k) and check.by_offset[23] == pytest.approx(q @ k)
    assert np.ptp(check.by_offset) > 0.5  # the offset does matter: not a constant
    np.testing.assert_allclose(check.frequencies, [10000 ** (-2 * i / 16) for i in range(8)])


@pytest.mark.parametrize(("n", "d", "message"), [(0, 8, "1 to 512"), (600, 8, "got 600"), (8, 7, "even number"),
                                                 (8, 0, "even number"), ("x", 8, "whole number")])
def test_rotary_bad_sizes(n, d, message):
    with pytest.raises(VizError, match=message):
        rotary_check(n, d)


# ---- ALiBi ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 2, 3, 4, 6, 8, 12, 16, 20, 32])
def test_alibi_slopes_are_the_papers(n):
    np.testing.assert_allclose(alibi_slopes(n), paper_slopes(n), rtol=1e-13)  # theirs multiplies repeatedly


def test_alibi_slopes_of_eight_heads_are_halves_and_the_bias_is_minus_slope_times_distance():
    np.testing.assert_array_equal(alibi_slopes(8), [1 / 2, 1 / 4, 1 / 8, 1 / 16, 1 / 32, 1 / 64, 1 / 128, 1 / 256])
    slopes = alibi_slopes(4)
    bias = alibi_bias(slopes, 6)
    causal = alibi_bias(slopes, 6, causal=True)
    for h in range(4):
        for i in range(6):
            for j in range(6):
                assert bias[h, i, j] == -slopes[h] * abs(i - j)
                assert causal[h, i, j] == (-math.inf if j > i else -slopes[h] * (i - j))
    assert not np.signbit(bias[:, range(6), range(6)]).any()  # 0, not -0


@pytest.mark.parametrize("heads", [0, 257, "many"])
def test_alibi_bad_heads(heads):
    with pytest.raises(VizError, match="number of heads"):
        alibi_slopes(heads)


@pytest.fixture(scope="module")
def tiny_bert(tiny_bert_dir):
    return load_model(str(tiny_bert_dir), device="cpu")


@pytest.fixture(scope="module")
def tiny_mpnet(tiny_model_dir):
    return load_model(str(tiny_model_dir("mpnet")), device="cpu")


def test_alibi_on_a_head_reweights_the_models_own_attention(tiny_bert):
    recorded = run(tiny_bert, TEXT, capture=Capture(hidden=False, qkv=True))
    result = alibi_on_head(tiny_bert, recorded, 1, 2)
    weights = recorded.attention[1, 2].astype(np.float64)
    assert result.recompute_error < 1e-5 and result.slope == 2 ** (-8 * 3 / 4)
    t = len(recorded.tokens)
    distance = np.abs(np.arange(t)[:, None] - np.arange(t)[None, :])
    # softmax(s + b) = w·e^b / Σ w·e^b, since softmax(s) = w: from the model's recorded attention alone
    expected = weights * np.exp(-result.slope * distance)
    np.testing.assert_allclose(result.biased, expected / expected.sum(1, keepdims=True), atol=1e-5)
    assert result.biased_mean_distance < result.mean_distance
    assert result.mean_distance == pytest.approx((weights * distance).sum(1).mean(), abs=1e-5)
    with pytest.raises(VizError, match="Head 5 does not exist"):
        alibi_on_head(tiny_bert, recorded, 0, 4)


def test_mpnet_runs_through_the_forward_core_and_its_scores_include_the_relative_bias(tiny_mpnet, tiny_model_dir,
                                                                                    monkeypatch):
    recorded = run(tiny_mpnet, TEXT, capture=Capture(qkv=True, head_outputs=True))
    reference = AutoModel.from_pretrained(tiny_model_dir("mpnet"), attn_implementation="eager").eval()
    with torch.no_grad():
        out = reference(**tiny_mpnet.tokenizer(TEXT, return_tensors="pt"), output_attentions=True,
                        output_hidden_states=True)
    np.testing.assert_allclose(recorded.attention, torch.stack([a[0] for a in out.attentions]).numpy(), atol=1e-6)
    np.testing.assert_allclose(recorded.hidden_states, torch.stack([h[0] for h in out.hidden_states]).numpy(),
                               atol=1e-5)
    assert recorded.head_outputs.shape == (2, 4, len(recorded.tokens), 8)
    for layer in range(2):
        weights = modern.softmax(pre_softmax_scores(tiny_mpnet, recorded, layer))
        np.testing.assert_allclose(weights, recorded.attention[layer], atol=1e-5)
    monkeypatch.setattr(modern, "model_relative_bias", lambda loaded: None)  # without it: not the model's
    assert np.abs(modern.softmax(pre_softmax_scores(tiny_mpnet, recorded, 0)) - recorded.attention[0]).max() > 1e-2


# ---- learned relative bias ----------------------------------------------------------------------------------

def test_buckets_match_the_closed_form_and_transformers():
    hand = {0: 0, 1: 1, 7: 7, 8: 8, 16: 8 + math.floor(8 * math.log(2) / math.log(16)), 127: 15, 128: 15, 500: 15,
            -1: 17, -7: 23, -8: 24, -500: 31}
    for offset, bucket in hand.items():
        assert relative_buckets(np.array([offset]))[0] == bucket, offset
    offsets = np.arange(-600, 601)
    theirs = MPNetEncoder.relative_position_bucket(torch.as_tensor(-offsets)).numpy()  # theirs takes key - query
    np.testing.assert_array_equal(relative_buckets(offsets), theirs)


def test_relative_bias_is_read_from_the_weights_file_as_the_model_adds_it(tiny_model_dir):
    folder = tiny_model_dir("mpnet")
    bias = relative_bias_from_folder("tiny-mpnet", folder)
    model = AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
    weight = model.encoder.relative_attention_bias.weight.detach().double().numpy()
    np.testing.assert_array_equal(bias.per_bucket, weight.T)
    with torch.no_grad():
        added = model.encoder.compute_position_bias(torch.zeros(1, 20, 32))[0].double().numpy()  # (H, T, T)
    for head in range(4):
        np.testing.assert_allclose(bias.matrix(head, 20), added[head], atol=1e-6)
    at_offset = dict(zip(bias.offsets.tolist(), bias.per_offset[2].tolist()))
    assert at_offset[3] == pytest.approx(added[2, 5, 2]) and at_offset[-3] == pytest.approx(added[2, 2, 5])


def test_relative_bias_of_the_base_model_says_how_to_install_it(tmp_path, monkeypatch, tiny_bert_dir):
    monkeypatch.setenv("VIZCORE_MODELS_DIR", str(tmp_path))
    with pytest.raises(VizError, match=r"not installed: run `python -m vizcore install-model all-mpnet-base-v2`"):
        relative_bias_of(BASE_MODEL)
    with pytest.raises(VizError, match="has no learned relative position bias"):
        relative_bias_of(str(tiny_bert_dir))


# ---- figures and the CLI ------------------------------------------------------------------------------------

def test_figures_carry_the_numbers():
    check = rotary_check(6, 4)
    fig = rotary_offset_figure(np.arange(-5, 6), check.by_offset, check.unrotated)
    np.testing.assert_allclose(fig.data[0].y, check.by_offset)
    assert list(fig.data[1].y) == [check.unrotated] * 2
    slopes = alibi_slopes_figure(alibi_slopes(8), chosen=2)
    np.testing.assert_allclose(slopes.data[0].y, [2 ** -h for h in range(1, 9)])
    assert slopes.data[0].marker.color[2] != slopes.data[0].marker.color[0] and slopes.data[0].text[2] == "2^-3"
    lines = relative_bias_figure(np.arange(-2, 3), np.arange(15.0).reshape(3, 5), [0, 2])
    assert [t.name for t in lines.data] == ["head 1", "head 3"] and list(lines.data[1].y) == [10, 11, 12, 13, 14]


def cli(capsys, *argv: str) -> dict:
    assert main(["positional", *argv]) == 0
    return json.loads(capsys.readouterr().out)


def test_cli_rotary_and_alibi_tables(capsys):
    data = cli(capsys, "--kind", "rotary", "--positions", "7", "--dim", "6", "--seed", "2")
    scores = np.array(data["scores"])
    q, k = np.random.default_rng(2).normal(size=(2, 6))
    assert scores.shape == (7, 7) and scores[5, 2] == pytest.approx(rotation(q, 5) @ rotation(k, 2), abs=1e-11)
    assert data["offsets"][0] == -6 and data["max_diagonal_spread"] < 1e-12 and "Su et al. 2021" in data["paper"]
    data = cli(capsys, "--kind", "alibi", "--heads", "12", "--positions", "5")
    np.testing.assert_allclose(data["slopes"], paper_slopes(12), atol=1e-12)
    bias = np.array(data["bias"])
    assert bias.shape == (12, 5, 5) and bias[9, 0, 4] == pytest.approx(-4 * 2 ** -1.5)


def test_cli_alibi_on_a_sentence_and_relative_from_a_folder(capsys, tiny_bert_dir, tiny_model_dir):
    data = cli(capsys, "--kind", "alibi", "--model", str(tiny_bert_dir), "--text", TEXT, "--layer", "2",
               "--head", "1", "--device", "cpu")
    assert (data["layer"], data["head"], data["slope"]) == (1, 0, 2 ** -2)
    weights, biased = np.array(data["attention"]), np.array(data["attention_with_alibi"])
    distance = np.abs(np.subtract.outer(np.arange(len(data["tokens"])), np.arange(len(data["tokens"]))))
    expected = weights * np.exp(-0.25 * distance)
    np.testing.assert_allclose(biased, expected / expected.sum(1, keepdims=True), atol=1e-6)
    data = cli(capsys, "--kind", "relative", "--model", str(tiny_model_dir("mpnet")))
    assert (data["heads"], data["buckets"]) == (4, 32)
    weight = AutoModel.from_pretrained(tiny_model_dir("mpnet")).encoder.relative_attention_bias.weight
    np.testing.assert_allclose(data["per_bucket"], weight.detach().numpy().T, atol=1e-6)


@pytest.mark.parametrize(("argv", "message"), [
    (["--kind", "rotary", "--positions", "4", "--dim", "5"], "even number"),
    (["--kind", "rotary", "--dim", "4"], "--positions is required for --kind rotary"),
    (["--kind", "alibi", "--heads", "0", "--positions", "4"], "between 1 and 256"),
    (["--kind", "alibi", "--text", "A cat.", "--layer", "1"], "--head is required"),
    (["--kind", "relative"], "install-model all-mpnet-base-v2"),
    (["--kind", "sideways"], "invalid choice"),
])
def test_cli_bad_input_is_one_line_and_exit_2(capsys, tmp_path, monkeypatch, argv, message):
    monkeypatch.setenv("VIZCORE_MODELS_DIR", str(tmp_path))
    assert main(["positional", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and message in captured.err and captured.err.count("\n") == 1
