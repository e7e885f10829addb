"""``similarity`` and ``embed`` on the command line: the embedded model's numbers against sentence-transformers
and against a separate forward pass, the Parquet file read back, and hostile input (one line, exit 2)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from sentence_transformers import SentenceTransformer

from tests.unit.test_cli_hostile import assert_one_clear_line, run_main
from vizcore.model.run import Capture, run

ROOT = Path(__file__).resolve().parents[2]
LINES = ["The cat sat on the mat.", "", "A kitten slept on the rug.", "   ", "Stock markets fell sharply today."]


@pytest.fixture(scope="module")
def st_model(minilm) -> SentenceTransformer:
    return SentenceTransformer(str(minilm.model.name_or_path), device="cpu")


def test_similarity_default_is_sentence_transformers_cosine(capsys, st_model):
    a, b = "A man is playing a guitar.", "Someone plays an instrument."
    code, out, err = run_main(capsys, "similarity", "--text", a, "--pair", b, "--format", "json")
    assert code == 0 and err == "", err
    result = json.loads(out)
    expected = st_model.encode([a, b])
    assert result["cosine"] == pytest.approx(float(expected[0] @ expected[1]), abs=1e-5)
    assert (result["model"], result["pooling"], result["layer"], result["layers"]) == ("all-MiniLM-L6-v2", "mean",
                                                                                        "last", [5])
    assert result["max_length"] == st_model.max_seq_length and result["truncated"] == [False, False]


def test_similarity_of_one_layer_with_cls_pooling_equals_a_separate_run(capsys, minilm):
    a, b = "We had a picnic on the river bank.", "I deposited the cheque at the bank."
    code, out, _ = run_main(capsys, "similarity", "--text", a, "--pair", b, "--pooling", "cls", "--layer", "3")
    vectors = [run(minilm, t, capture=Capture(hidden=True)).hidden_states[3][0] for t in (a, b)]  # [CLS], layer 3
    cosine = float(vectors[0] @ vectors[1] / np.linalg.norm(vectors[0]) / np.linalg.norm(vectors[1]))
    result = json.loads(out)
    assert code == 0 and result["layer"] == 2 and result["layers"] == [2]
    assert result["cosine"] == pytest.approx(cosine, abs=1e-5)
    code, out, _ = run_main(capsys, "similarity", "--text", a, "--pair", b, "--layer", "last4", "--pooling", "max")
    assert code == 0 and json.loads(out)["layers"] == [2, 3, 4, 5] and json.loads(out)["dimension"] == 4 * 384


def test_embed_writes_a_vector_per_line_in_order(capsys, tmp_path, st_model):
    """main() here: embed as a program of its own is the bad --pooling below (exit code 2, one line)."""
    source, out = tmp_path / "in.txt", tmp_path / "vectors.parquet"
    source.write_bytes("\r\n".join(LINES).encode() + b"\r\n")
    code, stdout, stderr = run_main(capsys, "embed", "--input", str(source), "--out", str(out), "--batch-size", "2")
    assert code == 0, stderr
    summary = json.loads(stdout)
    assert (summary["texts"], summary["skipped_blank_lines"], summary["dimension"]) == (3, 2, 384)
    assert "embedded 3/3 texts (100 %)" in stderr
    table = pq.read_table(out)
    texts = [t for t in LINES if t.strip()]
    assert table.column("line").to_pylist() == [1, 3, 5] and table.column("text").to_pylist() == texts
    vectors = np.asarray(table.column("vector").to_pylist(), dtype=np.float32)
    np.testing.assert_allclose(vectors, st_model.encode(texts), atol=1e-5)
    metadata = json.loads(table.schema.metadata[b"vizcore"])
    assert metadata["model"] == "all-MiniLM-L6-v2" and metadata["normalized"] is True


def test_embed_a_csv_column_raw_and_from_one_layer(capsys, tmp_path, minilm):
    source, out = tmp_path / "in.csv", tmp_path / "raw.parquet"
    source.write_text('id,sentence\n1,"Hello, world."\n2,Good night.\n')
    code, stdout, err = run_main(capsys, "embed", "--input", str(source), "--out", str(out), "--layer", "1",
                                 "--no-normalize")
    assert code == 0, err
    assert json.loads(stdout)["column"] == "sentence"
    table = pq.read_table(out)
    assert table.column("line").to_pylist() == [2, 3]
    got = np.asarray(table.column("vector").to_pylist()[1])
    expected = run(minilm, "Good night.", capture=Capture(hidden=True)).hidden_states[1].mean(0)  # layer 1 of 6
    np.testing.assert_allclose(got, expected, atol=1e-5)


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("embed-hostile")
    made = {"ok.txt": b"One sentence.\n", "empty.txt": b"", "blank.txt": b"\n  \n",
            "binary.txt": b"\x89PNG\r\n\x00\x00", "latin1.txt": "d\u00e9j\u00e0 vu\n".encode("latin-1"), "file": b"x"}
    for name, data in made.items():
        (folder / name).write_bytes(data)
    (folder / "folder.parquet").mkdir()
    return {name: folder / name for name in [*made, "folder.parquet"]}


@pytest.mark.parametrize(("input_name", "out", "extra", "part"), [
    ("missing.txt", "v.parquet", (), "does not exist"),
    ("empty.txt", "v.parquet", (), "is empty"),
    ("blank.txt", "v.parquet", (), "is empty"),
    ("binary.txt", "v.parquet", (), "is not a text file"),
    ("latin1.txt", "v.parquet", (), "is not UTF-8 text"),
    ("ok.txt", "v.csv", (), "must be a .parquet file name"),
    ("ok.txt", "folder.parquet", (), "is a folder"),
    ("ok.txt", "no-such-folder/v.parquet", (), "does not exist (or is not a folder)"),
    ("ok.txt", "file/v.parquet", (), "does not exist (or is not a folder)"),
    ("ok.txt", "v.parquet", ("--layer", "7"), "Layer 7 does not exist: give a number from 1 to 2"),
    ("ok.txt", "v.parquet", ("--layer", "last4"), "last4 needs a model with at least 4 layers"),
    ("ok.txt", "v.parquet", ("--layer", "first"), "is not a layer"),
    ("ok.txt", "v.parquet", ("--pooling", "sum"), "invalid choice: 'sum'"),
    ("ok.txt", "v.parquet", ("--batch-size", "0"), "batch size must be between 1 and 512"),
    ("ok.txt", "v.parquet", ("--column", "text"), "not a .csv file"),
])
def test_hostile_embed_arguments_get_one_clear_line(capsys, files, tiny_bert_dir, input_name, out, extra, part):
    folder = files["ok.txt"].parent
    argv = ["embed", "--input", str(folder / input_name), "--out", str(folder / out), "--model", str(tiny_bert_dir),
            *extra]
    assert_one_clear_line(*run_main(capsys, *argv), part)
    assert not (folder / out).is_file()


@pytest.mark.parametrize(("extra", "part"), [
    (("--text", "\u200b", "--pair", "ok"), "The text is empty"),
    (("--text", "ok", "--pair", " "), "The pair is empty"),
    (("--text", "ok"), "the following arguments are required: --pair"),
    (("--text", "a", "--pair", "b", "--layer", "0"), "Layer 0 does not exist"),
    (("--text", "a", "--pair", "b", "--pooling", "avg"), "invalid choice: 'avg'"),
])
def test_hostile_similarity_arguments_get_one_clear_line(capsys, tiny_bert_dir, extra, part):
    assert_one_clear_line(*run_main(capsys, "similarity", "--model", str(tiny_bert_dir), *extra), part)


def test_a_bad_pooling_in_a_real_process_is_one_line():
    result = subprocess.run([sys.executable, "-m", "vizcore", "embed", "--input", "x.txt", "--out", "y.parquet",
                             "--pooling", "sum"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert_one_clear_line(result.returncode, result.stdout, result.stderr, "invalid choice: 'sum'")
