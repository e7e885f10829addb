"""The command line with hostile input, as a real process (how argv bytes are decoded, stdout's encoding) and
on the embedded model (the other cases: tests/unit/test_cli_hostile.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.test_cli_hostile import assert_one_clear_line, run_main, write_csv_files

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def csv_files(tmp_path_factory) -> dict[str, Path]:
    return write_csv_files(tmp_path_factory.mktemp("hostile-csv"))


@pytest.mark.parametrize(("argv", "part"), [
    (["attention", "--text", "ok", "--pair", "\udce9"], "second sentence has an invalid character"),
])
def test_hostile_arguments_get_one_clear_line(capsys, argv, part):
    assert_one_clear_line(*run_main(capsys, *argv), part)


def run_cli(*args: str | bytes, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vizcore", *args], capture_output=True, cwd=ROOT, timeout=300,
                          env={**os.environ, **(env or {})})


def test_the_real_command_with_bytes_that_are_not_utf8_and_a_broken_file(csv_files, tiny_bert_dir):
    # argv bytes that are not UTF-8 reach Python as lone surrogates (PEP 383)
    result = run_cli("attention", "--model", str(tiny_bert_dir), "--text", b"caf\xe9 au lait")
    assert_one_clear_line(result.returncode, result.stdout.decode(), result.stderr.decode(),
                          "invalid character at position 4")
    result = run_cli("finetune", "--train", str(csv_files["broken.csv"]))
    assert_one_clear_line(result.returncode, result.stdout.decode(), result.stderr.decode(), "could not be read as CSV")


def test_the_json_is_utf8_whatever_the_consoles_code_page(tiny_bert_dir):
    """A Windows console or a redirect there writes cp1252, which has no emoji: the JSON must still come out."""
    result = run_cli("attention", "--model", str(tiny_bert_dir), "--text", "🦊 שלום",
                     env={"PYTHONIOENCODING": "cp1252"})
    assert result.returncode == 0, result.stderr.decode()
    assert json.loads(result.stdout.decode("utf-8"))["text"] == "🦊 שלום"
