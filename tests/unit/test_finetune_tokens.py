"""CoNLL reading with fix-it messages, the built-in NER data, word-piece alignment and words of a text."""

from __future__ import annotations

import codecs

import pytest

from tests.support.tiny import wordpiece_tokenizer
from vizcore.errors import VizError
from vizcore.finetune.entities import bio_entities
from vizcore.finetune.tokens import (
    IGNORE,
    MAX_BYTES,
    MAX_WORDS,
    align_labels,
    alignment_table,
    builtin_token_data,
    first_pieces,
    header_comments,
    join_words,
    load_token_data,
    o_share,
    parse_conll,
    read_conll_bytes,
    read_conll_file,
    repair_bio,
    split_words,
    tagged_text,
    uploaded_token_data,
)

SIMPLE = "Anna\tB-PER\nKowalski\tI-PER\nvisited\tO\nLeeds\tB-LOC\n.\tO\n\nThe\tO\nBBC\tB-ORG\nsaid\tO\n"
CONLL2003 = ("-DOCSTART- -X- -X- O\n\nEU NNP B-NP I-ORG\nrejects VBZ B-VP O\nGerman JJ B-NP I-MISC\n"
             "call NN I-NP O\n. . O O\n\nPeter NNP B-NP I-PER\nBlackburn NNP I-NP I-PER\n")


@pytest.fixture(scope="module")
def tokenizer():
    return wordpiece_tokenizer()


def sentences_file(count: int) -> bytes:
    return "".join(f"Name{i}\tB-PER\nwent\tO\nhome\tO\n\n" for i in range(count)).encode()


# --- reading --------------------------------------------------------------------------------------------

def test_tab_separated_sentences():
    data = read_conll_bytes(SIMPLE.encode())
    assert data.words == (("Anna", "Kowalski", "visited", "Leeds", "."), ("The", "BBC", "said"))
    assert data.tag_names == ("O", "B-LOC", "I-LOC", "B-ORG", "I-ORG", "B-PER", "I-PER")
    assert data.tag_strings(0) == ["B-PER", "I-PER", "O", "B-LOC", "O"]
    assert data.counts() == {"LOC": 1, "ORG": 1, "PER": 1} and data.word_count() == 8


def test_conll2003_columns_docstart_and_iob1_are_read_and_repaired():
    data = read_conll_bytes(CONLL2003.encode(), "eng.train")
    assert data.words == (("EU", "rejects", "German", "call", "."), ("Peter", "Blackburn"))
    assert data.tag_strings(0) == ["B-ORG", "O", "B-MISC", "O", "O"]
    assert data.tag_strings(1) == ["B-PER", "I-PER"]
    assert data.repaired == 3  # the three entities that IOB1 starts with I-


def test_repair_keeps_the_entities_of_the_conll_rule():
    tags = ["I-PER", "I-PER", "I-LOC", "O", "I-ORG", "B-ORG", "I-ORG"]
    fixed, changed = repair_bio(tags)
    assert fixed == ["B-PER", "I-PER", "B-LOC", "O", "B-ORG", "B-ORG", "I-ORG"] and changed == 3
    assert bio_entities(fixed) == bio_entities(tags)


def test_encodings_line_ends_comments_and_spaces():
    utf16 = codecs.BOM_UTF16_LE + SIMPLE.replace("\n", "\r\n").encode("utf-16-le")
    assert read_conll_bytes(utf16).words == read_conll_bytes(SIMPLE.encode()).words
    bom = codecs.BOM_UTF8 + ("# a comment line\n\n" + SIMPLE.replace("\t", " ")).encode()
    assert read_conll_bytes(bom).words == read_conll_bytes(SIMPLE.encode()).words
    hash_word = read_conll_bytes(b"#\tO\nParis\tB-LOC\n")  # a '#' word is a word, not a comment
    assert hash_word.words == (("#", "Paris"),)


@pytest.mark.parametrize("data, message", [
    (b"", "is empty"),
    (b"  \n\n \n", "is empty"),
    (b"PK\x03\x04\x00\x00binary", "not a text file"),
    (b"Caf\xe9\tO\nParis\tB-LOC\n", "not UTF-8"),
    (b"Paris\tB-LOC\nlies\n", "line 2 has no tag"),
    (b"Paris\tS-LOC\n", "not BIO"),
    (b"Paris\tLOC\n", "not BIO"),
    (b"Paris\tO\nlies\tO\n", "no entities"),
    (b"-DOCSTART- -X- O\n\n", "no tagged words"),
    (b"w\tB-X\n" * (MAX_WORDS + 1), "blank line between sentences"),
    (b"x" * (MAX_BYTES + 1), "the limit is 5 MB"),
])
def test_bad_uploads_say_how_to_fix_them(data, message):
    with pytest.raises(VizError, match=message):
        read_conll_bytes(data, "mine.conll")


def test_too_many_types_and_an_unknown_held_out_type():
    many = "".join(f"w\tB-T{i}\n" for i in range(21)).encode()
    with pytest.raises(VizError, match="21 entity types"):
        read_conll_bytes(many)
    with pytest.raises(VizError, match=r"type\(s\) DATE that the training data does not have"):
        uploaded_token_data(SIMPLE.encode(), "train.conll", b"May\tB-DATE\n", "test.conll")


def test_parse_reports_sentences_in_file_order():
    assert parse_conll("a O\n\n\nb B-X\nc I-X\n") == [(["a"], ["O"]), (["b", "c"], ["B-X", "I-X"])]


# --- splits ---------------------------------------------------------------------------------------------

def test_upload_holds_out_every_fifth_sentence():
    data = uploaded_token_data(sentences_file(12), "mine.conll")
    assert [w[0] for w in data.test.words] == ["Name4", "Name9"]
    assert len(data.train) == 10 and "fifth" in data.split_note and data.source == "mine.conll"
    with pytest.raises(VizError, match="at least 10"):
        uploaded_token_data(sentences_file(9), "small.conll")


def test_upload_with_a_held_out_file_keeps_all_training_sentences():
    data = uploaded_token_data(SIMPLE.encode(), "a.conll", sentences_file(3), "b.conll")
    assert len(data.train) == 2 and len(data.test) == 3
    assert data.test.tag_names == data.train.tag_names  # the held-out tags are read with the training ids


def test_builtin_data_silver_for_training_hand_checked_held_out():
    data = builtin_token_data()
    assert data.label_names == ("O", "B-LOC", "I-LOC", "B-MISC", "I-MISC", "B-ORG", "I-ORG", "B-PER", "I-PER")
    assert len(data.test) == 131 and sum(data.test.counts().values()) == 315
    assert 1500 <= len(data.train) <= 3000
    assert all(count >= 300 for count in data.train.counts().values())
    with_entity = sum(any(t != 0 for t in tags) for tags in data.train.tags)
    assert 0.75 * len(data.train) <= with_entity < len(data.train)  # most, not all, have an entity
    held = {" ".join(words).lower() for words in data.test.words}
    assert not held & {" ".join(words).lower() for words in data.train.words}
    assert data.train.words[0] and "silver" in data.split_note


def test_load_for_the_cli(tmp_path):
    path = tmp_path / "mine.conll"
    path.write_bytes(sentences_file(10))
    assert len(load_token_data(str(path)).test) == 2
    assert len(load_token_data("builtin", str(path)).test) == 10
    with pytest.raises(VizError, match="does not exist"):
        load_token_data(str(tmp_path / "missing.conll"))
    with pytest.raises(VizError, match="does not exist"):
        read_conll_file(tmp_path / "missing.conll")


# --- word pieces ----------------------------------------------------------------------------------------

def test_align_labels_by_hand():
    #          [CLS] anna kowal ##ski went  [SEP]
    word_ids = [None, 0, 1, 1, 2, None]
    assert align_labels(word_ids, [7, 8, 0]) == [IGNORE, 7, 8, IGNORE, 0, IGNORE]
    assert first_pieces(word_ids, 3) == [1, 2, 4]
    assert first_pieces([None, 0, 0, None], 3) == [1, None, None]  # words 2 and 3 were cut off


def test_alignment_table_labels_each_words_first_piece_only(tokenizer):
    words = ["Anna", "Kowalski", "visited", "Stratford-upon-Avon", "yesterday"]
    tags = ["B-PER", "I-PER", "O", "B-LOC", "O"]
    names = ("O", "B-LOC", "I-LOC", "B-PER", "I-PER")
    table = alignment_table(tokenizer, words, tags, names, max_length=64)
    # independent count: each word's own pieces, one labelled and the rest -100, plus [CLS] and [SEP]
    expected: list[int] = [IGNORE]
    for word, tag in zip(words, tags):
        pieces = tokenizer.tokenize(word)
        expected += [names.index(tag)] + [IGNORE] * (len(pieces) - 1)
    assert table["label id"].tolist() == expected + [IGNORE]
    assert table["piece"].iloc[0] == "[CLS]" and table["word"].iloc[0] == ""
    labelled = table[table["label id"] != IGNORE]
    assert labelled["word"].tolist() == words and labelled["label"].tolist() == tags
    assert set(table.loc[table["label id"] == IGNORE, "label"]) == {"-100 (ignored)"}


def test_alignment_truncates_at_max_length(tokenizer):
    words = ["word"] * 20
    table = alignment_table(tokenizer, words, ["O"] * 20, ("O", "B-X", "I-X"), max_length=8)
    assert len(table) == 8 and (table["label id"] != IGNORE).sum() == 6


# --- words of a typed text ------------------------------------------------------------------------------

def test_split_words_as_the_held_out_file_has_them():
    text = "Dr. Anna Kowalski's talk in Stratford-upon-Avon, said J.K. Rowling (of \"Harry Potter\")."
    words = split_words(text)
    assert [w for w, _, _ in words] == ["Dr.", "Anna", "Kowalski", "'s", "talk", "in", "Stratford-upon-Avon",
                                        ",", "said", "J.K.", "Rowling", "(", "of", '"', "Harry", "Potter", '"',
                                        ")", "."]
    assert all(text[start:end] == word for word, start, end in words)
    assert split_words("   ") == []


def test_join_words_and_tagged_text_give_readable_text_with_offsets():
    words = ["Dr.", "Ada", "Lovelace", "'s", "notes", "(", "1843", ")", "said", '"', "Hello", '"', "."]
    text, offsets = join_words(words)
    assert text == 'Dr. Ada Lovelace\'s notes (1843) said "Hello".'
    assert all(text[start:end] == word for word, start, end in offsets)
    text, spans = tagged_text(["Ada", "Lovelace", "met", "Babbage", "."], ["B-PER", "I-PER", "O", "B-PER", "O"])
    assert [(text[a:b], kind) for a, b, kind in spans] == [("Ada Lovelace", "PER"), ("Babbage", "PER")]


def test_the_silver_file_says_how_it_was_made_and_the_o_share():
    header = header_comments()
    assert header[0].startswith("SILVER LABELS") and "spaCy 3." in header[0] and "not checked by a person" in header[0]
    data = read_conll_bytes(SIMPLE.encode())
    assert o_share(data) == pytest.approx(4 / 8)
