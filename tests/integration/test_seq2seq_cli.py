"""``python -m vizcore translate-date`` in a real process with the shipped weights: the fixed fields, the
attention against a direct computation, --input with one object per line (through main()), one clear line for
bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from vizcore.cli import main
from vizcore.seq2seq.translator import translate

ROOT = Path(__file__).resolve().parents[2]
TEXT = "the twenty first of march nineteen ninety nine"


def cli(*argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "vizcore", "translate-date", *argv], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_text_gives_the_fixed_fields_and_the_models_own_attention():
    done = cli("--text", TEXT, "--format", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["output"] == "1999-03-21" and data["output_tokens"] == list("1999-03-21")
    assert data["input_tokens"] == TEXT.split() and data["correct"] is True and data["outside_training"] is False
    cross = np.array(data["cross_attention"])  # [layer][head][output][input]
    assert cross.shape[2:] == (10, 8)
    np.testing.assert_allclose(cross, translate(TEXT).run.cross, atol=1e-6)
    np.testing.assert_array_equal(np.array(data["gold_alignment"])[0], [0, 0, 0, 0, 0, 1, 1, 1])


def test_input_file_one_object_per_line_in_order_with_empty_and_outside_lines_reported(capsys, tmp_path):
    """main() here, the same code as the program above without importing torch again (about 2.5 CPU-s)."""
    path = tmp_path / "dates.txt"
    path.write_text("may fifth, two thousand and seven\n\nthe thirty first of february two thousand\n"
                    "the fourty second of smarch\n")
    code = main(["translate-date", "--input", str(path), "--beam", "3"])
    out, err = capsys.readouterr()
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "[" and lines[-1] == "]" and len(lines) == 6
    records = json.loads(out)
    assert [json.loads(line.rstrip(",")) for line in lines[1:-1]] == records
    assert records[0]["output"] == "2007-05-05" and records[0]["beam"] == 3
    assert records[1] == {"line": 2, "text": "", "error": records[1]["error"]} and "empty" in records[1]["error"]
    assert records[2]["outside_training"] and records[2]["in_grammar"] and "No such date" in records[2]["reason"]
    assert records[3]["outside_training"] and not records[3]["in_grammar"] and records[3]["output"]


def test_empty_text_is_one_clear_line_and_exit_2():
    done = cli("--text", "  ")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("error: python -m vizcore translate-date: The text is empty")
    assert done.stderr.count("\n") == 1
