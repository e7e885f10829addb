"""Activation patching: the batched sweep equals one hand-hooked run per patch, and its identities hold."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

from vizcore.errors import VizError
from vizcore.model import arch as archs
from vizcore.model.loading import load_model
from vizcore.why.patching import patch_sweep
from vizcore.why.targets import word_id

CLEAN = "The capital of France is [MASK]."
CORRUPT = "The capital of Italy is [MASK]."  # one token differs: position 4


@pytest.fixture(scope="module", params=["bert", "distilbert"])
def loaded(request, tiny_mlm_dir):
    return load_model(str(tiny_mlm_dir(request.param)), device="cpu", head="mlm")


@pytest.fixture(scope="module")
def sweep(loaded):
    return patch_sweep(loaded, CLEAN, CORRUPT, "paris", "rome")


def logit_difference(loaded, text, hook=None) -> float:
    """The logit difference at the mask from the model's own forward, with one hand-written hook."""
    encoding = loaded.tokenizer(text, return_tensors="pt")
    mask = int((encoding["input_ids"][0] == loaded.tokenizer.mask_token_id).nonzero()[0])
    handle = hook() if hook else None
    try:
        with torch.no_grad():
            logits = loaded.model(**{k: v for k, v in encoding.items() if k != "token_type_ids"
                                     or "token_type_ids" in loaded.model.forward.__code__.co_varnames}).logits
    finally:
        if handle is not None:
            handle.remove()
    return float(logits[0, mask, word_id(loaded, "paris")] - logits[0, mask, word_id(loaded, "rome")])


def patched_difference(sweep, recovered: float) -> float:
    """The logit difference of a patched run, back from its recovered share (compared in logit units:
    a share divides by LD_clean - LD_corrupt, which is small on a random tiny model)."""
    return float(recovered) * (sweep.ld_clean - sweep.ld_corrupt) + sweep.ld_corrupt


def clean_states(loaded) -> list[torch.Tensor]:
    encoding = loaded.tokenizer(CLEAN, return_tensors="pt")
    with torch.no_grad():
        return [h[0] for h in loaded.model(**encoding, output_hidden_states=True).hidden_states]


def hidden_patch_hook(loaded, state: int, position: int, value: torch.Tensor):
    base = loaded.model.base_model
    module = archs.get(base, "embeddings") if state == 0 else archs.blocks(loaded.model)[state - 1]

    def hook(module, inputs, output):
        hidden = (output[0] if isinstance(output, tuple) else output).clone()
        hidden[0, position] = value
        return (hidden, *output[1:]) if isinstance(output, tuple) else hidden
    return lambda: module.register_forward_hook(hook)


def test_the_sweep_equals_one_hand_hooked_run_per_state_and_position(loaded, sweep):
    states = clean_states(loaded)
    clean, corrupt = logit_difference(loaded, CLEAN), logit_difference(loaded, CORRUPT)
    assert sweep.ld_clean == pytest.approx(clean, abs=1e-5)
    assert sweep.ld_corrupt == pytest.approx(corrupt, abs=1e-5)
    for state in range(loaded.num_layers + 1):
        for position in range(len(sweep.corrupt_tokens)):
            patched = logit_difference(loaded, CORRUPT, hidden_patch_hook(loaded, state, position,
                                                                         states[state][position]))
            assert patched_difference(sweep, sweep.recovered[state, position]) == pytest.approx(patched, abs=1e-5)


def test_patching_identities(loaded, sweep):
    # recovered = (patched - corrupt) / (clean - corrupt): the tiny random model's small logit difference in
    # the denominator turns float32 noise of ~1e-7 into ~1e-5 (a fresh CI machine measured 0.9999888)
    tolerance = 1e-4
    mask, differing = sweep.mask_index, 4
    assert sweep.clean_tokens[differing] != sweep.corrupt_tokens[differing]
    last = sweep.recovered[-1]
    assert last[mask] == pytest.approx(1.0, abs=tolerance)  # the last layer at the mask is the clean answer
    assert np.abs(np.delete(last, mask)).max() < tolerance  # the head reads the mask's position only
    first = sweep.recovered[0]
    assert first[differing] == pytest.approx(1.0, abs=tolerance)  # the one differing token restored = the clean input
    assert np.abs(np.delete(first, differing)).max() < tolerance  # identical tokens: patching changes nothing


def test_head_patching_equals_a_hand_written_head_swap(loaded, sweep):
    arch = archs.arch_of(loaded.model)
    out_path = arch.stacks[arch.main_stack].self_attention.out
    blocks = archs.blocks(loaded.model)
    H = loaded.num_heads
    clean_inputs: dict[int, torch.Tensor] = {}

    def keep(layer):
        return lambda module, inputs: clean_inputs.__setitem__(layer, inputs[0].clone())
    handles = [archs.get(b, out_path).register_forward_pre_hook(keep(i)) for i, b in enumerate(blocks)]
    logit_difference(loaded, CLEAN)
    for handle in handles:
        handle.remove()
    for layer, head in [(0, 0), (1, 2), (loaded.num_layers - 1, H - 1)]:
        width = clean_inputs[layer].shape[-1] // H
        cut = slice(head * width, (head + 1) * width)

        def swap(module, inputs, layer=layer, cut=cut):
            x = inputs[0].clone()
            x[..., cut] = clean_inputs[layer][..., cut]
            return (x, *inputs[1:])
        module = archs.get(blocks[layer], out_path)
        hook = functools.partial(module.register_forward_pre_hook, swap)
        patched = logit_difference(loaded, CORRUPT, hook)
        assert patched_difference(sweep, sweep.head_recovered[layer, head]) == pytest.approx(patched, abs=1e-5)


def test_small_batches_give_the_same_sweep(loaded, sweep):
    again = patch_sweep(loaded, CLEAN, CORRUPT, "paris", "rome", batch_rows=5)
    np.testing.assert_allclose(again.recovered, sweep.recovered, atol=1e-5)
    np.testing.assert_allclose(again.head_recovered, sweep.head_recovered, atol=1e-5)


def test_a_mask_typed_in_lower_case_is_read_alike_in_every_run(loaded, sweep):
    lower = patch_sweep(loaded, CLEAN.replace("[MASK]", "[mask]"), CORRUPT.replace("[MASK]", "<mask>"),
                        "paris", "rome")
    np.testing.assert_allclose(lower.recovered, sweep.recovered, atol=1e-6)


def test_unequal_lengths_show_both_token_lists(loaded):
    with pytest.raises(VizError, match=r"same number of tokens.*'france'.*'united', 'kingdom'"):
        patch_sweep(loaded, CLEAN, "The capital of the United Kingdom is [MASK].", "paris", "london")


def test_bad_words_and_identical_runs_are_refused(loaded):
    with pytest.raises(VizError, match="not one token"):
        patch_sweep(loaded, CLEAN, CORRUPT, "antidisestablishmentarianism", "rome")
    with pytest.raises(VizError, match="same word"):
        patch_sweep(loaded, CLEAN, CORRUPT, "paris", "paris")
    with pytest.raises(VizError, match="nothing to recover"):
        patch_sweep(loaded, CLEAN, CLEAN, "paris", "rome")
    with pytest.raises(VizError, match="no mask"):
        patch_sweep(loaded, "The capital of France is Paris.", "The capital of Italy is Rome.", "paris", "rome")
