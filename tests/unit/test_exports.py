"""CSV and JSON exports: documented shape, the exact weights, limits with a message."""

import csv
import io
import json
from dataclasses import replace

import numpy as np
import pytest

from vizcore.attention.exports import CSV_HEADER, attention_csv, attention_json
from vizcore.attention.extract import extract_attention
from vizcore.errors import VizError
from vizcore.model.loading import load_model


@pytest.fixture(scope="module")
def result(tiny_bert_dir):
    return extract_attention(load_model(str(tiny_bert_dir), device="cpu"), "Hello, \"world\" 🦊", "Second one.")


def rows(text):
    return list(csv.DictReader(io.StringIO(text)))


def test_head_csv_is_long_format_with_one_based_layer_and_head(result):
    table = rows(attention_csv(result, layer=1, head=3))
    n = len(result.tokens)
    assert list(table[0]) == CSV_HEADER and len(table) == n * n
    assert {r["layer"] for r in table} == {"2"} and {r["head"] for r in table} == {"4"}
    for r in table[:: n + 1]:
        q, k = int(r["query_index"]), int(r["key_index"])
        assert r["query_token"] == result.tokens[q] and r["key_token"] == result.tokens[k]
        assert float(r["weight"]) == pytest.approx(result.attention[1, 3, q, k], abs=1e-8)
    assert any(r["query_token"] == '"' for r in table)  # quotes survive CSV quoting


def test_all_heads_csv_and_json_cover_every_weight(result):
    table = rows(attention_csv(result))
    layers, heads, n = result.attention.shape[:3]
    assert len(table) == layers * heads * n * n
    weights = np.array([float(r["weight"]) for r in table]).reshape(result.attention.shape)
    np.testing.assert_allclose(weights, result.attention, atol=1e-8)
    data = json.loads(attention_json(result))
    assert data["shape"] == "[layer][head][query][key]" and data["num_heads"] == heads
    np.testing.assert_allclose(data["attention"], result.attention, atol=1e-8)
    assert data["tokens"] == result.tokens and data["pair"] == "Second one."


def test_head_json_shape(result):
    data = json.loads(attention_json(result, 0, 2))
    assert data["layer"] == 1 and data["head"] == 3 and data["shape"] == "[query][key]"
    np.testing.assert_allclose(data["attention"], result.attention[0, 2], atol=1e-8)


def test_all_heads_exports_are_limited_with_a_message(result):
    n = 129
    long = replace(result, tokens=["w"] * n, attention=np.full((1, 1, n, n), 1 / n, np.float32),
                   segment_ids=np.zeros(n, int))
    with pytest.raises(VizError, match="limited to 128 tokens"):
        attention_csv(long)
    with pytest.raises(VizError, match="limited to 128 tokens"):
        attention_json(long)
    assert len(rows(attention_csv(long, 0, 0))) == n * n  # one head is always fine
