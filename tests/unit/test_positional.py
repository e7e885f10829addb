"""Sinusoidal encodings against the closed form, the offset map, PCA, learned tables and the CLI."""

import json
import math

import numpy as np
import pytest
import torch
from transformers import RobertaConfig, RobertaModel

from vizcore.cli import main
from vizcore.errors import VizError
from vizcore.model.loading import LoadedModel, load_model
from vizcore.plot import MAX_CELLS, matrix_heatmap, unique_labels
from vizcore.positional.encoding import (
    check_offset,
    learned_positions,
    offset_map,
    offset_spread,
    principal_components,
    similarity,
    sinusoidal_encoding,
    worked_example,
)
from vizcore.positional.figures import position_scatter, waves_figure


def closed_form(pos: int, dim: int, d_model: int) -> float:
    angle = pos / 10000 ** ((dim - dim % 2) / d_model)
    return math.sin(angle) if dim % 2 == 0 else math.cos(angle)


@pytest.mark.parametrize(("n", "d"), [(1, 2), (7, 4), (50, 16), (33, 130)])
def test_table_equals_the_formula_entry_by_entry(n, d):
    table = sinusoidal_encoding(n, d)
    expected = np.array([[closed_form(p, i, d) for i in range(d)] for p in range(n)])
    assert table.shape == (n, d)
    np.testing.assert_allclose(table, expected, atol=1e-12)


def test_worked_example_of_the_tutorials():
    rows = {row["entry"]: row["value"] for row in worked_example()}
    assert rows["PE(5, 0)"] == pytest.approx(math.sin(5)) and round(rows["PE(5, 0)"], 3) == -0.959
    assert rows["PE(5, 1)"] == pytest.approx(math.cos(5)) and round(rows["PE(5, 1)"], 3) == 0.284
    for d in (2, 128, 512):  # the first pair has frequency 1 whatever d_model is
        assert sinusoidal_encoding(6, d)[5, :2] == pytest.approx([math.sin(5), math.cos(5)])


@pytest.mark.parametrize(("n", "d", "message"), [
    (0, 8, "between 1 and 2,048"), (100_000, 8, "got 100,000"), (-3, 8, "between 1 and"),
    (10, 0, "between 2 and 1,024"), (10, 7, "must be even"), (10, 1, "between 2 and"), (10, 2048, "1,024"),
    ("abc", 8, "whole number"), (10, 2.5, "whole number"), (float("nan"), 8, "whole number"), (None, 8, "whole"),
])
def test_bad_sizes_say_what_is_allowed(n, d, message):
    with pytest.raises(VizError, match=message):
        sinusoidal_encoding(n, d)


def test_limits_are_inclusive_and_accept_whole_floats():
    assert sinusoidal_encoding(2048, 2).shape == (2048, 2)
    assert sinusoidal_encoding(1, 1024).shape == (1, 1024)
    assert sinusoidal_encoding(4.0, "6").shape == (4, 6)


def test_similarities_against_a_direct_loop():
    table = sinusoidal_encoding(20, 10)
    dot, cosine = similarity(table, "dot"), similarity(table, "cosine")
    for p in range(20):
        for q in range(20):
            a, b = table[p], table[q]
            assert dot[p, q] == pytest.approx(float(sum(x * y for x, y in zip(a, b))), abs=1e-12)
            assert cosine[p, q] == pytest.approx(dot[p, q] / (np.linalg.norm(a) * np.linalg.norm(b)), abs=1e-12)
    np.testing.assert_allclose(np.diag(dot), 10 / 2)  # sin² + cos² = 1 per pair
    with pytest.raises(VizError, match="Unknown similarity"):
        similarity(table, "euclid")


def test_dot_product_depends_only_on_the_offset_and_random_vectors_do_not():
    assert offset_spread(similarity(sinusoidal_encoding(100, 64), "dot")) < 1e-10
    random = np.random.default_rng(0).normal(size=(100, 64))
    assert offset_spread(similarity(random, "dot")) > 10


@pytest.mark.parametrize(("k", "d"), [(1, 2), (3, 128), (17, 64), (250, 512)])
def test_offset_map_moves_every_position_by_k(k, d):
    table = sinusoidal_encoding(300, d)
    check = check_offset(table, k)
    assert check.pairs == 300 - k and check.max_abs_error < 1e-11
    m = offset_map(k, d)
    np.testing.assert_allclose(m @ m.T, np.eye(d), atol=1e-12)  # a rotation
    for pos in (0, 5, 299 - k):  # against the formula, not the table
        expected = [closed_form(pos + k, i, d) for i in range(d)]
        np.testing.assert_allclose(m @ table[pos], expected, atol=1e-11)
    assert np.abs(m - np.eye(d)).max() > 1e-3  # not trivially the identity


def test_offset_maps_compose_and_a_wrong_map_fails():
    np.testing.assert_allclose(offset_map(2, 16) @ offset_map(3, 16), offset_map(5, 16), atol=1e-12)
    table = sinusoidal_encoding(40, 16)
    wrong = np.abs(table[:-3] @ offset_map(2, 16).T - table[3:]).max()
    assert wrong > 0.1
    with pytest.raises(VizError, match="offset k"):
        check_offset(table, 40)


def test_pca_equals_the_eigenvectors_of_the_covariance():
    vectors = np.random.default_rng(1).normal(size=(30, 6)) * np.array([5, 3, 1, 1, 0.5, 0.1])
    projection = principal_components(vectors)
    centred = vectors - vectors.mean(0)
    values, vecs = np.linalg.eigh(centred.T @ centred)
    order = np.argsort(values)[::-1]
    np.testing.assert_allclose(projection.explained, values[order][:2] / values.sum(), atol=1e-12)
    for c in range(2):
        expected = centred @ vecs[:, order[c]]
        expected *= np.sign(expected[0]) or 1.0
        np.testing.assert_allclose(projection.coordinates[:, c], expected, atol=1e-9)


@pytest.fixture(scope="module")
def tiny(tiny_bert_dir):
    return load_model(str(tiny_bert_dir), device="cpu")


def test_learned_positions_are_the_models_own_rows(tiny):
    learned = learned_positions(tiny, 10)
    expected = tiny.model.embeddings.position_embeddings.weight[:10].double().numpy()
    np.testing.assert_array_equal(learned.table, expected)
    assert learned.available == 64 and learned_positions(tiny, 5000).table.shape == (64, 32)


@pytest.mark.parametrize("kind", ["distilbert", "gpt2"])
def test_learned_positions_of_distilbert_and_gpt2(tiny_model_dir, kind):
    loaded = load_model(str(tiny_model_dir(kind)), device="cpu")
    base = loaded.model.base_model
    weight = base.embeddings.position_embeddings.weight if kind == "distilbert" else base.wpe.weight
    np.testing.assert_array_equal(learned_positions(loaded, 8).table, weight[:8].double().numpy())


def test_roberta_positions_start_after_the_padding_row():
    torch.manual_seed(0)
    model = RobertaModel(RobertaConfig(vocab_size=50, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                       intermediate_size=16, max_position_embeddings=20, pad_token_id=1)).eval()
    loaded = LoadedModel(name="tiny-roberta", model=model, tokenizer=None, device=torch.device("cpu"),
                         is_decoder=False, num_layers=1, num_heads=2, max_length=18)
    learned = learned_positions(loaded, 100)
    assert learned.first_row == 2 and learned.available == 18
    first_row = model.embeddings.position_embeddings.weight[2].detach().double().numpy()
    np.testing.assert_array_equal(learned.table[0], first_row)


def test_big_heatmaps_are_thinned_and_say_so():
    table = sinusoidal_encoding(2048, 1024)
    fig = matrix_heatmap(table, "PE", row_title="position", col_title="dimension", value_name="PE")
    z = np.asarray(fig.data[0].z)
    assert z.size <= MAX_CELLS and "every 3rd row and column drawn" in fig.layout.title.text
    assert "shape 2048 × 1024" in fig.layout.title.text
    assert fig.data[0].z[1][1] == pytest.approx(table[3, 3], abs=1e-6)  # drawn cells keep exact values
    assert (fig.data[0].y[1], fig.data[0].x[1]) == ("3", "3")  # the hover reads the drawn cell's positions off the axes
    assert fig.data[0].hovertemplate.startswith("position %{y}<br>dimension %{x}<br>PE %{z")


def test_small_heatmap_has_every_cell_a_legend_and_hover_values():
    fig = matrix_heatmap(np.array([[1.0, -2.0], [0.5, 0.0]]), "M", row_labels=["a", "b"], col_labels=["x", "y"])
    assert np.asarray(fig.data[0].z).tolist() == [[1.0, -2.0], [0.5, 0.0]]
    assert fig.data[0].colorbar.title.text == "value" and (fig.data[0].zmin, fig.data[0].zmax) == (-2.0, 2.0)
    assert fig.data[0].hovertemplate.startswith("row %{y}<br>column %{x}<br>value %{z")
    assert list(fig.data[0].y) == ["a", "b"] and list(fig.data[0].x) == ["x", "y"] and fig.data[0].customdata is None
    assert fig.layout.xaxis.type == fig.layout.yaxis.type == "category"


def test_repeated_labels_stay_rows_of_their_own():
    fig = matrix_heatmap(np.arange(6.0).reshape(3, 2), "M", row_labels=["the", "cat", "the"], row_title="token")
    assert len(set(fig.data[0].y)) == 3 and [label.rstrip("\u200b") for label in fig.data[0].y] == ["the", "cat", "the"]
    assert fig.layout.yaxis.ticktext is None  # the categories are the labels: the repeat's suffix is invisible
    assert unique_labels(["a", "a", "a\u200b"]) == ["a", "a\u200b", "a\u200b\u200b"]


def test_waves_and_scatter_figures_carry_the_data():
    table = sinusoidal_encoding(30, 8)
    waves = waves_figure(table, [0, 3])
    assert [t.name.split(" · ")[0] for t in waves.data] == ["0", "3"]
    assert waves.layout.legend.title.text == "dim · wave · wavelength λ"
    np.testing.assert_allclose(waves.data[1].y, table[:, 3])
    assert waves.data[0].name.endswith("· 6.3")
    scatter = position_scatter(np.ones((4, 2)), np.array([0.6, 0.3]), "PCA", first=1)
    assert list(scatter.data[0].text) == ["1", "2", "3", "4"] and "60.0 %" in scatter.layout.xaxis.title.text


def test_cli_prints_the_table(capsys):
    assert main(["positional", "--positions", "6", "--dim", "4", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    encoding = np.array(data["encoding"])
    assert encoding.shape == (6, 4) and (data["positions"], data["dim"]) == (6, 4)
    np.testing.assert_allclose(encoding, [[closed_form(p, i, 4) for i in range(4)] for p in range(6)], atol=1e-12)


@pytest.mark.parametrize(("argv", "message"), [
    (["--positions", "0", "--dim", "4"], "between 1 and 2,048"),
    (["--positions", "100000", "--dim", "4"], "got 100,000"),
    (["--positions", "5", "--dim", "7"], "must be even"),
    (["--positions", "5", "--dim", "0"], "between 2 and 1,024"),
    (["--positions", "five", "--dim", "4"], "invalid int"),
    (["--dim", "4"], "required"),
])
def test_cli_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    assert main(["positional", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and message in captured.err and captured.err.count("\n") == 1

