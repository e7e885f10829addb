"""The command line with hostile input: one clear ``error:`` line on stderr, exit code 2, no traceback,
nothing on stdout; or, for input that is merely unusual, the normal JSON (issue 15, deliverable F).

These call ``vizcore.cli.main`` in this process (the code ``python -m vizcore`` runs) on tiny models or
none; the real command (argv bytes, stdout's encoding) and the embedded model's cases are in
tests/integration/test_cli_hostile.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vizcore.cli import main


def assert_one_clear_line(code: int, out: str, err: str, part: str) -> None:
    assert code == 2, (code, err)
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and part in lines[0], err
    assert "Traceback" not in err


def run_main(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write_csv_files(folder: Path) -> dict[str, Path]:
    """Broken, mis-encoded, empty and odd-shaped training files in ``folder``, by name."""
    payloads = {
        "broken.csv": b'text,label\n"this never ends,pos\nok,neg\n',
        "latin-1.csv": "text,label\ncafé très bon,pos\nmauvais,neg\n".encode("latin-1"),
        "utf-16-no-bom.csv": "text,label\nbon,pos\nmauvais,neg\n".encode("utf-16-le"),
        "empty.csv": b"",
        "one-column.csv": b"text\nhello\nworld\n",
        "more-fields.csv": b"text,label\nhello, world,pos\nbye,neg\n",
        "binary.csv": bytes(range(256)) * 4,
    }
    for name, data in payloads.items():
        (folder / name).write_bytes(data)
    return {name: folder / name for name in payloads}


@pytest.fixture(scope="module")
def csv_files(tmp_path_factory) -> dict[str, Path]:
    return write_csv_files(tmp_path_factory.mktemp("hostile-csv"))


@pytest.mark.parametrize(("argv", "part"), [
    (["attention", "--text", ""], "The text is empty"),
    (["attention", "--text", "\u200b\ufeff\u200d"], "The text is empty"),
    (["attention", "--text", "\x00\x07\x1b"], "The text is empty"),
    (["attention", "--text", "a\udcff b"], "invalid character at position 2"),
    (["attention", "--text", "ok", "--model", "../../x"], "does not exist"),
    (["attention", "--text", "ok", "--model", "/etc/passwd"], "is a file"),
    (["attention", "--text", "ok", "--model", "x" * 5_000], "is too long for a model folder"),
    (["attention", "--text", "ok", "--model", "https://huggingface.co/bert-base-uncased"],
     "give the hub id 'bert-base-uncased'"),
    (["attention", "--text", "ok", "--model", "bert base uncased"], "neither a built-in model"),
    (["head-stats", "--text", "\u200b"], "The text is empty"),
    (["fill-mask", "--text", "no mask here"], "no mask"),
    (["fill-mask", "--text", "\ufeff"], "The text is empty"),
    (["fill-mask", "--text", "[MASK]", "--model", "..\\.."], "does not exist"),
])
def test_hostile_arguments_get_one_clear_line(capsys, argv, part):
    assert_one_clear_line(*run_main(capsys, *argv), part)


@pytest.mark.parametrize(("name", "part"), [
    ("broken.csv", "could not be read as CSV"),
    ("latin-1.csv", "is not UTF-8 text"),
    ("utf-16-no-bom.csv", "UTF-16 text without a byte-order mark"),
    ("empty.csv", "is empty"),
    ("one-column.csv", "only one column"),
    ("more-fields.csv", "more fields than its header"),
    ("binary.csv", "is not a text file"),
])
def test_hostile_training_files_get_one_clear_line(capsys, csv_files, name, part):
    assert_one_clear_line(*run_main(capsys, "finetune", "--train", str(csv_files[name])), part)
    assert_one_clear_line(*run_main(capsys, "finetune", "--eval", str(csv_files[name])), part)


def test_too_many_masks_are_counted_as_typed(capsys, tiny_bert_dir):
    assert_one_clear_line(*run_main(capsys, "fill-mask", "--model", str(tiny_bert_dir), "--text", "[MASK] " * 600),
                          "The text has 600 masks")


@pytest.mark.parametrize("text", [
    "👩‍👩‍👧‍👦 👋🏽 family", "שלום עולם مرحبا", "bell\x07 \x1b[31mred\x1b[0m", "<script>alert(1)</script>",
    "**bold** $x^2$ [link](javascript:alert(1))", "[MASK][MASK]x", "[CLS] [SEP]", "a" * 10_000,
])
def test_unusual_text_gives_the_normal_json(capsys, tiny_bert_dir, text):
    code, out, err = run_main(capsys, "attention", "--model", str(tiny_bert_dir), "--text", text)
    assert code == 0 and err == ""
    result = json.loads(out)
    assert result["text"] == text and result["tokens"][0] == "[CLS]" and result["tokens"][-1] == "[SEP]"
    n = len(result["tokens"])
    assert len(result["attention"][0][0]) == n and len(result["attention"][0][0][0]) == n
