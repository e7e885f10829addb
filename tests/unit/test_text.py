"""Every reader of an uploaded file (training CSV, CoNLL, QA, texts to embed) says the same thing about the
same bad bytes: they all decode through ``vizcore.text.decode_upload``."""

from __future__ import annotations

import pytest

from vizcore.embeddings.search import read_texts
from vizcore.errors import VizError
from vizcore.finetune.datasets import read_csv_bytes
from vizcore.finetune.qa import read_qa_bytes
from vizcore.finetune.tokens import read_conll_bytes
from vizcore.text import decode_upload, read_file

READERS = {
    "csv": lambda data: read_csv_bytes(data, "up.csv"),
    "conll": lambda data: read_conll_bytes(data, "up.conll"),
    "qa": lambda data: read_qa_bytes(data, "up.csv"),
    "texts": lambda data: read_texts(data, "up.txt"),
}


@pytest.mark.parametrize("reader", list(READERS))
@pytest.mark.parametrize(("data", "message"), [
    ("text,label\nbon,pos\n".encode("utf-16-le"), "'up.* looks like UTF-16 text without a byte-order mark"),
    ("caf\u00e9 au lait\n".encode("latin-1"), r"'up.* is not UTF-8 text \(byte 3 is invalid\)\. Save it as"),
    (b"\xff\xfe\x00\xd8ab", r"is not UTF-16 text \(byte 2 is invalid\)"),
    (b"PK\x03\x04\x14\x00\x06\x00rest", r"is not a text file \(a spreadsheet or other binary file\?\)\. Save it as"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "is not a text file"),  # not 'not UTF-8': a NUL says binary first
    ("\ufeff \n\u200b\n".encode("utf-8"), "'up.* is empty: it needs "),
    (b"x" * 5_000_001, "'up.* is 5.0 MB; the limit is 5 MB. "),
])
def test_the_same_bad_bytes_get_the_same_message_from_every_reader(reader, data, message):
    with pytest.raises(VizError, match=message):
        READERS[reader](data)


def test_a_utf16_file_with_its_mark_reads_as_utf8_does(tmp_path):
    text = "Paris\tB-LOC\nis\tO\n\nRome\tB-LOC\nis\tO\n"
    assert read_conll_bytes(text.encode("utf-16")).words == read_conll_bytes(text.encode("utf-8")).words
    (tmp_path / "a.conll").write_text(text, encoding="utf-8")
    assert read_file(tmp_path / "a.conll", "CoNLL file", "Use fewer.", 100) == text.encode("utf-8")
    with pytest.raises(VizError, match="'a.conll' is 0.0 MB; the limit is 0 MB. Use fewer."):
        read_file(tmp_path / "a.conll", "CoNLL file", "Use fewer.", 10)
    with pytest.raises(VizError, match="CoNLL file '.*nope.conll' does not exist"):
        read_file(tmp_path / "nope.conll", "CoNLL file", "Use fewer.", 100)
    with pytest.raises(VizError, match="is not a file"):
        read_file(tmp_path, "CoNLL file", "Use fewer.", 100)


def test_a_nul_after_the_first_line_is_text_and_in_the_first_line_says_binary():
    assert decode_upload(b"text,label\nhel\x00lo,pos\n", "a.csv", "rows", "Fix.", "Shrink.", 100) == (
        "text,label\nhel\x00lo,pos\n")  # a stray control byte in a cell: the CSV lab keeps it as text
    with pytest.raises(VizError, match="'a.csv' is not a text file .*Fix.$"):
        decode_upload(b"PK\x03\x04\x00\x00text\n", "a.csv", "rows", "Fix.", "Shrink.", 100)
