"""Semantic search on a tiny random model (ranking checked against cosines computed in numpy), the built-in
collection's integrity, and reading uploaded texts: line numbers, CSV columns, every fix-it message."""

from __future__ import annotations

import codecs

import numpy as np
import pytest

from vizcore.embeddings import search as search_module
from vizcore.embeddings.search import (
    COLLECTION_PATH,
    MAX_TEXTS,
    Hit,
    builtin_collection,
    read_text_file,
    read_texts,
    search,
)
from vizcore.embeddings.vectors import sentence_vectors
from vizcore.errors import VizError
from vizcore.model.loading import load_model

TEXTS = ["The cat sat on the mat.", "Stock markets fell sharply.", "A kitten slept on the rug.",
         "We had a picnic by the river.", "The bank raised its interest rates."]


@pytest.fixture(scope="module")
def tiny(tiny_bert_dir):
    return load_model(str(tiny_bert_dir), device="cpu")


def test_the_builtin_collection_has_500_distinct_sentences():
    texts = builtin_collection()
    lines = COLLECTION_PATH.read_text(encoding="utf-8").split("\n")
    assert lines[-1] == "" and "" not in lines[:-1]  # one sentence per line, no blank line
    assert len(texts) == len(lines) - 1 >= 500
    assert len({t.lower() for t in texts}) == len(texts)
    assert all(t == t.strip() and t[0].isupper() and t[-1] in ".!?" for t in texts)


def test_search_ranks_by_the_cosine_computed_in_numpy(tiny):
    query = "A cat on a rug."
    vectors = sentence_vectors(tiny, TEXTS, layer=0, pooling="max")
    q = sentence_vectors(tiny, [query], layer=0, pooling="max")[0]
    cosines = vectors @ q / np.linalg.norm(vectors, axis=1) / np.linalg.norm(q)
    hits = search(tiny, query, TEXTS, top_k=3, layer=0, pooling="max")
    assert [h.index for h in hits] == np.argsort(-cosines)[:3].tolist()
    assert [h.rank for h in hits] == [1, 2, 3]
    for hit in hits:
        assert hit.text == TEXTS[hit.index] and hit.score == pytest.approx(float(cosines[hit.index]), abs=1e-6)
    assert search(tiny, query, TEXTS, top_k=3, layer=0, pooling="max", vectors=vectors) == hits


def test_a_text_finds_itself_first_and_top_k_is_capped(tiny):
    hits = search(tiny, TEXTS[3], TEXTS, top_k=50)
    assert len(hits) == len(TEXTS)
    assert hits[0] == Hit(1, 3, TEXTS[3], pytest.approx(1.0, abs=1e-6))
    assert hits[0].to_dict() == {"rank": 1, "index": 3, "text": TEXTS[3], "score": hits[0].score}


def test_search_refuses_bad_arguments(tiny):
    wrong = sentence_vectors(tiny, TEXTS[:2])
    for kwargs, part in ((dict(query="  "), "query is empty"), (dict(texts=[]), "collection is empty"),
                         (dict(top_k=0), "top_k"), (dict(vectors=wrong), "embed them again")):
        with pytest.raises(VizError, match=part):
            search(tiny, **{"query": "cats", "texts": TEXTS, **kwargs})


def test_plain_text_keeps_line_numbers_and_skips_blank_lines():
    data = codecs.BOM_UTF8 + "First line\r\n\r\n  Second one  \n\u200b\nThird\rFourth\x0cstill fourth\n".encode()
    texts = read_texts(data, "notes.txt")
    assert texts.texts == ("First line", "Second one", "Third", "Fourth\x0cstill fourth")
    assert texts.lines == (1, 3, 5, 6)
    assert (texts.skipped_blank, texts.column, len(texts)) == (2, None, 4)
    utf16 = read_texts(codecs.BOM_UTF16_LE + "un\ndeux\n".encode("utf-16-le"), "fr.txt")
    assert utf16.texts == ("un", "deux")


def test_a_csv_column_with_quoted_commas_and_line_breaks():
    data = b'id,text\n1,"Hello, world"\n2,"two\nlines"\n3,\n\n4,last\n'
    texts = read_texts(data, "upload.CSV")
    assert texts.texts == ("Hello, world", "two\nlines", "last") and texts.column == "text"
    assert texts.lines == (2, 3, 7) and texts.skipped_blank == 1
    assert read_texts(data, "upload.csv", column="id").texts == ("1", "2", "3", "4")
    assert read_texts(b"sentence\nA cat.\nA dog.\n", "one.csv").texts == ("A cat.", "A dog.")


@pytest.mark.parametrize(("data", "name", "column", "part"), [
    (b"", "a.txt", None, "is empty"),
    (b"\n \n\t\n", "a.txt", None, "is empty"),
    (b"PK\x03\x04\x00\x00binary", "a.txt", None, "not a text file"),
    ("caf\u00e9\n".encode("latin-1"), "a.txt", None, "not UTF-8 text (byte 3 is invalid)"),
    (b"x" * 5_000_001, "a.txt", None, "the limit is 5 MB"),
    (b"ab\n" * (MAX_TEXTS + 1), "a.txt", None, f"the limit is {MAX_TEXTS:,}"),
    (b"ok\n" + b"y" * 10_001 + b"\n", "a.txt", None, "Line 2 of 'a.txt' has 10,001 characters"),
    (b"a,b\n1,2\n", "a.txt", "a", "not a .csv file"),
    (b"a,b\n1,2\n", "a.csv", "c", "no column 'c' (columns: 'a', 'b')"),
    (b"a,b\n1,2\n", "a.csv", None, "several columns"),
    (b"\nx\n", "a.csv", None, "starts with an empty line"),
    (b'text\n"never closed\n', "a.csv", None, "could not be read as CSV"),
    (b"id,text\n1,\n2, \n", "a.csv", None, "has no text in column 'text'"),
])
def test_hostile_uploads_get_a_fix_it_message(data, name, column, part):
    with pytest.raises(VizError, match=part.replace("(", r"\(").replace(")", r"\)")):
        read_texts(data, name, column)


def test_files_that_are_missing_or_folders(tmp_path, monkeypatch):
    with pytest.raises(VizError, match="does not exist"):
        read_text_file(tmp_path / "nope.txt")
    with pytest.raises(VizError, match="is not a file"):
        read_text_file(tmp_path)
    big = tmp_path / "big.txt"
    big.write_text("a line\n" * 10)
    monkeypatch.setattr(search_module, "MAX_BYTES", 20)
    with pytest.raises(VizError, match="big.txt' is 0.0 MB"):
        read_text_file(big)
