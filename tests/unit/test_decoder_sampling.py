"""Next-token shaping equals transformers' warpers; seeded generation is reproducible; greedy equals
transformers' greedy ``generate`` on a tiny GPT-2."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.support.sampling_reference import transformers_probabilities
from vizcore.decoder.generation import generate, next_token_logits, prompt_ids
from vizcore.decoder.sampling import Settings, draw, shape
from vizcore.decoder.vocabulary import banned_tokens
from vizcore.errors import VizError
from vizcore.model.loading import load_model


@pytest.fixture(scope="module")
def gpt2(tiny_model_dir):
    return load_model(str(tiny_model_dir("gpt2")), device="cpu", head="causal-lm")


@pytest.mark.parametrize("settings", [Settings(1.0), Settings(0.5), Settings(2.0), Settings(1.0, top_k=5),
                                      Settings(0.7, top_k=40, top_p=0.9), Settings(1.3, top_p=0.5),
                                      Settings(1.0, top_p=0.05), Settings(0.9, top_k=1)])
def test_shaping_equals_transformers_warpers_and_cuts_exactly(settings):
    torch.manual_seed(0)
    logits = torch.randn(500) * 3
    shaped = shape(logits, settings)
    expected = transformers_probabilities(logits, settings)
    np.testing.assert_allclose(shaped.shaped, expected, atol=1e-12)
    assert np.array_equal(shaped.kept, expected > 0)
    np.testing.assert_allclose(shaped.plain, logits.double().softmax(-1).numpy(), atol=1e-12)
    if settings.top_k:
        assert shaped.kept.sum() <= settings.top_k
    if settings.top_p < 1:  # the nucleus: the smallest set of top tokens whose mass reaches p
        mass = np.sort(transformers_probabilities(logits, Settings(settings.temperature)))[::-1]
        kept = int(shaped.kept.sum())
        if not settings.top_k or kept < settings.top_k:
            assert mass[:kept].sum() >= settings.top_p - 1e-12 and (kept == 1 or mass[:kept - 1].sum() < settings.top_p)


def test_greedy_is_the_arg_max_and_draws_follow_the_seed():
    logits = torch.tensor([0.1, 2.0, 1.9, -1.0])
    greedy = shape(logits, Settings(0.0))
    assert draw(greedy) == 1 and greedy.shaped.tolist() == [0, 1, 0, 0]
    sampled = shape(logits, Settings(1.0))
    first = [draw(sampled, torch.Generator().manual_seed(7)) for _ in range(5)]
    again = [draw(sampled, torch.Generator().manual_seed(7)) for _ in range(5)]
    assert first == again
    many = [draw(sampled, g) for g in [torch.Generator().manual_seed(1)] for _ in range(4000)]
    counts = np.bincount(many, minlength=4) / 4000
    np.testing.assert_allclose(counts, sampled.shaped, atol=0.03)


def never_drawn(loaded) -> list[int]:
    return torch.nonzero(banned_tokens(loaded).never).flatten().tolist()


def test_greedy_generation_equals_transformers_generate(gpt2):
    result = generate(gpt2, "The cat sat on the", max_new_tokens=6, settings=Settings(0.0))
    ids = prompt_ids(gpt2, "The cat sat on the")
    with torch.no_grad():
        expected = gpt2.model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=6, do_sample=False,
                                       pad_token_id=0, eos_token_id=None, suppress_tokens=never_drawn(gpt2))
    assert [s.token_id for s in result.steps] == expected[0, ids.shape[1]:].tolist()
    assert result.prompt_tokens == gpt2.tokenizer.convert_ids_to_tokens(ids[0].tolist())


def test_sampled_generation_is_reproducible_and_each_step_is_drawn_from_its_top(gpt2):
    settings = Settings(1.2, top_k=8, top_p=0.95)
    first = generate(gpt2, "Once upon a time", max_new_tokens=5, settings=settings, seed=3, top=8)
    assert first == generate(gpt2, "Once upon a time", max_new_tokens=5, settings=settings, seed=3, top=8)
    assert len(first.steps) == 5
    for step in first.steps:
        assert step.token_id in [i for _, i, _ in step.top] and len(step.top) <= 8
        assert sum(p for _, _, p in step.top) == pytest.approx(1.0)
    ids = prompt_ids(gpt2, "Once upon a time")
    logits = next_token_logits(gpt2, ids)
    expected = shape(logits, settings, banned_tokens(gpt2).never).top(8)
    assert [(i, pytest.approx(p)) for _, i, p in first.steps[0].top] == [(i, p) for i, p in expected if p > 0]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"prompt": "   "}, "empty"),
    ({"max_new_tokens": 0}, "between 1 and"),
    ({"settings": Settings(-1.0)}, "temperature"),
    ({"settings": Settings(1.0, top_p=0.0)}, "top-p"),
    ({"settings": Settings(1.0, top_k=-2)}, "top-k"),
    ({"prompt": "word " * 100}, "reads at most"),
])
def test_bad_requests_get_clear_messages(gpt2, kwargs, message):
    with pytest.raises(VizError, match=message):
        generate(gpt2, **{"prompt": "The cat", **kwargs})


def test_an_encoder_without_a_next_token_head_is_refused(tiny_model_dir):
    with pytest.raises(VizError, match="is an encoder"):
        load_model(str(tiny_model_dir("bert")), device="cpu", head="causal-lm")
