"""The two built-ins of issue 17, loaded as the app loads them and checked against hand-built models.

``minilm-causal-tuned``: the embedded encoder as ``BertLMHeadModel(is_decoder=True)`` plus the shipped
causal tensors; ``minilm-nsp-tuned``: ``BertForPreTraining`` plus the masked-LM's and the NSP run's
tensors. Each is rebuilt here from the files with plain transformers and must give the same numbers;
the causal mask must put exactly no weight on later tokens; the shipped measures must match the
issue's floor and the everyday prompts it names.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from safetensors.torch import load_file
from transformers import BertForPreTraining, BertLMHeadModel

from vizcore.decoder import weights as causal_weights
from vizcore.decoder.generation import generate, next_token_logits, prompt_ids
from vizcore.decoder.probes import PLACES
from vizcore.decoder.sampling import Settings
from vizcore.errors import VizError
from vizcore.mlm import nsp
from vizcore.mlm import weights as mlm_weights
from vizcore.model.catalog import CAUSAL_MODEL, NSP_MODEL, embedded_minilm_path
from vizcore.model.loading import load_model
from vizcore.model.run import run


def with_file(model, path):
    """The file's tensors into a hand-built model, and its [MASK] row (when it has one) into the embeddings."""
    own = model.state_dict()
    saved = load_file(str(path))
    model.load_state_dict({k: v.float() for k, v in saved.items() if k in own}, strict=False)
    if mlm_weights.MASK_ROW_KEY in saved:
        with torch.no_grad():
            model.bert.embeddings.word_embeddings.weight[103] = saved[mlm_weights.MASK_ROW_KEY].float()
    return model


@pytest.fixture(scope="module")
def causal():
    return load_model(CAUSAL_MODEL, device="cpu", head="causal-lm")


@pytest.fixture(scope="module")
def pretraining():
    return load_model(NSP_MODEL, device="cpu", head="nsp")


def test_the_causal_builtin_equals_a_bert_lm_head_model_built_by_hand(causal):
    model = BertLMHeadModel.from_pretrained(str(embedded_minilm_path()), is_decoder=True,
                                            attn_implementation="eager")
    model = with_file(model, causal_weights.weights_path()).eval()
    ids = prompt_ids(causal, "She opened the")
    assert causal.tokenizer.convert_ids_to_tokens(ids[0].tolist()) == ["[CLS]", "she", "opened", "the"]
    with torch.no_grad():
        expected = model(input_ids=ids).logits[0, -1]
    torch.testing.assert_close(next_token_logits(causal, ids), expected, rtol=0, atol=1e-4)


def test_the_causal_mask_puts_no_weight_on_later_tokens(causal):
    record = run(causal, "The cat sat on the mat because it was warm.")
    later = np.triu(np.ones(record.attention.shape[-2:], dtype=bool), k=1)
    assert (record.attention[..., later] == 0).all()
    np.testing.assert_allclose(record.attention.sum(-1), 1.0, atol=1e-5)
    changed = run(causal, "The cat sat on the mat because it was cold.")
    same = len(record.tokens) - 3  # everything before "warm" / "cold"
    np.testing.assert_array_equal(record.hidden_states[:, :same], changed.hidden_states[:, :same])


def test_an_encoder_is_refused_for_generation_with_the_reason():
    with pytest.raises(VizError, match="encoder"):
        load_model("minilm-mlm-tuned", device="cpu", head="causal-lm")


def test_greedy_generation_is_transformers_greedy(causal):
    model = BertLMHeadModel.from_pretrained(str(embedded_minilm_path()), is_decoder=True,
                                            attn_implementation="eager")
    model = with_file(model, causal_weights.weights_path()).eval()
    ids = prompt_ids(causal, "Once upon a")
    with torch.no_grad():
        expected = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=6, do_sample=False,
                                  eos_token_id=causal.tokenizer.sep_token_id, pad_token_id=0)
    ours = generate(causal, "Once upon a", 6, Settings(temperature=0))
    assert [s.token_id for s in ours.steps] == expected[0, ids.shape[1]:].tolist()


def test_everyday_prompts_get_sensible_next_words(causal):
    """The issue's own examples: 'She opened the' -> door or window; 'I am going to the' -> a place."""
    door = generate(causal, "She opened the", 1, Settings(temperature=0), top=5).steps[0]
    assert {"door", "window"} & {t.strip() for t, _, _ in door.top}
    place = generate(causal, "I am going to the", 1, Settings(temperature=0), top=5).steps[0]
    assert set(PLACES) & {t.strip() for t, _, _ in place.top}


def test_the_causal_card_numbers_meet_the_floor():
    metrics = json.loads(causal_weights.weights_path().with_suffix(".json").read_text())
    assert metrics["shipped"]["heldout_top5"] >= 0.40
    assert metrics["shipped"]["heldout_targets"] > 200_000  # the whole held-out set, not a sample
    assert causal_weights.weights_path().stat().st_size < 25e6


def test_next_sentence_equals_bert_for_pretraining_built_by_hand(pretraining):
    model = BertForPreTraining.from_pretrained(str(embedded_minilm_path()), attn_implementation="eager")
    model = with_file(with_file(model, mlm_weights.weights_path()), nsp.weights_path()).eval()
    a, b, _ = nsp.EXAMPLES[0]
    enc = pretraining.tokenizer(a, b, return_tensors="pt")
    with torch.no_grad():
        expected = float(model(**enc).seq_relationship_logits.softmax(-1)[0, 0])
    result = nsp.next_sentence(pretraining, a, b)
    assert result.is_next == pytest.approx(expected, abs=1e-5)
    assert result.segments.count(1) == len(pretraining.tokenizer.tokenize(b)) + 1
    total = result.share["A"] + result.share["B"] + result.share["special"]
    torch.testing.assert_close(total, torch.ones_like(total), rtol=0, atol=1e-5)


def test_the_tutorials_examples_get_the_expected_answer(pretraining):
    """BERT's own example is IsNext, the penguins and the photosynthesis pairs NotNext, as the page's
    examples table says of the shipped head."""
    for a, b, expected in nsp.EXAMPLES:
        is_next = nsp.next_sentence(pretraining, a, b).is_next
        assert (is_next > 0.5) == (expected == "IsNext"), (a, b, is_next)


def metrics_model_is_next(a: str, b: str) -> float:
    return nsp.next_sentence(load_model(NSP_MODEL, device="cpu", head="nsp"), a, b).is_next


def test_the_nsp_card_numbers_are_the_shipped_files():
    metrics = json.loads(nsp.weights_path().with_suffix(".json").read_text())
    assert metrics["shipped"]["heldout_pairs"] == 2000
    assert metrics["shipped"]["heldout_accuracy"] >= 0.85
    examples = {(e["a"], e["b"]): e["is_next"] for e in metrics["shipped"]["examples"]}
    for a, b, _ in nsp.EXAMPLES:  # the card's examples are what the shipped file says now
        assert examples[(a, b)] == pytest.approx(metrics_model_is_next(a, b), abs=1e-4)
    assert nsp.weights_path().stat().st_size < 15e6


def test_the_nsp_model_still_fills_masks(pretraining):
    """Its masked-LM head reads the retrained top layers: trained jointly, it must still answer."""
    enc = pretraining.tokenizer("The capital of France is [MASK].", return_tensors="pt")
    with torch.no_grad():
        logits = pretraining.model(**enc).prediction_logits[0]
    index = int((enc["input_ids"][0] == pretraining.tokenizer.mask_token_id).nonzero()[0, 0])
    top = pretraining.tokenizer.convert_ids_to_tokens(logits[index].topk(5).indices.tolist())
    assert "paris" in top
