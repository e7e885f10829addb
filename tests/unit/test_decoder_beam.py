"""Beam search gives transformers' ``generate(num_beams=...)`` sequences and scores on a tiny GPT-2;
width 1 is greedy; every step's beams are recorded with their parents."""

from __future__ import annotations

import pytest
import torch

from tests.support.tiny_decoders import save_tiny_decoder
from vizcore.decoder.beam import beam_search
from vizcore.decoder.generation import generate, next_token_logits, prompt_ids
from vizcore.decoder.sampling import Settings
from vizcore.decoder.vocabulary import banned_tokens
from vizcore.errors import VizError
from vizcore.model.loading import load_model

PROMPT = "The cat sat on the"


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    return load_model(str(save_tiny_decoder("gpt2", tmp_path_factory.mktemp("gpt2"))), device="cpu", head="causal-lm")


def transformers_beams(loaded, prompt: str, width: int, new: int, stop: set[int], length_penalty: float,
                       early_stopping: bool) -> tuple[list[list[int]], list[float]]:
    ids = prompt_ids(loaded, prompt)
    with torch.no_grad():
        out = loaded.model.generate(ids, attention_mask=torch.ones_like(ids), num_beams=width, do_sample=False,
                                    num_return_sequences=width, max_new_tokens=new, early_stopping=early_stopping,
                                    length_penalty=length_penalty, eos_token_id=sorted(stop), pad_token_id=0,
                                    suppress_tokens=torch.nonzero(banned_tokens(loaded).never).flatten().tolist(),
                                    return_dict_in_generate=True, output_scores=True)
    lengths = (out.beam_indices >= 0).sum(-1).tolist()  # generated tokens of each returned sequence
    sequences = [row[ids.shape[1]:ids.shape[1] + n] for row, n in zip(out.sequences.tolist(), lengths)]
    return sequences, out.sequences_scores.tolist()


def a_stop_token_on_the_way(loaded, prompt: str) -> int:
    """A token that the second-best continuation of the first step is: so that some beam ends early."""
    logits = next_token_logits(loaded, prompt_ids(loaded, prompt))
    return int(logits.topk(2).indices[1])


@pytest.mark.parametrize(("width", "length_penalty", "early_stopping"),
                         [(2, 1.0, True), (3, 1.0, True), (5, 1.0, True), (3, 0.0, True), (4, 2.0, True),
                          (3, 1.0, False), (5, -0.5, False)])
def test_beam_search_equals_transformers_generate(gpt2, width, length_penalty, early_stopping):
    stop = {a_stop_token_on_the_way(gpt2, PROMPT), 1012}  # 1012 '.'
    result = beam_search(gpt2, PROMPT, width=width, max_new_tokens=7, length_penalty=length_penalty,
                         early_stopping=early_stopping, stop=stop)
    sequences, scores = transformers_beams(gpt2, PROMPT, width, 7, stop, length_penalty, early_stopping)
    assert [list(h.token_ids) for h in result.hypotheses] == sequences
    assert [h.normalised for h in result.hypotheses] == pytest.approx(scores, abs=1e-4)
    assert any(step.finished for step in result.steps[:-1])  # a beam ended on a stop token before the limit
    assert len(result.hypotheses) == width


def test_without_stop_tokens_every_beam_runs_to_the_limit(gpt2):
    result = beam_search(gpt2, PROMPT, width=3, max_new_tokens=5, stop=set())
    sequences, scores = transformers_beams(gpt2, PROMPT, 3, 5, {gpt2.tokenizer.vocab_size - 1}, 1.0, True)
    assert [list(h.token_ids) for h in result.hypotheses] == sequences
    assert [h.normalised for h in result.hypotheses] == pytest.approx(scores, abs=1e-4)
    assert [len(s.beams) for s in result.steps] == [3, 3, 3, 3, 0]


def test_width_one_is_greedy(gpt2):
    result = beam_search(gpt2, PROMPT, width=1, max_new_tokens=6, stop=set())
    greedy = generate(gpt2, PROMPT, max_new_tokens=6, settings=Settings(0.0))
    assert list(result.hypotheses[0].token_ids) == [s.token_id for s in greedy.steps]


def test_each_step_records_beams_their_parents_and_summed_log_probabilities(gpt2):
    result = beam_search(gpt2, PROMPT, width=3, max_new_tokens=4, stop=set())
    ids = prompt_ids(gpt2, PROMPT)
    first = result.steps[0].beams
    log_probs = next_token_logits(gpt2, ids).float().log_softmax(-1)
    drawable = log_probs.masked_fill(banned_tokens(gpt2).never, -torch.inf)  # as transformers' suppress_tokens
    assert [b.token_ids[0] for b in first] == drawable.topk(3).indices.tolist()
    assert all(b.parent == -1 for b in first)
    for before, after in zip(result.steps, result.steps[1:]):
        for beam in after.beams:
            parent = before.beams[beam.parent]
            assert beam.token_ids[:-1] == parent.token_ids
            sequence = torch.cat([ids, torch.tensor([parent.token_ids])], dim=1)
            step = next_token_logits(gpt2, sequence).float().log_softmax(-1)[beam.token_ids[-1]]
            assert beam.score == pytest.approx(parent.score + float(step), abs=1e-5)
        assert [b.score for b in after.beams] == sorted((b.score for b in after.beams), reverse=True)
    assert result.steps[1].beams[0].text == gpt2.tokenizer.decode(list(result.steps[1].beams[0].token_ids))
    assert result.to_dict()["steps"][0]["beams"][0]["parent"] == -1


@pytest.mark.parametrize("width", [0, 6, 2.5, True])
def test_a_bad_width_gets_a_clear_message(gpt2, width):
    with pytest.raises(VizError, match="beam width"):
        beam_search(gpt2, PROMPT, width=width)


@pytest.mark.parametrize("early_stopping", [True, False])
def test_early_stopping_decides_whether_finished_beams_end_the_search(gpt2, early_stopping):
    """Here two short hypotheses finish at once; early_stopping=False searches on, finds longer and better."""
    prompt = "She opened the"
    stop = {int(next_token_logits(gpt2, prompt_ids(gpt2, prompt)).topk(2).indices[1])}
    result = beam_search(gpt2, prompt, width=2, max_new_tokens=8, early_stopping=early_stopping, stop=stop)
    sequences, scores = transformers_beams(gpt2, prompt, 2, 8, stop, 1.0, early_stopping)
    assert [list(h.token_ids) for h in result.hypotheses] == sequences
    assert [h.normalised for h in result.hypotheses] == pytest.approx(scores, abs=1e-4)
    assert len(result.steps) == (2 if early_stopping else 8)
