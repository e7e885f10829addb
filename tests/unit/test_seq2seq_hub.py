"""Hub encoder-decoders on tiny random T5 and BART: the record's tokens and shapes, the decoder's causal
mask, cross-attention against a hand computation from the layer's own inputs, greedy decoding against
``model.generate``, the step distributions against generate's scores, and the refusals."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from tests.support.tiny import save_tiny
from tests.support.tiny_seq2seq import save_tiny_seq2seq
from vizcore.errors import VizError
from vizcore.seq2seq.hub import greedy_ids, load_seq2seq, next_token_steps, source_ids, translate

# Texts on which the seeded tiny models write varied tokens (on others they repeat one token).
TEXTS = {"t5": "one two three", "bart": "The sun rises in the east."}
NEW_TOKENS = 10


@pytest.fixture(scope="module", params=["t5", "bart"])
def loaded(request, tmp_path_factory):
    folder = save_tiny_seq2seq(request.param, tmp_path_factory.mktemp(request.param))
    return load_seq2seq(str(folder), device="cpu")


def kind(loaded) -> str:
    return loaded.model.config.model_type


def generated(loaded, text: str, **rules) -> list[int]:
    """transformers' own greedy decoding, without the start token and the end token."""
    ids = loaded.model.generate(source_ids(loaded, text), do_sample=False, num_beams=1,
                                max_new_tokens=NEW_TOKENS, **rules)[0, 1:].tolist()
    end = rules.get("eos_token_id", next(iter(loaded.end_ids)))
    return ids[:ids.index(end)] if end in ids else ids


def test_the_record_holds_the_tokens_and_shapes_of_the_model(loaded):
    text = TEXTS[kind(loaded)]
    run = translate(loaded, text, max_new_tokens=NEW_TOKENS)
    tokenizer, config = loaded.tokenizer, loaded.model.config
    assert run.input_tokens == tokenizer.convert_ids_to_tokens(tokenizer(text)["input_ids"])
    assert run.input_tokens[-1] == tokenizer.eos_token  # the specials as the tokenizer gives them
    assert run.decoder_tokens == [tokenizer.convert_ids_to_tokens(loaded.start_id)] + run.output_tokens[:-1]
    layers = (config.encoder_layers, config.decoder_layers) if kind(loaded) == "bart" else (2, 2)
    i, o = len(run.input_tokens), len(run.output_tokens)
    assert run.encoder.shape == (layers[0], 4, i, i) and run.decoder.shape == (layers[1], 4, o, o)
    assert run.cross.shape == (layers[1], 4, o, i) and run.gold is None
    assert run.encoder.dtype == np.float32 and run.model == loaded.name


def test_the_decoder_never_looks_ahead_and_every_row_sums_to_one(loaded):
    run = translate(loaded, TEXTS[kind(loaded)], max_new_tokens=NEW_TOKENS)
    o = len(run.output_tokens)
    above = np.triu(np.ones((o, o), dtype=bool), k=1)
    assert (run.decoder[..., above] == 0).all() and (run.decoder[..., ~above] > 0).any()
    for attention in (run.encoder, run.decoder, run.cross):
        np.testing.assert_allclose(attention.sum(-1), 1.0, atol=1e-5)


def cross_attention_by_hand(loaded, text: str, decoder_ids: list[int]) -> np.ndarray:
    """[Ld, H, O, I] from each cross-attention's own inputs (the decoder states, the encoder output)
    and its query / key projections: softmax(q k^T * scale), BART scaling by 1/sqrt(d_head), T5 not."""
    model, heads = loaded.model, 4
    if kind(loaded) == "bart":
        modules = [(layer.encoder_attn, layer.encoder_attn.q_proj, layer.encoder_attn.k_proj)
                   for layer in model.model.decoder.layers]
        scale = (model.config.d_model // heads) ** -0.5
    else:
        modules = [(block.layer[1].EncDecAttention, block.layer[1].EncDecAttention.q,
                    block.layer[1].EncDecAttention.k) for block in model.decoder.block]
        scale = 1.0
    seen: list[tuple[torch.Tensor, torch.Tensor]] = []
    handles = [m.register_forward_pre_hook(lambda _, args, kwargs: seen.append((args[0], kwargs["key_value_states"])),
                                           with_kwargs=True) for m, _, _ in modules]
    try:
        with torch.no_grad():
            model(input_ids=source_ids(loaded, text), decoder_input_ids=torch.tensor([decoder_ids]))
    finally:
        for handle in handles:
            handle.remove()
    layers = []
    for (queries, states), (_, q_proj, k_proj) in zip(seen, modules):
        q = q_proj(queries)[0].view(len(decoder_ids), heads, -1).transpose(0, 1)  # (H, O, d)
        k = k_proj(states)[0].view(states.shape[1], heads, -1).transpose(0, 1)  # (H, I, d)
        layers.append((q @ k.transpose(1, 2) * scale).softmax(-1))  # (H, O, I)
    return torch.stack(layers).numpy()


def test_cross_attention_equals_a_computation_by_hand(loaded):
    text = TEXTS[kind(loaded)]
    run = translate(loaded, text, max_new_tokens=NEW_TOKENS)
    decoder_ids = loaded.tokenizer.convert_tokens_to_ids(run.decoder_tokens)
    np.testing.assert_allclose(run.cross, cross_attention_by_hand(loaded, text, decoder_ids), atol=1e-5)


def test_greedy_decoding_equals_generate(loaded):
    text = TEXTS[kind(loaded)]
    ours = greedy_ids(loaded, source_ids(loaded, text), NEW_TOKENS)
    assert ours == generated(loaded, text)
    assert len(set(ours)) >= 4  # a comparison of varied tokens, not of one repeated token
    if kind(loaded) == "bart":  # its rules: <s> forced first, </s> forced at the limit
        assert ours[0] == loaded.tokenizer.bos_token_id and len(ours) == NEW_TOKENS - 1


def test_greedy_stops_at_the_end_token_and_never_writes_a_banned_one(loaded):
    text = TEXTS[kind(loaded)]
    plain = greedy_ids(loaded, source_ids(loaded, text), NEW_TOKENS)
    end = plain[3]
    stopped = greedy_ids(dataclasses.replace(loaded, end_ids=frozenset([end])), source_ids(loaded, text), NEW_TOKENS)
    assert stopped == plain[:plain.index(end)] == generated(loaded, text, eos_token_id=end)
    banned = plain[2]
    rules = dataclasses.replace(loaded, banned_ids=(*loaded.banned_ids, banned))
    avoided = greedy_ids(rules, source_ids(loaded, text), NEW_TOKENS)
    first = plain.index(banned)
    assert banned not in avoided and avoided[:first] == plain[:first] and avoided != plain
    assert avoided == generated(loaded, text, bad_words_ids=[[i] for i in rules.banned_ids])


def test_a_given_target_is_read_not_generated(loaded):
    target = "the cat sat on the mat" if kind(loaded) == "t5" else "The cat sat on the mat."
    run = translate(loaded, TEXTS[kind(loaded)], target=target)
    labels = loaded.tokenizer(text_target=target)["input_ids"][:-1]  # without the end token
    assert run.output_tokens == loaded.tokenizer.convert_ids_to_tokens(labels)
    assert run.cross.shape[2] == len(labels)


def test_each_steps_distribution_is_the_models_and_names_the_written_token(loaded):
    text = TEXTS[kind(loaded)]
    run = translate(loaded, text, max_new_tokens=NEW_TOKENS)
    # generate's scores: the logits after its rules (banned tokens at -inf; a forced step one-hot)
    scores = loaded.model.generate(source_ids(loaded, text), do_sample=False, max_new_tokens=NEW_TOKENS,
                                   output_scores=True, return_dict_in_generate=True).scores
    steps = next_token_steps(loaded, run, k=5)
    assert len(steps) == len(run.output_tokens)
    forced = {0} if loaded.forced_first is not None else set()
    for step, score in zip(steps, scores):
        assert step.chosen == run.output_tokens[step.step]
        if step.step in forced:
            continue
        expected = score[0].topk(5).indices
        assert step.token_ids == expected.tolist() and step.chosen_id == step.token_ids[0] and step.chosen_rank == 0
        np.testing.assert_allclose(step.probabilities, score[0].softmax(-1)[expected].numpy(), atol=1e-6)


def test_banned_tokens_have_no_probability_and_a_target_token_has_its_rank(loaded):
    run = translate(loaded, TEXTS[kind(loaded)], target="the cat sat" if kind(loaded) == "t5" else "The cat sat")
    for step in next_token_steps(loaded, run, k=400):  # k above the vocabulary: every token
        probability = dict(zip(step.token_ids, step.probabilities))
        assert len(probability) == len(loaded.tokenizer) and all(probability[i] == 0 for i in loaded.banned_ids)
        assert step.token_ids[step.chosen_rank] == step.chosen_id
        assert step.chosen_probability == step.probabilities[step.chosen_rank]
        assert (np.diff(step.probabilities) <= 0).all()
        assert step.probabilities.sum() == pytest.approx(1.0, abs=1e-4)


@pytest.mark.parametrize(("model", "says"), [("bert", "an encoder only"), ("gpt2", "a decoder only")])
def test_a_model_without_an_encoder_or_a_decoder_is_refused(tmp_path, model, says):
    with pytest.raises(VizError, match=f"is {says}.*t5-small"):
        load_seq2seq(str(save_tiny(model, tmp_path)), device="cpu")


def test_an_unreachable_hub_id_says_what_to_do_offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(VizError, match="Could not load 'no-such-org/no-such-seq2seq'.*local model folder"):
        load_seq2seq("no-such-org/no-such-seq2seq", device="cpu")


def test_bad_requests_are_refused_with_a_message(loaded, tmp_path):
    with pytest.raises(VizError, match="source text is empty"):
        translate(loaded, "  ")
    with pytest.raises(VizError, match="between 1 and 128"):
        translate(loaded, TEXTS[kind(loaded)], max_new_tokens=0)
    with pytest.raises(VizError, match="these views take up to 256"):
        translate(loaded, "the cat " * 200)
    other = dataclasses.replace(translate(loaded, TEXTS[kind(loaded)], max_new_tokens=3), model="another")
    with pytest.raises(VizError, match="run is of 'another'"):
        next_token_steps(loaded, other)
