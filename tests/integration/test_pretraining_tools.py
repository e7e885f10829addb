"""The training tools of issue 17: the causal LM's targets and shipped tensors, NSP's pairs, the cards."""

from __future__ import annotations

import json
from collections import Counter

import pytest
import torch

from tools import clm_training, decoder_cards, nsp_training


def test_next_token_pairs_leave_out_the_windows_artificial_closing_sep():
    ids = torch.tensor([[101, 7, 8, 9, 102]])
    inputs, targets = clm_training.split(ids)
    assert inputs.tolist() == [[101, 7, 8]] and targets.tolist() == [[7, 8, 9]]


def test_the_causal_model_ships_everything_but_the_frozen_vocabulary():
    model = clm_training.new_causal_model(attn="eager")
    assert model.config.is_decoder
    groups = clm_training.parameter_groups(model, 0.01)
    trained = {id(p) for group in groups for p in group["params"]}
    words = model.bert.embeddings.word_embeddings.weight
    assert id(words) not in trained and not words.requires_grad
    assert model.cls.predictions.decoder.weight is words  # tied: the output layer is frozen with it
    state = clm_training.changed_state(model, 103)
    assert not set(state) & set(clm_training.FROZEN)
    assert "bert.encoder.layer.5.output.dense.weight" in state and "cls.predictions.bias" in state
    assert sum(t.numel() for t in state.values()) * 2 < 25e6  # fp16 bytes: the budget is 40 MB for both


def test_causal_loss_is_cross_entropy_of_each_next_token():
    model = clm_training.new_causal_model(attn="eager").eval()
    ids = torch.tensor([[101, 1996, 4937, 2938, 2006, 102]])
    with torch.no_grad():
        loss, logits, targets = clm_training.causal_loss(model, ids)
        full = model(input_ids=ids[:, :-2]).logits
    manual = -full[0].log_softmax(-1)[torch.arange(4), ids[0, 1:-1]].mean()
    assert float(loss) == pytest.approx(float(manual), rel=1e-5)


def documents() -> dict[str, list[list[str]]]:
    return {"news": [[f"News {d} sentence {i} here." for i in range(4)] for d in range(6)],
            "bible": [[f"Verse {d} line {i} here." for i in range(3)] for d in range(4)]}


def test_nsp_pairs_are_half_real_next_sentences_and_half_from_other_documents():
    docs = documents()
    pairs = nsp_training.make_pairs(docs, 400, seed=3)
    assert Counter(p["label"] for p in pairs) == {0: 200, 1: 200}
    for pair in pairs:
        doc_of_a = pair["a"].split()[1]
        doc_of_b = pair["b"].split()[1]
        same_source = pair["a"].split()[0] == pair["b"].split()[0]
        if pair["label"] == 0:  # IsNext: B is the sentence right after A's last one
            assert same_source and doc_of_a == doc_of_b
            assert int(pair["b"].split()[3]) == int(pair["a"].split()[-2]) + 1
        else:  # NotNext: B comes from another document
            assert not (same_source and doc_of_a == doc_of_b)
    assert nsp_training.make_pairs(docs, 50, seed=3) == nsp_training.make_pairs(docs, 50, seed=3)


def test_the_evaluation_tells_notnext_from_the_same_source_apart():
    pairs = nsp_training.make_pairs(documents(), 200, seed=1)
    for pair in pairs:
        kinds = nsp_training.pair_kinds(pair)
        same = pair["a"].split()[0] == pair["b"].split()[0]
        assert kinds == (("IsNext",) if pair["label"] == 0 else
                         ("NotNext", "NotNext, B from the same source" if same else "NotNext, B from another source"))
    assert {nsp_training.pair_kinds(p)[-1] for p in pairs} == {
        "IsNext", "NotNext, B from the same source", "NotNext, B from another source"}


def test_sentences_split_at_sentence_ends_and_drop_fragments():
    assert nsp_training.sentences("He came home. It was late! Ok. Did she wait? Yes she did.") == [
        "He came home.", "It was late!", "Did she wait?", "Yes she did."]


def test_the_nsp_run_ships_only_the_top_layers_pooler_and_classifier():
    model = nsp_training.new_pretraining_model(attn="eager")
    state = nsp_training.changed_state(model, 3)
    layers = {k.split(".")[3] for k in state if k.startswith("bert.encoder.layer.")}
    assert layers == {"3", "4", "5"}
    assert "cls.seq_relationship.weight" in state and "bert.pooler.dense.weight" in state
    assert not any(k.startswith(("bert.embeddings", "cls.predictions")) for k in state)


def curve(n: int) -> list[dict]:
    return [{"step": 100 * i, "tokens": 6400 * i, "lr": 2e-4, "heldout_loss": 5 - i / 10, "heldout_top1": 0.2,
             "heldout_top5": 0.38 + i / 100, "heldout_perplexity": 150.0 - i, "probes_right": i,
             "pairs_seen": 32 * i, "heldout_accuracy": 0.5 + i / 20} for i in range(n)]


def test_the_cards_are_written_from_the_metrics_files(tmp_path):
    probes = [{"text": "She opened the", "top5": ["door", "window", "box", "letter", "bag"], "hit": True}]
    shipped = {"heldout_top1": 0.25, "heldout_top5": 0.4321, "heldout_perplexity": 120.5, "heldout_targets": 254_882,
               "heldout_set": "4111 of 4111 windows, abc", "probes_right": 1, "probes": probes}
    (tmp_path / "minilm-causal.json").write_text(json.dumps(
        {"best": {**curve(5)[-1], "config": {"steps": 400}}, "shipped": shipped, "corpus": {}, "curve": curve(5)}))
    (tmp_path / "minilm-causal.safetensors").write_bytes(b"0" * 1000)
    examples = [{"a": "A.", "b": "B.", "expected": "IsNext", "is_next": 0.9}]
    (tmp_path / "minilm-nsp.json").write_text(json.dumps(
        {"best": {**curve(3)[-1], "config": {"train_layers": 3}}, "curve": curve(3),
         "shipped": {"heldout_accuracy": 0.912, "heldout_pairs": 2000, "examples": examples,
                     "by_part": {"bible": {"accuracy": 0.9, "pairs": 400}}},
         "pairs": {"train": {"pairs": 10, "documents": {"bible": 2}}}}))
    (tmp_path / "minilm-nsp.safetensors").write_bytes(b"0" * 1000)
    written = decoder_cards.write_cards(tmp_path)
    causal = (tmp_path / "MODEL_CARD_CAUSAL.md").read_text()
    assert "top-5 43.2%" in causal and "perplexity **120.5**" in causal and "Below the 50% goal" in causal
    assert "| ✓ | She opened the | door, window, box, letter, bag |" in causal
    nsp = (tmp_path / "MODEL_CARD_NSP.md").read_text()
    assert "91.2%" in nsp and "Below the 95% goal" in nsp and set(written) == {"causal", "nsp"}
    svg = (tmp_path / "causal-learning-curve.svg").read_text()
    assert svg.count("<polyline") == 2 and "goal 50% top-5" in svg
