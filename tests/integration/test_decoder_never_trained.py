"""The shipped causal MiniLM never draws a token it was never trained to produce (issue 35): 20 tokens with
20 seeds on the Generate page's default prompt, at every temperature the page offers, with nothing else cut
(no top-k, no top-p, word pieces allowed: the loosest sampling the page allows). The 420 continuations are
drawn as one batch (``vizcore.decoder.samples``), checked against ``generate`` row for row, and the CLI's
``--samples`` prints the same draws."""

from __future__ import annotations

import json

import pytest
import torch

from tests.unit.test_fill_mask_cli import run_cli
from ui.decoder.page import DEFAULTS
from vizcore.decoder.generation import generate
from vizcore.decoder.ranges import TEMPERATURE
from vizcore.decoder.samples import sample_rows
from vizcore.decoder.sampling import Settings
from vizcore.decoder.vocabulary import banned_tokens
from vizcore.model.catalog import CAUSAL_MODEL
from vizcore.model.loading import load_model

SEEDS = range(20)
TOKENS = 20


@pytest.fixture(scope="module")
def causal():
    return load_model(CAUSAL_MODEL, device="cpu", head="causal-lm")


@pytest.fixture(scope="module")
def samples(causal):
    rows = [(Settings(temperature), seed) for temperature in TEMPERATURE.values() for seed in SEEDS]
    return sample_rows(causal, DEFAULTS["prompt"], rows, TOKENS)


def test_no_temperature_the_page_offers_draws_a_never_trained_token(causal, samples):
    never = banned_tokens(causal).never
    names = causal.tokenizer.convert_ids_to_tokens(torch.nonzero(never).flatten().tolist())
    assert "[unused80]" in names and {"[PAD]", "[CLS]", "[MASK]", "[UNK]"} <= set(names)  # what the issue saw
    assert "[SEP]" not in names  # the end of the text stays possible
    assert len(samples) == len(TEMPERATURE.values()) * len(SEEDS) and TEMPERATURE.high in TEMPERATURE.values()
    drawn = [(s.settings.temperature, s.seed, token) for s in samples for token in s.token_ids]
    assert len(drawn) > len(samples) * TOKENS / 2  # most rows ran their 20 tokens
    bad = [(t, seed, causal.tokenizer.convert_ids_to_tokens(token)) for t, seed, token in drawn if never[token]]
    assert not bad, bad[:10]


def test_the_batch_draws_what_generate_draws(causal, samples):
    row = next(s for s in samples if s.settings.temperature == TEMPERATURE.high and s.seed == 7)  # the flattest
    alone = generate(causal, DEFAULTS["prompt"], TOKENS, Settings(TEMPERATURE.high), seed=7)
    assert row.token_ids == tuple(step.token_id for step in alone.steps) and row.text == alone.text
    assert len(row.token_ids) > 1


def test_the_cli_prints_one_sample_per_seed(capsys, causal):
    code, out, err = run_cli(capsys, "generate", "--prompt", DEFAULTS["prompt"], "--temperature", "1.5",
                             "--seed", "4", "--samples", "3", "--max-new-tokens", "8", "--format", "json")
    assert code == 0, err
    printed = json.loads(out)["samples"]
    expected = sample_rows(causal, DEFAULTS["prompt"], [(Settings(1.5), seed) for seed in (4, 5, 6)], 8)
    assert [p["seed"] for p in printed] == [4, 5, 6]
    assert [(p["token_ids"], p["text"]) for p in printed] == [(list(s.token_ids), s.text) for s in expected]
    assert len({p["text"] for p in printed}) > 1  # each seed its own draws
