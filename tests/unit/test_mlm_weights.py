"""The built-in masked-LM before any weights are loaded: its listing, and missing weights (loading it:
tests/integration/test_mlm_weights.py)."""

import pytest

from vizcore.errors import VizError
from vizcore.mlm.weights import MLM_LABEL, MLM_MODEL, WEIGHTS_ENV, weights_available
from vizcore.model.loading import available_models, load_model


def test_it_is_listed_offline_with_its_label_and_the_online_pointer():
    rows = {row["name"]: row for row in available_models()}
    assert rows[MLM_MODEL]["offline"] is True and "mlm" in rows[MLM_MODEL]["heads"]
    assert MLM_LABEL in rows[MLM_MODEL]["description"] and "bert-base-uncased" in rows[MLM_MODEL]["description"]
    assert "all-MiniLM-L6-v2" in rows  # the original encoder stays on offer


def test_missing_weights_say_how_to_make_them(tmp_path, monkeypatch):
    monkeypatch.setenv(WEIGHTS_ENV, str(tmp_path / "nothing.safetensors"))
    assert not weights_available()
    with pytest.raises(VizError, match=r"missing: make them with python -m tools.mlm_training .* export"):
        load_model(MLM_MODEL, device="cpu", head="mlm")
