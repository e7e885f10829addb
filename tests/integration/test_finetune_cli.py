"""``python -m vizcore finetune`` on a tiny random BERT, trained to the end: JSON on stdout, progress on stderr."""

import json

import pytest

from tests.unit.test_finetune_cli import run, write_files


@pytest.fixture
def files(tmp_path):
    return write_files(tmp_path)


def test_finetune_prints_json_with_eval_accuracy_and_label_names(capsys, tiny_bert_dir, files):
    train, evals = files
    code, out, err = run(capsys, "finetune", "--train", train, "--eval", evals, "--text-column", "sentence",
                         "--label-column", "sentiment", "--model", str(tiny_bert_dir), "--mode", "head",
                         "--epochs", "6", "--lr", "0.05", "--batch-size", "8", "--seed", "0", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["label_names"] == ["neg", "pos"] == data["eval"]["label_names"]
    assert data["eval"]["accuracy"] == 1.0
    confusion = data["eval"]["confusion"]
    assert confusion == [[2, 0], [0, 2]]
    assert data["data"]["train_examples"] == 36 and data["data"]["eval_examples"] == 4
    assert data["train"]["steps"] == 6 * 5 and data["config"]["lr"] == 0.05
    assert data["train"]["trainable_parameters"] == 32 * 2 + 2  # the head of a hidden-32 model
    assert "held-out accuracy" in err and "train step 30/30" in err  # progress on stderr only
    assert "train step" not in out


def test_accuracy_is_consistent_with_the_confusion_matrix(capsys, tiny_bert_dir, files):
    train, _ = files
    code, out, err = run(capsys, "finetune", "--train", train, "--text-column", "sentence", "--label-column",
                         "sentiment", "--model", str(tiny_bert_dir), "--mode", "full", "--epochs", "1")
    assert code == 0, err
    data = json.loads(out)
    confusion = data["eval"]["confusion"]
    total = sum(map(sum, confusion))
    assert total == data["data"]["eval_examples"] == 8  # 20 % of each label, seeded
    assert data["eval"]["accuracy"] == pytest.approx((confusion[0][0] + confusion[1][1]) / total)
    assert data["train"]["eval_history"][-1]["accuracy"] == pytest.approx(data["eval"]["accuracy"])


def test_the_pair_task_trains_on_the_builtin_pairs_from_the_cli(capsys, tiny_bert_dir):
    code, out, err = run(capsys, "finetune", "--task", "pair", "--model", str(tiny_bert_dir), "--mode", "head",
                         "--epochs", "1", "--batch-size", "64", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["task"] == "pair" and data["config"]["max_length"] == 128  # the pair task's default
    assert data["label_names"] == ["contradiction", "entailment", "neutral"]
    assert data["data"]["train_examples"] == 384 and data["data"]["eval_examples"] == 96
    assert data["eval"]["metric"] == "accuracy" and sum(map(sum, data["eval"]["confusion"])) == 96
    assert 0 <= data["eval"]["macro_f1"] <= 1 and data["train"]["steps"] == 6
    assert "held-out accuracy" in err
