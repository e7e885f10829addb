"""The built-in sentiment set and CSV upload: limits, encodings, columns, classes, label matching."""

import csv
import io

import numpy as np
import pandas as pd
import pytest

from vizcore.errors import VizError
from vizcore.finetune import datasets
from vizcore.finetune.datasets import (
    MAX_BYTES,
    MAX_ROWS,
    builtin_data,
    labelled_texts,
    load_train_test,
    read_csv_bytes,
    stratified_split,
)


def csv_bytes(rows, header=("text", "label")) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue().encode("utf-8")


def test_builtin_set_is_large_balanced_and_split_without_overlap():
    data = builtin_data()
    assert len(data.train) + len(data.test) >= 420
    assert data.train.label_names == ("negative", "positive")
    assert data.train.counts() == {"negative": 174, "positive": 174}
    assert data.test.counts() == {"negative": 44, "positive": 44}
    assert not set(data.train.texts) & set(data.test.texts)
    everything = data.train.texts + data.test.texts
    assert len(set(everything)) == len(everything)  # no duplicates
    assert np.mean([len(t.split()) for t in everything]) < 20  # short sentences
    assert len({len(t.split()) for t in everything}) >= 10  # of varied length


def test_builtin_file_is_the_documented_csv():
    frame = pd.read_csv(datasets.BUILTIN_PATH)
    assert list(frame.columns) == ["text", "label", "split"]
    assert set(frame["split"]) == {"train", "test"}


def test_csv_with_other_column_names_and_markup_is_kept_verbatim():
    rows = [("<script>alert(1)</script> great", "yes"), ("awful 😡", "no"), ("fine, really", "yes")]
    frame = read_csv_bytes(csv_bytes(rows, header=("review", "stars")))
    data = labelled_texts(frame, "review", "stars")
    assert data.label_names == ("no", "yes")
    assert data.texts[0] == "<script>alert(1)</script> great"
    assert data.labels.tolist() == [1, 0, 1]


def test_missing_column_names_the_columns_that_exist():
    frame = read_csv_bytes(csv_bytes([("a", "b")], header=("sentence", "target")))
    with pytest.raises(VizError, match="no text column 'text'.*'sentence', 'target'"):
        labelled_texts(frame, "text", "target")


def test_a_single_class_is_refused():
    frame = read_csv_bytes(csv_bytes([("good", "pos"), ("great", "pos")]))
    with pytest.raises(VizError, match="only one class"):
        labelled_texts(frame)


def test_empty_rows_are_skipped_and_counted_and_all_empty_is_an_error():
    frame = read_csv_bytes(csv_bytes([("good", "pos"), ("", "neg"), ("bad", ""), ("  ", " "), ("bad", "neg")]))
    data = labelled_texts(frame)
    assert len(data) == 2 and data.dropped_empty == 3
    with pytest.raises(VizError, match="empty"):
        labelled_texts(read_csv_bytes(csv_bytes([("", "a"), ("b", "")])))


def test_non_utf8_file_says_how_to_fix_it():
    with pytest.raises(VizError, match="not UTF-8.*CSV UTF-8"):
        read_csv_bytes("text,label\ncafé,pos\n".encode("latin-1"))


def test_utf8_with_bom_is_fine():
    frame = read_csv_bytes(b"\xef\xbb\xbf" + csv_bytes([("a", "x"), ("b", "y")]))
    assert list(frame.columns) == ["text", "label"]


def test_utf16_with_a_byte_order_mark_is_read_and_without_one_is_named():
    text = "text,label\ntrès bon,pos\nmauvais,neg\n"
    frame = read_csv_bytes(text.encode("utf-16"))  # Excel's "Unicode text" and some editors
    assert frame["text"].tolist() == ["très bon", "mauvais"]
    with pytest.raises(VizError, match="UTF-16 text without a byte-order mark"):
        read_csv_bytes(text.encode("utf-16-le"))


@pytest.mark.parametrize(("payload", "message"), [
    (b"text\nhello\nworld\n", r"only one column \('text'\): it needs a text column and a label column"),
    (b"text;label\nhello;pos\nbye;neg\n", r"only one column \('text;label'\)"),
    # pandas would silently take the first row's extra fields as an index and shift the columns
    (b"text,label\nhello, world,pos\nbye,neg\n", "more fields than its header.*double quotes"),
    (b"text,label\nbye,neg\nhello, world,pos\n", "Expected 2 fields in line 3.*double quotes"),
    (b"PK\x03\x04\x14\x00\x06\x00text,label\nok,pos\n", "not a text file"),  # a zip read as UTF-8
])
def test_column_layout_problems_say_what_is_wrong(payload, message):
    with pytest.raises(VizError, match=message):
        read_csv_bytes(payload)


def test_size_and_row_limits():
    with pytest.raises(VizError, match="limit is 5 MB"):
        read_csv_bytes(b"text,label\n" + b"x" * (MAX_BYTES + 1))
    with pytest.raises(VizError, match="20,000"):
        read_csv_bytes(csv_bytes([("t", "a")] * (MAX_ROWS + 1)))


@pytest.mark.parametrize("payload", [b"", b"   \n", b'text,label\n"unclosed,pos\nother,neg\n'])
def test_empty_or_broken_csv_is_a_clear_error(payload):
    with pytest.raises(VizError, match="empty|could not be read as CSV"):
        read_csv_bytes(payload)


def test_eval_labels_are_matched_by_name_and_unknown_labels_refused(tmp_path):
    train = tmp_path / "train.csv"
    train.write_bytes(csv_bytes([("good", "pos"), ("bad", "neg"), ("nice", "pos"), ("ugly", "neg")]))
    evals = tmp_path / "eval.csv"
    evals.write_bytes(csv_bytes([("fine", "pos"), ("poor", "neg")]))
    data = load_train_test(str(train), str(evals))
    assert data.train.label_names == ("neg", "pos")
    assert data.test.labels.tolist() == [1, 0]  # "pos" -> index 1 as in training
    assert len(data.train) == 4  # with an eval file, every training row trains
    evals.write_bytes(csv_bytes([("fine", "positive")]))
    with pytest.raises(VizError, match="'positive' are not among the training labels"):
        load_train_test(str(train), str(evals))


def test_missing_file_is_a_clear_error():
    with pytest.raises(VizError, match="does not exist"):
        load_train_test("/no/such.csv")


def test_stratified_split_is_seeded_and_keeps_each_label_share():
    frame = pd.DataFrame({"text": [f"t{i}" for i in range(50)], "label": ["a"] * 40 + ["b"] * 10})
    data = labelled_texts(frame)
    train, test = stratified_split(data, 0.2, seed=3)
    assert test.counts() == {"a": 8, "b": 2} and train.counts() == {"a": 32, "b": 8}
    again, _ = stratified_split(data, 0.2, seed=3)
    assert again.texts == train.texts
    other, _ = stratified_split(data, 0.2, seed=4)
    assert other.texts != train.texts


def test_csv_without_split_column_gets_a_seeded_held_out_set(tmp_path):
    path = tmp_path / "mine.csv"
    path.write_bytes(csv_bytes([(f"good {i}", "pos") for i in range(10)] + [(f"bad {i}", "neg") for i in range(10)]))
    data = load_train_test(str(path), seed=0)
    assert data.test.counts() == {"neg": 2, "pos": 2} and len(data.train) == 16
    assert "seed 0" in data.split_note
