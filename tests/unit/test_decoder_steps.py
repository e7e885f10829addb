"""A generation step's record on tiny GPT-2 and BERT-as-decoder models: the causal mask (exact zeros on
later positions), attention rows summing to 1 and equal to transformers' own, the logit lens (its last
row the model's logits, the others recomputed by hand), the next-token distribution and its cut-off."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.support.tiny_decoders import save_tiny_decoder
from vizcore.decoder.generation import next_token_logits, prompt_ids
from vizcore.decoder.sampling import Settings, shape
from vizcore.decoder.steps import candidates, step_view
from vizcore.decoder.vocabulary import banned_tokens
from vizcore.errors import VizError
from vizcore.model.loading import load_model

PROMPT = "She opened the"
GENERATED = (2341, 1010, 4937)


@pytest.fixture(scope="module", params=["gpt2", "bert"])
def decoder(request, tmp_path_factory):
    folder = save_tiny_decoder(request.param, tmp_path_factory.mktemp(request.param))
    return load_model(str(folder), device="cpu", head="causal-lm")


def own_outputs(loaded, ids: torch.Tensor):
    with torch.no_grad():
        return loaded.model(input_ids=ids, output_attentions=True, output_hidden_states=True)


def test_the_causal_mask_puts_exactly_zero_weight_on_later_positions(decoder):
    view = step_view(decoder, PROMPT, GENERATED)
    layers, heads, tokens, _ = view.attention.shape
    assert (layers, heads, tokens) == (decoder.num_layers, decoder.num_heads, len(view.tokens))
    later = np.triu(np.ones((tokens, tokens), dtype=bool), k=1)
    assert np.all(view.attention[:, :, later] == 0.0)
    assert np.all(view.attention[:, :, ~later] > 0.0)
    np.testing.assert_allclose(view.attention.sum(-1), 1.0, atol=1e-6)
    np.testing.assert_array_equal(view.newest_attention, view.attention[:, :, -1, :])


def test_the_attention_and_the_sequence_are_the_models_own(decoder):
    view = step_view(decoder, PROMPT, GENERATED)
    ids = prompt_ids(decoder, PROMPT)
    assert view.token_ids == ids[0].tolist() + list(GENERATED) and view.prompt_length == ids.shape[1]
    own = own_outputs(decoder, torch.tensor([view.token_ids]))
    np.testing.assert_allclose(view.attention, torch.stack([a[0] for a in own.attentions]).numpy(), atol=1e-6)


def test_the_logit_lens_ends_at_the_logits_and_reads_each_layer_through_the_head(decoder):
    view = step_view(decoder, PROMPT, GENERATED, lens_top=4)
    own = own_outputs(decoder, torch.tensor([view.token_ids]))
    lens = view.lens
    assert lens is not None and lens.num_rows == decoder.num_layers + 1
    never = banned_tokens(decoder).never  # probability 0 in every row, as in the bars
    last = next_token_logits(decoder, torch.tensor([view.token_ids])).float().masked_fill(never, -torch.inf).softmax(-1)
    assert lens.token_ids[-1].tolist() == last.topk(4).indices.tolist()
    np.testing.assert_array_equal(lens.probs[-1], last.topk(4).values.numpy())  # exactly the bars' distribution
    np.testing.assert_allclose(lens.probs[-1], view.next.plain[lens.token_ids[-1]], rtol=1e-6)
    assert lens.final_token_probs[-1] == pytest.approx(float(lens.probs[-1, 0]))
    model = decoder.model
    for layer, hidden in enumerate(own.hidden_states[:-1]):  # by hand: the head as the model's class defines it
        state = hidden[0, -1]
        with torch.no_grad():
            logits = model.cls(state) if hasattr(model, "cls") else model.lm_head(model.transformer.ln_f(state))
        probs = logits.masked_fill(never, -torch.inf).softmax(-1)
        assert lens.token_ids[layer].tolist() == probs.topk(4).indices.tolist()
        assert lens.final_token_probs[layer] == pytest.approx(float(probs[lens.token_ids[-1, 0]]), rel=1e-4)
    assert lens.tokens[-1][0] == decoder.tokenizer.decode([int(lens.token_ids[-1, 0])])


@pytest.mark.parametrize("settings", [Settings(), Settings(1.5), Settings(0.7, top_k=5), Settings(1.0, top_p=0.3),
                                      Settings(0.0)])
def test_the_next_token_distribution_and_its_cut_off(decoder, settings):
    view = step_view(decoder, PROMPT, GENERATED, settings=settings)
    logits = next_token_logits(decoder, torch.tensor([view.token_ids]))
    expected = shape(logits, settings, banned_tokens(decoder).mask(settings.whole_words))
    np.testing.assert_allclose(view.next.shaped, expected.shaped, atol=1e-6)
    top = candidates(decoder, view, count=12, drawn=int(np.argmax(expected.plain)))
    assert top.token_ids.tolist() == np.argsort(-expected.plain, kind="stable")[:12].tolist()
    assert np.all(np.diff(top.plain) <= 0) and top.drawn_rank == 0
    assert top.kept == int((expected.shaped > 0).sum())
    assert np.all(top.shaped[:top.kept] > 0) and np.all(top.shaped[top.kept:] == 0)
    if settings.top_k:
        assert top.kept == settings.top_k
    if settings.greedy:
        assert top.kept == 1


def test_a_sequence_longer_than_the_model_reads_is_refused(decoder):
    with pytest.raises(VizError, match="reads at most"):
        step_view(decoder, PROMPT, [1012] * decoder.max_length)


def test_a_head_that_does_not_reproduce_the_logits_gives_a_note_not_a_wrong_lens(decoder, monkeypatch):
    import vizcore.decoder.steps as steps

    head, norm = steps.lens_parts(decoder)
    monkeypatch.setattr(steps, "lens_parts", lambda loaded: (lambda x: head(x) * 1.01, norm))
    view = step_view(decoder, PROMPT)
    assert view.lens is None and "layer-by-layer view" in view.lens_note
