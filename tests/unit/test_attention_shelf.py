"""The attention view's layers fetched from the server (vizcore/attention/shelf.py, issue 49 B): each run under an
unguessable token, the route's bytes are the payload's bytes for that layer, with the same id, anything else is a
404 or 400 with nothing in it, and a run the server no longer keeps is gone from the route too."""

from __future__ import annotations

import gc
import json
import time

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from tests.support.synthetic import synthetic_run
from vizcore.attention.payload import FULL_MAX_TOKENS, attention_payload, binary_payload, deflate_layer
from vizcore.attention.shelf import PATH, LayerShelf, layer_url, routes


@pytest.fixture
def served():
    shelf = LayerShelf()
    client = TestClient(Starlette(routes=routes(lambda: shelf)))
    return shelf, client


def test_a_layer_from_the_route_is_the_payloads_layer_with_the_same_id(served):
    shelf, client = served
    run = synthetic_run(layers=3, heads=2, words=FULL_MAX_TOKENS)
    url = layer_url(shelf.token(run))
    for layer in range(3):
        answer = client.get(f"{url}&layer={layer}")
        assert answer.status_code == 200 and answer.content == deflate_layer(run.attention[layer])
        sent = binary_payload(attention_payload(run, layer=layer, layers=[layer]))
        length = int.from_bytes(sent[4:8], "little")
        header = json.loads(sent[8:8 + length])
        assert answer.headers["x-layer-id"] == header["layers"][str(layer)]["id"]  # the view sees one layer
        assert answer.headers["content-type"] == "application/octet-stream"


def test_tokens_are_per_run_stable_and_unguessable(served):
    shelf, _ = served
    one, two = synthetic_run(layers=2, words=10), synthetic_run(layers=2, words=10)
    assert shelf.token(one) == shelf.token(one) != shelf.token(two)
    assert len(shelf.token(one)) >= 20  # 16 random bytes


@pytest.mark.parametrize("query, status", [
    ("view=nosuchtoken&layer=0", 404),
    ("layer=0", 400),
    ("view=x&layer=-1", 400),
    ("view=x&layer=one", 400),
    ("view=" + "x" * 100 + "&layer=0", 400),
])
def test_anything_else_is_an_empty_404_or_400(served, query, status):
    _, client = served
    answer = client.get(f"{PATH}?{query}")
    assert (answer.status_code, answer.content) == (status, b"")


def test_a_layer_out_of_range_and_a_run_no_longer_kept_are_404(served):
    shelf, client = served
    run = synthetic_run(layers=2, words=10)
    url = layer_url(shelf.token(run))
    assert client.get(f"{url}&layer=2").status_code == 404
    assert client.get(f"{url}&layer=1").status_code == 200
    del run
    gc.collect()
    assert client.get(f"{url}&layer=1").status_code == 404 and len(shelf) == 0


def test_the_other_layers_are_deflated_in_the_background(served):
    shelf, _ = served
    run = synthetic_run(layers=4, heads=2, words=20)
    shelf.encode_all_soon(run)
    shelf.encode_all_soon(run)  # queued once
    deadline = time.monotonic() + 30
    stored = shelf._item(run)
    while not all(layer in stored for layer in range(4)) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert all(stored[layer] == deflate_layer(run.attention[layer]) for layer in range(4))


def test_a_long_inputs_payload_names_its_layer_url_and_a_short_ones_does_not():
    long = synthetic_run(layers=2, heads=2, words=FULL_MAX_TOKENS)
    assert attention_payload(long, layer_url="/api/attention/layer?view=t")["layerUrl"].endswith("view=t")
    assert attention_payload(synthetic_run(layers=2, words=10))["layerUrl"] is None
