"""The base-size masked-LM's parts (issue 48), on a tiny MPNet: the adapters a run trains equal, once merged into the
plain model the app loads, the wrapped model that trained them; a file that does not fit is refused with a reason; the
copy term is the unlikelihood of the window's other words; and the app's fill-mask model is the base one exactly when
it is installed with its weights (or the setting names one)."""

from __future__ import annotations

import math

import pytest
import torch

from tests.support.tiny import build_tiny
from tools.mpnet_mlm import copy_unlikelihood
from vizcore.mlm import adapters
from vizcore.model import catalog

MASK_ID = 103


def trained_copy():
    """A tiny MPNet with adapters whose B is not zero (as after training), a trained-looking head and mask row."""
    model = build_tiny("mpnet").eval()
    wrapped = adapters.add_adapters(model, rank=4)
    torch.manual_seed(1)
    with torch.no_grad():
        for adapter in wrapped.values():
            adapter.b.normal_(0.0, 0.1)
        model.lm_head.dense.weight.normal_(0.0, 0.3)
        model.lm_head.bias.normal_(0.0, 1.0)
        model.mpnet.embeddings.word_embeddings.weight[MASK_ID].normal_(0.0, 1.0)
    return model, wrapped


def test_merged_file_gives_the_wrapped_models_numbers():
    model, wrapped = trained_copy()
    ids = torch.tensor([[0, 2023, MASK_ID, 2003, 1037, 3899, 2]])
    with torch.no_grad():
        expected = model(input_ids=ids).logits
    state = adapters.changed_state(model, wrapped, MASK_ID)
    assert len([k for k in state if k.endswith(".lora_a")]) == 2 * len(adapters.ADAPTED)  # every matrix of 2 layers
    plain = build_tiny("mpnet").eval()
    with torch.no_grad():
        before = plain(input_ids=ids).logits
        adapters.merge_changed_state(plain, state, MASK_ID)
        merged = plain(input_ids=ids).logits
    assert not torch.allclose(before, merged, atol=1e-3)  # the file changed the model...
    torch.testing.assert_close(merged, expected, atol=1e-5, rtol=1e-5)  # ...into the one that trained it


def test_a_bare_encoder_takes_the_same_file_without_the_head():
    model, wrapped = trained_copy()
    ids = torch.tensor([[0, 2023, MASK_ID, 2003, 2]])
    with torch.no_grad():
        expected = model.mpnet(input_ids=ids).last_hidden_state
    bare = build_tiny("mpnet").mpnet.eval()
    adapters.merge_changed_state(bare, adapters.changed_state(model, wrapped, MASK_ID), MASK_ID)
    with torch.no_grad():
        torch.testing.assert_close(bare(input_ids=ids).last_hidden_state, expected, atol=1e-5, rtol=1e-5)


def test_resuming_from_a_file_restores_the_adapters():
    model, wrapped = trained_copy()
    state = adapters.changed_state(model, wrapped, MASK_ID)
    again = build_tiny("mpnet").eval()
    fresh = adapters.add_adapters(again, rank=4)
    adapters.load_changed_state(again, fresh, state, MASK_ID)
    ids = torch.tensor([[0, 2023, MASK_ID, 2]])
    with torch.no_grad():
        torch.testing.assert_close(again(input_ids=ids).logits, model(input_ids=ids).logits)


@pytest.mark.parametrize("spoil, reason", [
    (lambda s: s.pop("mpnet.encoder.layer.1.output.dense.lora_b"), "no adapter for mpnet.encoder.layer.1.output.dense"),
    (lambda s: s.__setitem__("mpnet.encoder.layer.0.attention.attn.q.lora_a", torch.zeros(4, 7)), "has shapes"),
    (lambda s: s.pop("lm_head.bias"), "lacks lm_head.bias"),
])
def test_a_file_that_does_not_fit_is_refused_with_its_reason(spoil, reason):
    model, wrapped = trained_copy()
    state = adapters.changed_state(model, wrapped, MASK_ID)
    spoil(state)
    with pytest.raises(ValueError, match=reason):
        adapters.merge_changed_state(build_tiny("mpnet"), state, MASK_ID)


def test_copy_term_is_the_unlikelihood_of_the_other_distinct_words():
    probs = torch.tensor([[0.5, 0.2, 0.1, 0.1, 0.1]])  # vocabulary of 5
    logits = probs.log()
    context = torch.tensor([[0, 1, 2, 2, 3]])  # word 2 twice; word 3 is the answer; word 0 special
    ordinary = torch.tensor([[False, True, True, True, True]])
    value = copy_unlikelihood(logits, torch.tensor([3]), context, ordinary)
    expected = -math.log(1 - 0.2) - math.log(1 - 0.1)  # words 1 and 2, each once; not the answer, not the special
    assert float(value) == pytest.approx(expected, rel=1e-5)
    only_the_answer = copy_unlikelihood(logits, torch.tensor([3]), torch.tensor([[3, 3]]), torch.ones(1, 2, dtype=bool))
    assert float(only_the_answer) == 0.0


def test_fill_mask_model_is_the_base_one_when_installed_with_its_weights(monkeypatch, tmp_path):
    monkeypatch.delenv(catalog.FILL_MASK_ENV, raising=False)
    weights = tmp_path / "mpnet-mlm.safetensors"
    monkeypatch.setenv(catalog.BASE_MLM_WEIGHTS_ENV, str(weights))
    base = catalog.BUILTIN_MODELS[catalog.BASE_MLM_MODEL]
    monkeypatch.setattr(type(base), "installed", lambda self: True)
    assert catalog.fill_mask_model() == catalog.MLM_MODEL  # installed, but no weights file
    weights.write_bytes(b"")
    assert catalog.fill_mask_model() == catalog.BASE_MLM_MODEL
    monkeypatch.setenv(catalog.FILL_MASK_ENV, catalog.MLM_MODEL)  # the setting pins the small one
    assert catalog.fill_mask_model() == catalog.MLM_MODEL
    monkeypatch.delenv(catalog.FILL_MASK_ENV)
    monkeypatch.setattr(type(base), "installed", lambda self: False)
    assert catalog.fill_mask_model() == catalog.MLM_MODEL
