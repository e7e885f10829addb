"""``python -m vizcore corpus`` on the embedded model: per-head measures equal an independent computation from
the ``attention`` command's weights on sampled sentences; the command's stdout, stderr and files."""

from __future__ import annotations

import contextlib
import io
import json
import random
import subprocess
import sys
import unicodedata
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from tests.unit.test_cli_hostile import run_main
from vizcore.cli import main

ROOT = Path(__file__).resolve().parents[2]
COLLECTION = (ROOT / "vizcore" / "data" / "search-collection.txt").read_text(encoding="utf-8").splitlines()


def independent_measures(result: dict) -> dict[str, np.ndarray]:
    """Clark et al.'s measures from the attention command's JSON, written here from the definitions."""
    a = np.asarray(result["attention"], dtype=np.float64)  # (L, H, T, T)
    special = np.asarray(result["special_mask"], dtype=bool)
    n = a.shape[-1]

    def punctuation(token: str) -> bool:
        text = token.replace("##", "")
        return bool(text) and all(unicodedata.category(c)[0] in "PS" for c in text)

    punct = np.array([punctuation(t) and not s for t, s in zip(result["tokens"], special)])
    first = np.zeros(n, dtype=bool)
    first[0] = special[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.nansum(np.where(a > 0, a * np.log(a), 0.0), axis=-1).mean(-1)
    return {
        "entropy": entropy, "max_weight": a.max(-1).mean(-1),
        "cls": a[..., first].sum(-1).mean(-1), "sep": a[..., special & ~first].sum(-1).mean(-1),
        "punctuation": a[..., punct].sum(-1).mean(-1),
        "self": np.array([[np.mean([m[i, i] for i in range(n)]) for m in layer] for layer in a]),
        "previous": np.array([[np.mean([m[i, i - 1] for i in range(1, n)]) for m in layer] for layer in a]),
        "next": np.array([[np.mean([m[i, i + 1] for i in range(n - 1)]) for m in layer] for layer in a]),
    }


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    folder = tmp_path_factory.mktemp("corpus")
    lines = COLLECTION[:40]
    lines[5:5] = ["", "   "]
    (folder / "in.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    # main() here: the program in a process of its own is the bad input below (and tests/integration/test_corpus_ray.py)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["corpus", "--input", str(folder / "in.txt"), "--out", str(folder / "out"), "--batch-size", "16",
                     "--format", "json"])
    return folder, lines, subprocess.CompletedProcess([], code, out.getvalue(), err.getvalue())


def test_the_command_prints_the_summary_and_progress(finished):
    folder, lines, result = finished
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert (summary["sentences"], summary["skipped"], summary["truncated"]) == (40, 2, 0)
    assert (summary["model"], summary["engine"]) == ("all-MiniLM-L6-v2", "local")
    assert summary == json.loads((folder / "out" / "summary.json").read_text())
    assert "40/40 sentences (100 %" in result.stderr and "Traceback" not in result.stderr


def test_measures_equal_an_independent_computation_from_the_attention_command(finished, capsys):
    folder, lines, _ = finished
    table = pq.read_table(folder / "out" / "heads.parquet").to_pandas()
    assert len(table) == 40 * 6 * 12
    kept = [i for i, line in enumerate(lines) if line.strip()]
    for sentence_id in random.Random(21).sample(kept, 3):
        code, out, err = run_main(capsys, "attention", "--text", lines[sentence_id], "--format", "json")
        assert code == 0, err
        expected = independent_measures(json.loads(out))
        rows = table[table["sentence_id"] == sentence_id].sort_values(["layer", "head"])
        for name, values in expected.items():
            np.testing.assert_allclose(rows[name].to_numpy().reshape(6, 12), values, atol=1e-6,
                                       err_msg=f"{name} of line {sentence_id}")


BAD_INPUTS = [
    (bytes(range(256)) * 16, "in.txt", [], "is not a text file"),
    (b"ok\ncaf\xe9\n", "in.txt", [], "is not UTF-8: byte 6 (line 1"),
    (b"id,body\n1,The cat sat.\n", "in.csv", ["--text-column", "text"], "has no column 'text'"),
]


def test_the_program_refuses_bad_input_in_one_line(tmp_path):
    """A real process: exit code 2, one line on stderr, nothing on stdout, no results folder (the other bad
    inputs go through the same main() in-process below; a process per input would test this part again)."""
    data, name, extra, part = BAD_INPUTS[0]
    (tmp_path / name).write_bytes(data)
    result = subprocess.run([sys.executable, "-m", "vizcore", "corpus", "--input", str(tmp_path / name), "--out",
                             str(tmp_path / "out"), *extra], capture_output=True, text=True, cwd=ROOT, timeout=120)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and result.stdout == ""
    assert len(lines) == 1 and lines[0].startswith("error: ") and part in lines[0], result.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("data", "name", "extra", "part"), BAD_INPUTS)
def test_each_bad_input_is_one_line_and_exit_2(tmp_path, capsys, data, name, extra, part):
    (tmp_path / name).write_bytes(data)
    code, out, err = run_main(capsys, "corpus", "--input", str(tmp_path / name), "--out", str(tmp_path / "out"),
                              *extra)
    lines = err.strip().splitlines()
    assert code == 2 and out == ""
    assert len(lines) == 1 and lines[0].startswith("error: ") and part in lines[0], err
    assert not (tmp_path / "out").exists()
