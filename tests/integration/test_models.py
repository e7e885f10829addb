"""The embedded model as load_model gives it (tiny models and error paths: tests/unit/test_models.py)."""

import pytest

from vizcore.errors import VizError
from vizcore.model.loading import DEFAULT_MODEL, load_model


def test_embedded_default_is_a_real_six_layer_encoder():
    loaded = load_model(DEFAULT_MODEL, device="cpu")
    assert (loaded.num_layers, loaded.num_heads, loaded.max_length) == (6, 12, 512)
    assert loaded.tokenizer.vocab_size == 30522


def test_embedded_encoder_has_no_mlm_head_and_says_so():
    with pytest.raises(VizError, match="no trained masked-LM head"):
        load_model(DEFAULT_MODEL, device="cpu", head="mlm")
