"""Question answering with the embedded model's tokenizer and weights, and ``python -m vizcore finetune --task qa``:
the built-in answers map onto tokens exactly, a short CLI run prints its held-out figures as JSON, bad files
are one line."""

import json
from pathlib import Path

import pytest

from tests.unit.test_finetune_cli import run
from vizcore.finetune.qa import builtin_qa
from vizcore.finetune.qa_spans import answer_tokens, encode_features
from vizcore.finetune.qa_task import QA


def small_set(folder: Path) -> str:
    """Four passages, two questions each; the last passage is held out."""
    passages = []
    for p, (place, river) in enumerate([("Paris", "Seine"), ("London", "Thames"), ("Rome", "Tiber"),
                                        ("Vienna", "Danube")]):
        context = f"{place} is a large city. The river {river} flows through {place}, and many bridges cross it."
        passages.append({"context": context, "split": "test" if p == 3 else "train", "questions": [
            {"question": f"Which river flows through {place}?",
             "answers": [{"text": river, "answer_start": context.index(river)}]},
            {"question": "What crosses the river?",
             "answers": [{"text": "many bridges", "answer_start": context.index("many bridges")}]}]})
    path = folder / "small.json"
    path.write_text(json.dumps(passages), encoding="utf-8")
    return str(path)


def test_every_builtin_answer_maps_onto_tokens_of_the_embedded_tokenizer(minilm):
    data = builtin_qa()
    examples = data.train.examples + data.test.examples
    features = encode_features(minilm.tokenizer, examples, QA.defaults["max_length"])
    assert not any(f.cut_off for f in features)  # 384 tokens read every built-in passage whole
    for feature, example in zip(features, examples):
        answer = example.answers[0]
        assert example.context[feature.offsets[feature.start][0]: feature.offsets[feature.end][1]] == answer.text
    windows = encode_features(minilm.tokenizer, examples, 64, stride=128)
    found = {f.example for f in windows if not f.cut_off}
    assert found == set(range(len(examples)))  # every answer lies whole in some 64-token window
    for window in windows:
        if not window.cut_off:
            answer = examples[window.example].answers[0]
            assert answer_tokens(window.offsets, window.passage, answer.start, answer.end) == (window.start, window.end)


def test_the_cli_trains_qa_and_prints_token_f1_and_exact_match(capsys, tmp_path):
    code, out, err = run(capsys, "finetune", "--task", "qa", "--train", small_set(tmp_path), "--epochs", "1",
                         "--batch-size", "3", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["task"] == "qa" and data["eval"]["metric"] == "token_f1"
    assert data["config"]["max_length"] == 384 and data["label_names"] == []
    assert data["data"]["train_examples"] == 6 and data["data"]["eval_examples"] == 2
    assert data["train"]["steps"] == 2
    history = data["train"]["eval_history"]
    assert [row["step"] for row in history] == [0, 2]
    assert {"token_f1", "exact_match"} <= set(history[-1]) and history[-1]["token_f1"] == data["eval"]["token_f1"]
    assert 0 <= data["eval"]["exact_match"] <= data["eval"]["token_f1"] <= 1
    predictions = data["eval"]["predictions"]
    assert len(predictions) == 2 and {"id", "question", "gold", "predicted", "token_f1", "exact_match"} <= set(
        predictions[0])
    assert sum(p["token_f1"] for p in predictions) / 2 == pytest.approx(data["eval"]["token_f1"])
    assert "held-out token F1" in err


def test_a_csv_with_other_column_names_is_read_through_the_column_options(capsys, tmp_path, tiny_bert_dir):
    rows = ["passage,query,reply"] + [f'"Box {i} is {c} and heavy.",What colour is box {i}?,{c}'
                                      for i, c in enumerate(["red", "blue", "green", "pink", "grey"] * 2)]
    path = tmp_path / "qa.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    code, out, err = run(capsys, "finetune", "--task", "qa", "--train", str(path), "--text-column", "passage",
                         "--second-column", "query", "--label-column", "reply", "--model", str(tiny_bert_dir),
                         "--epochs", "1", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert (data["data"]["train_examples"], data["data"]["eval_examples"]) == (8, 2)  # 2 of 10 passages held out
    assert "seed 0" in data["data"]["held_out"]


def test_a_broken_file_is_one_line_and_exit_code_2(capsys, tmp_path):
    """main() here: the program's own exit code and stderr are proven by a real process in test_cli_hostile.py."""
    path = tmp_path / "broken.json"
    path.write_text('[{"context": "a b c",\n  "questions": [}]', encoding="utf-8")
    code, out, err = run(capsys, "finetune", "--task", "qa", "--train", str(path))
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [
        "error: python -m vizcore finetune: 'broken.json' is not valid JSON: Expecting value at line 2, column 17. "
        "Fix the file there (a missing comma or quote?) and upload it again."]


def test_an_eval_file_is_held_out_whole(capsys, tmp_path, tiny_bert_dir):
    code, out, err = run(capsys, "finetune", "--task", "qa", "--eval", small_set(tmp_path), "--model",
                         str(tiny_bert_dir), "--epochs", "1", "--batch-size", "64", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert (data["data"]["train_examples"], data["data"]["eval_examples"]) == (342, 8)
    assert "small.json" in data["data"]["held_out"]
