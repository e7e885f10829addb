"""Reading a corpus: text, CSV and Parquet; blank lines skipped and counted; ids are 0-based line numbers;
bad files give one clear line on the command line (exit 2, no traceback)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.unit.test_cli_hostile import assert_one_clear_line, run_main
from vizcore.corpus.inputs import read_corpus
from vizcore.errors import VizError


def test_text_file_skips_and_counts_blank_lines_and_keeps_line_numbers(tmp_path):
    path = tmp_path / "c.txt"
    path.write_bytes(b"First one.\r\n\r\n  Second one.  \n\t\n\xe2\x80\x8b\nThird.")
    corpus = read_corpus(path)
    assert corpus.texts == ("First one.", "Second one.", "Third.")
    assert corpus.ids.tolist() == [0, 2, 5]
    assert corpus.skipped == 3


def test_csv_and_parquet_take_the_named_column_and_number_data_rows(tmp_path):
    (tmp_path / "c.csv").write_text('id,sentence\n1,"A, b."\n2,\n3,C d.\n', encoding="utf-8")
    corpus = read_corpus(tmp_path / "c.csv", "sentence")
    assert (corpus.texts, corpus.ids.tolist(), corpus.skipped) == (("A, b.", "C d."), [0, 2], 1)
    pq.write_table(pa.table({"n": [1, 2, 3], "body": ["x y.", None, "z."]}), tmp_path / "c.parquet")
    corpus = read_corpus(tmp_path / "c.parquet", "body")
    assert (corpus.texts, corpus.ids.tolist(), corpus.skipped, corpus.column) == (("x y.", "z."), [0, 2], 1, "body")
    pq.write_table(pa.table({"text": ["only."]}), tmp_path / "d.parquet")
    assert read_corpus(tmp_path / "d.parquet").texts == ("only.",)


@pytest.mark.parametrize(("name", "data", "column", "part"), [
    ("latin.txt", "café au lait.\n".encode("latin-1"), None, "is not UTF-8: byte 3 (line 0"),
    ("bin.txt", bytes(range(256)) * 8, None, "is not a text file"),
    ("c.csv", b"id,sentence\n1,a\n", "text", "has no column 'text' (columns: 'id', 'sentence')"),
    ("c.csv", b"id,body\n1,a\n", None, "has several columns"),
    ("fake.parquet", b"not parquet at all", None, "is not a readable Parquet file"),
    ("c.txt", b"a\n", "text", "--text-column was given"),
    ("empty.txt", b"\n \n", None, "has no sentences"),
])
def test_bad_files_are_one_clear_message(tmp_path, name, data, column, part):
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(VizError) as error:
        read_corpus(path, column)
    assert part in str(error.value)


def test_parquet_without_the_column_or_with_numbers(tmp_path):
    pq.write_table(pa.table({"n": np.arange(3), "text": ["a", "b", "c"]}), tmp_path / "c.parquet")
    with pytest.raises(VizError, match="has no column 'body'"):
        read_corpus(tmp_path / "c.parquet", "body")
    with pytest.raises(VizError, match="holds int64, not text"):
        read_corpus(tmp_path / "c.parquet", "n")


@pytest.mark.parametrize(("data", "extra", "part"), [
    ("ok\n".encode("utf-16-le"), [], "is not a text file"),
    (b"caf\xe9\n", [], "is not UTF-8"),
    (b"id,sentence\n1,a\n", ["--text-column", "body"], "has no column 'body'"),
])
def test_cli_bad_input_is_one_line_exit_2(tmp_path, capsys, data, extra, part):
    path = tmp_path / ("in.csv" if extra else "in.txt")
    path.write_bytes(data)
    code, out, err = run_main(capsys, "corpus", "--input", str(path), "--out", str(tmp_path / "out"), *extra)
    assert_one_clear_line(code, out, err, part)
    assert not (tmp_path / "out").exists()  # refused before anything was written


def test_cli_refuses_bad_settings(tmp_path, capsys):
    path = tmp_path / "in.txt"
    path.write_text("a b.\n", encoding="utf-8")
    code, out, err = run_main(capsys, "corpus", "--input", str(path), "--out", str(tmp_path / "o"), "--batch-size", "0")
    assert_one_clear_line(code, out, err, "batch size must be between 1 and 256")
    code, out, err = run_main(capsys, "corpus", "--input", str(path), "--out", str(tmp_path / "o"),
                              "--ray-address", "auto")
    assert_one_clear_line(code, out, err, "--ray-address is for --engine ray")


def test_the_torch_free_blank_test_and_limit_are_the_cores():
    from vizcore import text
    from vizcore.corpus import inputs
    from vizcore.model import run

    # one definition (vizcore/text.py, no torch): the CLI, the corpus reader and the core refuse the same text
    assert run.check_text is text.check_text and run.is_blank is inputs.is_blank is text.is_blank
    assert inputs.MAX_CHARS == text.MAX_CHARS
