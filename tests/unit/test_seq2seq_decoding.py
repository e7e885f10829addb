"""Greedy and beam search on a tiny random model: width 1 is greedy, every score and distribution equals a
teacher-forced recomputation, the batched greedy of evaluation equals the one-at-a-time one."""

import numpy as np
import pytest
import torch

from vizcore.errors import VizError
from vizcore.seq2seq.dates import END, OUTPUT_VOCAB, START, input_ids, tokenize
from vizcore.seq2seq.decoding import MAX_STEPS, beam_search, greedy, greedy_ids, texts
from vizcore.seq2seq.model import DateModelConfig, DateTransformer

TEXTS = ["the twenty first of march nineteen ninety nine", "may fifth, two thousand",
         "july thirty first twenty forty two", "the first of january nineteen hundred"]


@pytest.fixture(scope="module", params=[0, 1, 2])
def model(request) -> DateTransformer:
    torch.manual_seed(request.param)
    model = DateTransformer(DateModelConfig(d_model=16, heads=2, encoder_layers=1, decoder_layers=2, d_ff=16))
    with torch.no_grad():  # sharper than at initialisation, so beams part ways and some end early
        model.generator.weight.mul_(6)
    return model.eval()


def log_probs_of(model: DateTransformer, source: list[int], tokens: tuple[str, ...]) -> torch.Tensor:
    """Teacher-forced log-probability of each token of ``tokens`` (one pass): (len(tokens),)."""
    target = torch.tensor([[OUTPUT_VOCAB.index(START)] + [OUTPUT_VOCAB.index(t) for t in tokens[:-1]]])
    with torch.no_grad():
        logits = model(torch.tensor([source]), target).logits[0].log_softmax(-1)
    return logits[torch.arange(len(tokens)), [OUTPUT_VOCAB.index(t) for t in tokens]]


@pytest.mark.parametrize("text", TEXTS)
def test_beam_width_one_is_greedy_token_for_token_and_score_for_score(model, text):
    source = input_ids(tokenize(text))
    a, b = greedy(model, source), beam_search(model, source, width=1)
    assert a.tokens == b.tokens and a.finished == b.finished
    assert b.score == pytest.approx(a.score, abs=1e-5)
    assert [s.token for s in a.steps] == [s.beams[0].tokens[-1] if s.beams else s.finished[0].tokens[-1]
                                          for s in b.steps]


@pytest.mark.parametrize("text", TEXTS)
def test_greedy_takes_the_arg_max_of_each_steps_distribution_and_its_score_is_the_sum(model, text):
    source = input_ids(tokenize(text))
    result = greedy(model, source)
    written = tuple(s.token for s in result.steps)
    recomputed = log_probs_of(model, source, written)
    assert result.score == pytest.approx(float(recomputed.sum()), abs=1e-5)
    for step, log_prob in zip(result.steps, recomputed.tolist()):
        assert step.distribution.sum() == pytest.approx(1.0, abs=1e-5)
        assert OUTPUT_VOCAB[int(step.distribution.argmax())] == step.token
        assert np.log(step.probability) == pytest.approx(log_prob, abs=1e-5)
    assert result.finished == (written[-1] == END) and (result.finished or len(written) == MAX_STEPS)


@pytest.mark.parametrize("width", [2, 3, 5])
def test_beam_hypotheses_scores_are_their_summed_log_probabilities_best_first(model, width):
    source = input_ids(tokenize(TEXTS[0]))
    result = beam_search(model, source, width=width)
    scores = [h.score for h in result.hypotheses]
    assert 1 <= len(result.hypotheses) <= width and scores == sorted(scores, reverse=True)
    for hypothesis in result.hypotheses:
        assert hypothesis.score == pytest.approx(float(log_probs_of(model, source, hypothesis.tokens).sum()), abs=1e-4)
    assert result.tokens == tuple(t for t in result.hypotheses[0].tokens if t != END)
    for step in result.steps:
        assert len(step.beams) <= width and step.distributions.shape[1] == len(OUTPUT_VOCAB)
        np.testing.assert_allclose(step.distributions.sum(1), 1.0, atol=1e-5)
    for before, step in zip(result.steps, result.steps[1:]):  # each beam extends its parent by one token
        for beam in step.beams:
            assert beam.tokens[:-1] == before.beams[beam.parent].tokens


def test_the_batched_greedy_of_evaluation_equals_greedy_one_at_a_time(model):
    ids = [input_ids(tokenize(t)) for t in TEXTS]
    width = max(map(len, ids))
    batched = texts(greedy_ids(model, torch.tensor([i + [0] * (width - len(i)) for i in ids]), steps=MAX_STEPS))
    assert batched == [greedy(model, i).text for i in ids]


@pytest.mark.parametrize("width", [0, 6, 2.0, True])
def test_a_bad_beam_width_is_refused(model, width):
    with pytest.raises(VizError, match="from 1 to 5"):
        beam_search(model, [2, 3], width=width)
