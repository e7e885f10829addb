"""Ablation and patching through the one forward core on a tiny MPNet (its relative bias in every layer), checked
against a copy of the model whose weights make the same change, and against another sentence's run."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from vizcore.model.loading import load_model
from vizcore.model.run import Capture, HeadAblation, Patch, run

TEXT = "The animal didn't cross the street because it was too tired."
OTHER = "The chicken didn't cross the river because it was too wide."


@pytest.fixture(scope="module")
def tiny_mpnet(tiny_model_dir):
    return load_model(str(tiny_model_dir("mpnet")), device="cpu")


def test_zeroing_a_head_equals_zeroing_its_columns_of_w_o(tiny_mpnet):
    layer, head = 0, 2
    ablated = run(tiny_mpnet, TEXT, ablate=[HeadAblation(layer, head)])
    plain = run(tiny_mpnet, TEXT)
    d_k = tiny_mpnet.model.config.hidden_size // tiny_mpnet.num_heads
    edited = copy.deepcopy(tiny_mpnet.model)  # the same change made in the weights, on a copy
    with torch.no_grad():
        edited.base_model.encoder.layer[layer].attention.attn.o.weight[:, head * d_k:(head + 1) * d_k] = 0.0
        ids = tiny_mpnet.tokenizer(TEXT, return_tensors="pt")
        theirs = edited(**ids, output_hidden_states=True).hidden_states
    np.testing.assert_allclose(ablated.hidden_states[-1], theirs[-1][0].numpy(), atol=1e-5)
    np.testing.assert_array_equal(ablated.attention[0], plain.attention[0])  # layer 1's weights come before it
    assert np.abs(ablated.hidden_states[-1] - plain.hidden_states[-1]).max() > 1e-3


def test_patching_every_position_of_a_state_continues_as_the_other_sentence(tiny_mpnet):
    """The bias depends on positions only: with all of hidden state 1 taken from OTHER, the rest is OTHER's run."""
    other = run(tiny_mpnet, OTHER)
    mine = run(tiny_mpnet, TEXT)
    assert len(other.tokens) == len(mine.tokens)
    positions = tuple(range(len(mine.tokens)))
    patched = run(tiny_mpnet, TEXT, patch=[Patch(1, positions, other.hidden_states[1])],
                  capture=Capture(hidden=True))
    np.testing.assert_allclose(patched.hidden_states[-1], other.hidden_states[-1], atol=1e-5)
    np.testing.assert_allclose(patched.attention[1], other.attention[1], atol=1e-6)
    np.testing.assert_array_equal(patched.attention[0], mine.attention[0])
