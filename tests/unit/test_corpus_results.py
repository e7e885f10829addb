"""Reading a finished run back, head roles from hand-made measures, Explorer links (1-based), quantiles, figures."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlparse

import numpy as np
import pandas as pd
import pytest

from vizcore.corpus import figures
from vizcore.corpus.measures import MEASURES
from vizcore.corpus.results import explorer_link, head_quantiles, load_results
from vizcore.corpus.roles import head_roles
from vizcore.errors import VizError
from vizcore.plot import shown_labels


def heads_frame(values: dict[tuple[int, int], dict[str, float]], sentences: int = 4) -> pd.DataFrame:
    rows = []
    for (layer, head), measures in values.items():
        for s in range(sentences):
            rows.append({"sentence_id": s, "layer": layer, "head": head,
                         **{m: measures.get(m, 0.0) for m in MEASURES}})
    return pd.DataFrame(rows)


def test_roles_in_their_order_with_the_reason():
    n = 8  # tokens per sentence: uniform entropy log 8
    heads = heads_frame({
        (0, 0): {"previous": 0.9, "entropy": 0.3},
        (0, 1): {"cls": 0.3, "sep": 0.4, "entropy": 1.0},
        (1, 0): {"entropy": 0.9 * np.log(n)},
        (1, 1): {"entropy": 0.5, "self": 0.3},
        (2, 0): {"next": 0.8},  # positional, but it also follows det far better than the baseline
    })
    sentences = pd.DataFrame({"sentence_id": range(4), "num_tokens": n})
    relations = pd.DataFrame([
        ("det", "dependent->head", 2, 0, 0.95, 100, 0.6), ("det", "dependent->head", 0, 0, 0.62, 100, 0.6),
        ("punct", "dependent->head", 1, 1, 0.99, 100, 0.1),  # punct never makes a head syntactic
        ("nsubj", "dependent->head", 1, 1, 0.99, 10, 0.1),  # too few arcs
    ], columns=["relation", "direction", "layer", "head", "accuracy", "count", "baseline_accuracy"])
    roles = head_roles(heads, sentences, relations).set_index(["layer", "head"])
    assert roles.loc[(0, 0), "role"] == "positional" and "90% of its weight on the previous token" in roles.loc[
        (0, 0), "detail"]
    assert roles.loc[(0, 1), "role"] == "special-token"
    assert roles.loc[(1, 0), "role"] == "broad"
    assert roles.loc[(1, 1), "role"] == "mixed"
    assert roles.loc[(2, 0), "role"] == "syntactic" and roles.loc[(2, 0), "detail"].startswith("det (dependent->head)")
    assert head_roles(heads, sentences, None).loc[4, "role"] == "positional"  # without syntax


def test_explorer_links_count_layers_and_heads_from_one():
    link = urlparse(explorer_link("A b & c?", 0, 11, "all-MiniLM-L6-v2"))
    params = {k: v[0] for k, v in parse_qs(link.query).items()}
    assert link.path == "/attention"
    assert params == {"text": "A b & c?", "layer": "1", "head": "12", "view": "heatmap", "model": "all-MiniLM-L6-v2"}


def test_quantiles_per_head():
    heads = heads_frame({(0, 0): {}, (0, 1): {}}, sentences=5)
    heads.loc[heads["head"] == 1, "entropy"] = [0.0, 1.0, 2.0, 3.0, 4.0]
    table = head_quantiles(heads, "entropy").set_index("head")
    assert table.loc[1, ["q05", "q25", "q50", "q75", "q95", "mean"]].tolist() == pytest.approx(
        [0.2, 1.0, 2.0, 3.0, 3.8, 2.0])
    fig = figures.measure_boxes(head_quantiles(heads, "entropy"), "entropy")
    assert list(fig.data[0].x) == ["1-1", "1-2"]
    with pytest.raises(VizError, match="Unknown measure"):
        head_quantiles(heads, "nope")


def test_a_folder_without_results_or_an_unfinished_run_is_a_message(tmp_path):
    with pytest.raises(VizError, match="is not a folder"):
        load_results(tmp_path / "missing")
    with pytest.raises(VizError, match="holds no corpus results"):
        load_results(tmp_path)
    (tmp_path / "heads.parquet").mkdir()
    (tmp_path / "summary.json").write_text(json.dumps({"complete": False}))
    with pytest.raises(VizError, match="could not be read|did not finish"):
        load_results(tmp_path)


def test_role_map_puts_each_head_in_its_cell():
    roles = pd.DataFrame({"layer": [0, 0, 1, 1], "head": [0, 1, 0, 1],
                          "role": ["syntactic", "broad", "positional", "mixed"],
                          "detail": ["det (x)", "b", "p", "m"], "relation": ["det", None, None, None]})
    fig = figures.role_map(roles)
    assert np.asarray(fig.data[0].z).tolist() == [[0, 3], [1, 4]]
    cells = next(t for t in fig.data if t.name == "cell text")  # plot.cell_text: each in black or white
    assert cells.text[0] == "det" and shown_labels(fig, "yaxis") == ["1", "2"]


def test_a_long_relation_is_cut_to_fit_its_cell_and_named_in_full_in_the_hover():
    """Issue 35 D: "nsubjpass" and "npadvmod" spilled over their neighbours at 1024 px."""
    roles = pd.DataFrame({"layer": [0, 0], "head": [0, 1], "role": ["syntactic", "syntactic"],
                          "detail": ["nsubjpass (x)", "det (y)"], "relation": ["nsubjpass", "det"]})
    fig = figures.role_map(roles)
    cells = next(t for t in fig.data if t.name == "cell text")
    assert list(cells.text) == ["nsub…", "det"] and cells.textfont.size == figures.CELL_FONT
    assert "nsubjpass" in str(fig.data[0].customdata[0][0]) or "nsubjpass" in str(fig.data[0].text[0][0])
