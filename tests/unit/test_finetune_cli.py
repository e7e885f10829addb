"""``python -m vizcore finetune`` on a tiny random BERT: its errors (training runs:
tests/integration/test_finetune_cli.py)."""

import csv

import pytest

from vizcore.cli import main

GOOD = ["good", "great", "lovely", "nice", "happy", "superb"]
BAD = ["bad", "awful", "poor", "sad", "ugly", "nasty"]


def write_csv(path, rows, header=("sentence", "sentiment")):
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return str(path)


def write_files(folder):
    """A separable training CSV and an evaluation CSV in ``folder``: (train path, eval path)."""
    train = [(f"{g} {h}", "pos") for g in GOOD for h in GOOD[:3]] + [(f"{b} {c}", "neg") for b in BAD for c in BAD[:3]]
    # Eval lists "pos" first: the label ids must still follow the training labels, matched by name.
    evals = [("great superb", "pos"), ("happy nice", "pos"), ("awful nasty", "neg"), ("sad ugly", "neg")]
    return write_csv(folder / "train.csv", train), write_csv(folder / "eval.csv", evals)


@pytest.fixture
def files(tmp_path):
    return write_files(tmp_path)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("argv", "message"), [
    (["--train", "/no/such.csv"], "does not exist"),
    (["--label-column", "stars"], "no label column 'stars'"),
    (["--mode", "sideways"], "invalid choice"),
    (["--epochs", "0"], "Epochs must be"),
    (["--model", "/no/such/model"], "does not exist"),
])
def test_errors_are_one_line_and_exit_2(capsys, tiny_bert_dir, files, argv, message):
    train, _ = files
    base = ["finetune", "--train", train, "--text-column", "sentence", "--label-column", "sentiment",
            "--model", str(tiny_bert_dir)]
    code, out, err = run(capsys, *base, *argv)
    assert code == 2 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(("argv", "message"), [
    (["--second-column", "B"], "no second text column 'B'"),
    (["--second-column", "sentence"], "must be different columns"),
    (["--task", "tagging"], "invalid choice: 'tagging'"),
])
def test_pair_errors_are_one_line_and_exit_2(capsys, tiny_bert_dir, files, argv, message):
    train, _ = files
    base = ["finetune", "--task", "pair", "--train", train, "--text-column", "sentence", "--label-column",
            "sentiment", "--model", str(tiny_bert_dir)]
    code, out, err = run(capsys, *base, *argv)
    assert code == 2 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1
