"""The token (NER) task on the embedded MiniLM: a short head-only run on silver sentences scored on the
hand-checked held-out file (checked against seqeval and a forward pass of its own), and the CLI."""

from __future__ import annotations

import json

import pytest
import torch
from seqeval.metrics import f1_score, precision_score, recall_score

from tests.unit.test_finetune_cli import run
from vizcore.finetune.tasks import get_task
from vizcore.finetune.tokens import HELDOUT_PATH, SILVER_PATH, TaggedData, builtin_token_data
from vizcore.finetune.training import task_config, train_task

TRAIN_SENTENCES = 300


@pytest.fixture(scope="module")
def small_data() -> TaggedData:
    data = builtin_token_data()
    return TaggedData(data.train.subset(range(TRAIN_SENTENCES)), data.test, "builtin", data.split_note)


@pytest.fixture(scope="module")
def trained(minilm, small_data):
    torch.set_num_threads(1)
    config = task_config(get_task("token"), mode="head", lr=1e-2, epochs=5, batch_size=32, seed=0)
    return train_task(minilm, get_task("token"), small_data, config)


def first_piece_tags(result, words: tuple[str, ...]) -> list[str]:
    """Tags from a forward pass of the whole sentence, each word read at its first piece: the position
    counted from the pieces of each word tokenized alone (not from the tokenizer's word_ids)."""
    tokenizer = result.tokenizer
    counts = [len(tokenizer.tokenize(w)) for w in words]
    inputs = tokenizer(list(words), is_split_into_words=True, return_tensors="pt")
    assert inputs["input_ids"].shape[1] == sum(counts) + 2  # nothing truncated
    with torch.inference_mode():
        logits = result.model(dict(inputs))[0]  # (T, C)
    positions = [1 + sum(counts[:i]) for i in range(len(words))]
    return [result.label_names[int(i)] for i in logits[positions].argmax(-1)]


def test_head_only_run_learns_and_its_scores_are_seqevals(trained, small_data):
    first, last = trained.history.evals[0], trained.history.evals[-1]
    assert first["step"] == 0 and last["entity_f1"] > first["entity_f1"] + 0.2
    test = small_data.test
    gold = [test.tag_strings(i) for i in range(len(test))]
    predicted = [first_piece_tags(trained, words) for words in test.words]
    assert last["entity_f1"] == pytest.approx(f1_score(gold, predicted))
    assert last["precision"] == pytest.approx(precision_score(gold, predicted))
    assert last["recall"] == pytest.approx(recall_score(gold, predicted))
    right = sum(g == p for gs, ps in zip(gold, predicted) for g, p in zip(gs, ps))
    assert last["token_accuracy"] == pytest.approx(right / sum(map(len, gold)))


def test_cli_trains_on_a_conll_file_and_scores_the_held_out_file(capsys, tmp_path, tiny_bert_dir):
    """What the command reads, trains and prints does not depend on the model (the run above shows MiniLM learn):
    the tiny random BERT with the embedded model's tokenizer (the same pieces) scores the same 131 sentences."""
    lines = SILVER_PATH.read_text(encoding="utf-8").split("\n\n")
    path = tmp_path / "few.conll"
    path.write_text("\n\n".join(lines[:61]) + "\n", encoding="utf-8")  # the header comments and 60 sentences
    code, out, err = run(capsys, "finetune", "--task", "token", "--train", str(path), "--eval", str(HELDOUT_PATH),
                         "--model", str(tiny_bert_dir), "--mode", "head", "--epochs", "1", "--batch-size", "32",
                         "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["task"] == "token" and data["config"]["max_length"] == 128  # the token task's default
    assert data["label_names"] == ["O", "B-LOC", "I-LOC", "B-MISC", "I-MISC", "B-ORG", "I-ORG", "B-PER", "I-PER"]
    assert data["data"]["train_examples"] == 60 and data["data"]["eval_examples"] == 131
    assert data["data"]["eval_counts"] == {"LOC": 131, "MISC": 55, "ORG": 58, "PER": 71}
    assert data["eval"]["metric"] == "entity_f1" and data["train"]["steps"] == 2
    assert {"entity_f1", "precision", "recall", "f1_PER", "f1_LOC", "f1_ORG", "f1_MISC", "token_accuracy"} <= set(
        data["eval"])
    assert data["train"]["eval_history"][0]["step"] == 0 and "held-out entity F1" in err
    predictions = data["eval"]["predictions"]
    assert len(predictions) == 131 and all(len(p["words"]) == len(p["predicted_tags"]) == len(p["gold_tags"])
                                           for p in predictions)
    assert sum(w == "O" for p in predictions for w in p["gold_tags"]) / sum(len(p["words"]) for p in predictions) \
        == pytest.approx(0.737, abs=1e-3)  # the held-out file's share of O words (docs/FINETUNE.md)


def test_cli_refuses_a_bad_conll_file_in_one_line(capsys, tmp_path):
    """main() here: the program's own exit code and stderr are proven by a real process in test_cli_hostile.py."""
    path = tmp_path / "bad.conll"
    path.write_text("Paris\tB-LOC\nlies\n", encoding="utf-8")
    code, out, err = run(capsys, "finetune", "--task", "token", "--train", str(path))
    assert code == 2 and out == ""
    assert err.strip().count("\n") == 0 and "line 2 has no tag" in err
