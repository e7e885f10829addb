"""Attribution patching: every estimate is the first-order term of the exact patch, measured here by central
finite differences of a tiny patch ε·(clean − corrupt) made by the existing patching code (``Patch``,
``HeadAblation`` through the one forward core), in float64; the agreement numbers against hand counts."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.unit.test_fill_mask_cli import run_cli
from vizcore.model.loading import load_model
from vizcore.model.run import Capture, HeadAblation, Patch, intervention_hooks, run
from vizcore.why.attribution_patching import agreement, attribution_patching, top_k_overlap
from vizcore.why.patching import patch_sweep
from vizcore.why.targets import mask_logits, masked_input, word_id

CLEAN, CORRUPT = "The capital of France is [MASK].", "The capital of Italy is [MASK]."
EPS = 1e-4


@pytest.fixture(scope="module")
def loaded(tiny_mlm_dir):
    """This module's own copy in float64 (central differences in float32 would measure rounding)."""
    loaded = load_model(str(tiny_mlm_dir("bert")), device="cpu", head="mlm")
    loaded.model.double()
    return loaded


def logit_difference(loaded, ablate=(), patch=()) -> float:
    """LD on the corrupted sentence with these changes, as the patching sweep makes them (float64 logits:
    a ``Run`` record keeps float32)."""
    masked = masked_input(loaded, CORRUPT)
    specs = intervention_hooks(loaded, ablate, patch, num_tokens=masked.num_tokens)
    logits = mask_logits(loaded, masked.inputs, masked.masks[0], specs)[0]
    return float(logits[word_id(loaded, "paris")] - logits[word_id(loaded, "rome")])


def state_patch(state: int, position: int, a: np.ndarray, b: np.ndarray):
    """b + ε(a − b) at one position of one state, in float64 (a float32 sum would round ε away)."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    return lambda e: {"patch": [Patch(state, (position,), b + e * (a - b))]}


def head_patch(layer: int, head: int, a: np.ndarray, b: np.ndarray):
    a, b = a.astype(np.float64), b.astype(np.float64)
    return lambda e: {"ablate": [HeadAblation(layer, head, b + e * (a - b))]}


def test_every_estimate_is_the_first_order_term_of_its_exact_patch(loaded):
    estimate = attribution_patching(loaded, CLEAN, CORRUPT, "paris", "rome")
    clean = run(loaded, CLEAN, capture=Capture(hidden=True, head_outputs=True))
    corrupt = run(loaded, CORRUPT, capture=Capture(hidden=True, head_outputs=True))
    scale = estimate.ld_clean - estimate.ld_corrupt
    assert estimate.ld_corrupt == pytest.approx(logit_difference(loaded), abs=1e-9)

    def derivative(change) -> float:  # d LD / d ε at ε = 0, central: its error is O(ε²)
        return (logit_difference(loaded, **change(EPS)) - logit_difference(loaded, **change(-EPS))) / (2 * EPS)

    states = np.zeros_like(estimate.recovered, dtype=np.float64)
    for state in range(loaded.num_layers + 1):
        for position in range(len(estimate.corrupt_tokens)):
            a, b = clean.hidden_states[state][[position]], corrupt.hidden_states[state][[position]]
            states[state, position] = derivative(state_patch(state, position, a, b))
    heads = np.zeros_like(estimate.head_recovered, dtype=np.float64)
    for layer in range(loaded.num_layers):
        for head in range(loaded.num_heads):
            a, b = clean.head_outputs[layer, head], corrupt.head_outputs[layer, head]
            heads[layer, head] = derivative(head_patch(layer, head, a, b))
    # Tolerance, measured on this model: the central difference's truncation is O(ε²) (the largest gap, over
    # the largest effect, was 1e-3 at ε = 1e-2 and 1e-5 at 1e-3); at ε = 1e-4 what is left is the float32
    # rounding of the activations a run returns and of the stored estimate (2e-7, the same at ε = 1e-5).
    # 1e-5 of the largest effect is 40 times that; a wrong sign, position or head is of the effect's order.
    bound = 1e-5 * max(np.abs(states).max(), np.abs(heads).max())
    np.testing.assert_allclose(estimate.recovered * scale, states, atol=bound, rtol=0)
    np.testing.assert_allclose(estimate.head_recovered * scale, heads, atol=bound, rtol=0)
    assert np.abs(states).max() > 0.1 and np.abs(heads).max() > 0.01  # the check has something to compare


def test_the_agreement_counts_ranks_and_the_largest_effects_by_size():
    a = np.array([[0.9, -0.8, 0.1], [0.0, 0.05, 0.3]])
    b = np.array([[0.7, 0.2, -0.9], [0.0, 0.01, 0.4]])
    # |a| largest three: cells 0, 1, 5; |b|: 2, 0, 5 -> two of three in common
    assert top_k_overlap(a, b, 3) == pytest.approx(2 / 3)
    assert top_k_overlap(a, a, 4) == 1.0 and top_k_overlap(a, b, 100) == 1.0


def test_the_estimate_ranks_the_exact_sweep_s_effects_and_the_command_writes_both(loaded, tiny_mlm_dir, capsys):
    exact = patch_sweep(loaded, CLEAN, CORRUPT, "paris", "rome")
    estimate = attribution_patching(loaded, CLEAN, CORRUPT, "paris", "rome")
    together = agreement(exact, estimate, k=5)
    ranks = lambda x: np.argsort(np.argsort(x.ravel())).astype(float)  # noqa: E731  (no ties here)
    expected = np.corrcoef(ranks(exact.head_recovered), ranks(estimate.head_recovered))[0, 1]
    assert together.spearman_heads == pytest.approx(expected)
    assert exact.seconds > 0 and estimate.seconds > 0
    code, out, err = run_cli(capsys, "attribution-patching", "--clean", CLEAN, "--corrupt", CORRUPT, "--answer",
                             "paris", "--contrast", "rome", "--model", str(tiny_mlm_dir("bert")), "--compare",
                             "--top-k", "5", "--format", "json")
    assert code == 0, err
    payload = json.loads(out)
    assert {"recovered", "heads", "seconds", "exact", "agreement"} <= payload.keys()
    assert np.shape(payload["recovered"]) == exact.recovered.shape
    assert np.shape(payload["exact"]["heads"]) == exact.head_recovered.shape
    assert payload["agreement"]["top_k_overlap"]["k"] == 5
    code, out, err = run_cli(capsys, "attribution-patching", "--clean", CLEAN, "--corrupt", "Italy is [MASK].",
                             "--answer", "paris", "--contrast", "rome", "--model", str(tiny_mlm_dir("bert")),
                             "--format", "json")
    assert code == 2 and "same number of tokens" in err and "Traceback" not in err
