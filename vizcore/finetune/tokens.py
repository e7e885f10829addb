"""Tagged sentences for token classification (NER): CoNLL files, word-piece alignment, words of a text.

The built-in data: ``vizcore/data/ner-silver.conll`` for training, sentences of the project's
offline English text whose tags were made by spaCy's small English pipeline (silver labels, not
checked by a person; ``tools/ner_silver.py``), and ``vizcore/data/ner-heldout.conll``, 131
sentences written and tagged by hand, held out whole.

A CoNLL file has one word per line with its tag in the last column (tab- or space-separated, so
CoNLL-2003's ``word POS chunk tag`` lines work), a blank line between sentences, ``-DOCSTART-`` lines
skipped and ``# `` comment lines allowed before the first word. Tags are BIO over any type names
(``O``, ``B-TYPE``, ``I-TYPE``). An ``I-`` tag that starts an entity (after ``O`` or another type:
IOB1 files, or loose BIO) is changed to ``B-``, which keeps every entity as the CoNLL rule reads it
(vizcore/finetune/entities.py); the number changed is reported. Every problem a user can cause is a
VizError that says how to fix it.

A model reads word pieces, not words. The first piece of each word gets the word's label, the other
pieces and the special tokens get -100, which PyTorch's cross-entropy ignores; a word's prediction
is read at its first piece.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from vizcore.errors import VizError
from vizcore.finetune.datasets import TrainTestData
from vizcore.finetune.entities import bio_entities
from vizcore.text import decode_upload, read_file

DATA = Path(__file__).resolve().parents[1] / "data"
SILVER_PATH = DATA / "ner-silver.conll"
HELDOUT_PATH = DATA / "ner-heldout.conll"
BUILTIN_NAME = "builtin"
IGNORE = -100  # the label of pieces that are not a word's first piece (nn.CrossEntropyLoss's ignore_index)
MAX_BYTES = 5_000_000
SHRINK = "Use fewer sentences."
MAX_SENTENCES = 20_000
MAX_WORDS = 300  # per sentence; more usually means the blank lines between sentences are missing
MAX_TYPES = 20
MIN_SPLIT_SENTENCES = 10
TEST_EVERY = 5  # an upload without a separate held-out file: every fifth sentence is held out
_TAG = re.compile(r"O|[BI]-\S+")


@dataclass(frozen=True)
class TaggedSentences:
    """Sentences as words with one tag id per word; ``tag_names[0] == "O"``, then B-/I- per type."""

    words: tuple[tuple[str, ...], ...]
    tags: tuple[tuple[int, ...], ...]
    tag_names: tuple[str, ...]
    repaired: int = 0  # I- tags that started an entity, changed to B-

    def __len__(self) -> int:
        return len(self.words)

    @property
    def label_names(self) -> tuple[str, ...]:
        """The tag names, by the name the training loop reads for every task."""
        return self.tag_names

    @property
    def types(self) -> tuple[str, ...]:
        return tuple(name[2:] for name in self.tag_names if name.startswith("B-"))

    def tag_strings(self, index: int) -> list[str]:
        return [self.tag_names[t] for t in self.tags[index]]

    def counts(self) -> dict[str, int]:
        """Entities per type, in ``types`` order."""
        counts = dict.fromkeys(self.types, 0)
        for i in range(len(self)):
            for span in bio_entities(self.tag_strings(i)):
                counts[span.kind] += 1
        return counts

    def word_count(self) -> int:
        return sum(len(w) for w in self.words)

    def subset(self, indices: Sequence[int]) -> "TaggedSentences":
        return TaggedSentences(tuple(self.words[i] for i in indices), tuple(self.tags[i] for i in indices),
                               self.tag_names)


@dataclass(frozen=True)
class TaggedData(TrainTestData[TaggedSentences]):
    """Training and held-out sentences with the same ``tag_names``."""

    @property
    def label_names(self) -> tuple[str, ...]:
        return self.train.tag_names


def tag_names_for(types: Sequence[str]) -> tuple[str, ...]:
    """``O`` then ``B-T``, ``I-T`` for each type in sorted order."""
    return ("O", *[f"{p}-{t}" for t in sorted(set(types)) for p in ("B", "I")])


def decode_text(data: bytes, name: str) -> str:
    """UTF-8 (BOM or not) or UTF-16 with a byte-order mark. Raises VizError for size, binary, encoding."""
    return decode_upload(data, name, "lines of a word and its tag, e.g. 'Paris<TAB>B-LOC'",
                         "Save it as plain UTF-8 text, one word and its tag per line, and upload it again.",
                         SHRINK, MAX_BYTES)


def _split_line(line: str, number: int, name: str) -> tuple[str, str]:
    fields = line.split("\t") if "\t" in line else line.split()
    fields = [f.strip() for f in fields]
    if len(fields) < 2 or not fields[0] or not fields[-1]:
        raise VizError(f"'{name}' line {number} has no tag ('{line.strip()[:60]}'): each line needs a word and "
                       "its tag separated by a tab or a space, e.g. 'Paris<TAB>B-LOC'.")
    tag = fields[-1]
    if not _TAG.fullmatch(tag):
        raise VizError(f"'{name}' line {number}: tag '{tag[:30]}' is not BIO. Tags must be O, B-TYPE or "
                       "I-TYPE (e.g. B-PER, I-PER); for BIOES change S- to B- and E- to I-.")
    return fields[0], tag


def parse_conll(text: str, name: str = "upload.conll") -> list[tuple[list[str], list[str]]]:
    """Sentences as (words, tag strings) in file order, tags as written. Raises VizError with the line."""
    sentences: list[tuple[list[str], list[str]]] = []
    words: list[str] = []
    tags: list[str] = []
    started = False
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.split()[0] == "-DOCSTART-" or (not started and line.startswith("# ")):
            if words:
                sentences.append((words, tags))
                words, tags = [], []
            continue
        started = True
        word, tag = _split_line(line, number, name)
        words.append(word)
        tags.append(tag)
        if len(words) > MAX_WORDS:
            raise VizError(f"'{name}': the sentence ending at line {number} has more than {MAX_WORDS} words. "
                           "Put a blank line between sentences.")
    if words:
        sentences.append((words, tags))
    if not sentences:
        raise VizError(f"'{name}' has no tagged words: it needs lines such as 'Paris<TAB>B-LOC'.")
    if len(sentences) > MAX_SENTENCES:
        raise VizError(f"'{name}' has {len(sentences):,} sentences; the limit is {MAX_SENTENCES:,}. Use a sample.")
    return sentences


def repair_bio(tags: Sequence[str]) -> tuple[list[str], int]:
    """Tags with every entity starting at ``B-`` (an ``I-`` that starts one becomes ``B-``); the count changed."""
    starts = {span.start for span in bio_entities(tags)}
    fixed = [f"B-{tag[2:]}" if i in starts and tag.startswith("I-") else tag for i, tag in enumerate(tags)]
    return fixed, sum(a != b for a, b in zip(tags, fixed))


def tagged_sentences(sentences: list[tuple[list[str], list[str]]], name: str,
                     tag_names: tuple[str, ...] | None = None) -> TaggedSentences:
    """Tag ids for parsed sentences. ``tag_names`` (a training set's) must cover every type found."""
    repaired, fixed = 0, []
    for words, tags in sentences:
        clean, changed = repair_bio(tags)
        repaired += changed
        fixed.append((tuple(words), clean))
    types = sorted({tag[2:] for _, tags in fixed for tag in tags if tag != "O"})
    if not types:
        raise VizError(f"'{name}' has no entities (every tag is O): there is nothing to learn or score.")
    if len(types) > MAX_TYPES:
        raise VizError(f"'{name}' has {len(types)} entity types; the limit is {MAX_TYPES}. Is the last column "
                       "the tag?")
    if tag_names is None:
        tag_names = tag_names_for(types)
    unknown = [t for t in types if f"B-{t}" not in tag_names]
    if unknown:
        raise VizError(f"'{name}' has entity type(s) {', '.join(unknown[:5])} that the training data does not "
                       f"have ({', '.join(n[2:] for n in tag_names if n.startswith('B-'))}).")
    index = {tag: i for i, tag in enumerate(tag_names)}
    return TaggedSentences(tuple(w for w, _ in fixed), tuple(tuple(index[t] for t in tags) for _, tags in fixed),
                           tuple(tag_names), repaired)


def read_conll_bytes(data: bytes, name: str = "upload.conll",
                     tag_names: tuple[str, ...] | None = None) -> TaggedSentences:
    """An uploaded CoNLL file as tagged sentences. Raises VizError with a fix-it message."""
    return tagged_sentences(parse_conll(decode_text(data, name), name), name, tag_names)


def read_conll_file(path: str | Path, tag_names: tuple[str, ...] | None = None) -> TaggedSentences:
    return read_conll_bytes(read_file(path, "CoNLL file", SHRINK, MAX_BYTES), Path(path).name, tag_names)


def header_comments(path: str | Path = SILVER_PATH) -> list[str]:
    """The ``# `` comment lines at the top of a CoNLL file, without the ``# `` (the silver file says
    there how its labels were made)."""
    lines = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.startswith("# "):
            break
        lines.append(line[2:])
    return lines


def builtin_token_data() -> TaggedData:
    """Silver training sentences (spaCy's labels) and the hand-checked held-out sentences."""
    train = read_conll_file(SILVER_PATH)
    test = read_conll_file(HELDOUT_PATH, train.tag_names)
    return TaggedData(train, test, BUILTIN_NAME,
                      "the hand-checked file ner-heldout.conll; training on spaCy's silver labels")


def split_every_fifth(data: TaggedSentences) -> tuple[TaggedSentences, TaggedSentences]:
    """Every fifth sentence (the 5th, 10th, ...) held out: spread over the whole file, no seed needed."""
    if len(data) < MIN_SPLIT_SENTENCES:
        raise VizError(f"Only {len(data)} sentences: at least {MIN_SPLIT_SENTENCES} are needed to hold some "
                       "out for testing. Add sentences or upload a separate held-out file.")
    held = np.arange(len(data)) % TEST_EVERY == TEST_EVERY - 1
    return data.subset(np.flatnonzero(~held).tolist()), data.subset(np.flatnonzero(held).tolist())


def uploaded_token_data(train_bytes: bytes, train_name: str, test_bytes: bytes | None = None,
                        test_name: str | None = None) -> TaggedData:
    """A user's CoNLL file; held out: a second file when given, else every fifth sentence."""
    train = read_conll_bytes(train_bytes, train_name)
    if test_bytes is None:
        kept, held = split_every_fifth(train)
        return TaggedData(TaggedSentences(kept.words, kept.tags, kept.tag_names, train.repaired), held,
                          train_name, "every fifth sentence of the file held out (the 5th, 10th, ...)")
    test = read_conll_bytes(test_bytes, test_name or "held-out.conll", train.tag_names)
    return TaggedData(train, test, train_name, f"the held-out file '{test_name}'")


def load_token_data(train: str, eval_path: str | None = None) -> TaggedData:
    """CLI entry: ``train`` is ``builtin`` or a CoNLL path; ``eval_path`` a held-out CoNLL file."""
    if train == BUILTIN_NAME and eval_path is None:
        return builtin_token_data()
    if train == BUILTIN_NAME:
        silver = read_conll_file(SILVER_PATH)
        return TaggedData(silver, read_conll_file(eval_path, silver.tag_names), BUILTIN_NAME,
                          f"the held-out file '{Path(eval_path).name}'")
    train_data = read_file(train, "CoNLL file", SHRINK, MAX_BYTES)
    eval_data = None if eval_path is None else read_file(eval_path, "CoNLL file", SHRINK, MAX_BYTES)
    return uploaded_token_data(train_data, Path(train).name, eval_data,
                               Path(eval_path).name if eval_path else None)


# --- word pieces ---------------------------------------------------------------------------------------

def align_labels(word_ids: Sequence[int | None], word_tags: Sequence[int]) -> list[int]:
    """Per piece: the word's tag id at its first piece, ``IGNORE`` (-100) at later pieces and special tokens."""
    labels, previous = [], None
    for word in word_ids:
        labels.append(IGNORE if word is None or word == previous else int(word_tags[word]))
        previous = word
    return labels


def first_pieces(word_ids: Sequence[int | None], num_words: int) -> list[int | None]:
    """Per word: the position of its first piece, or None when truncation cut the word off."""
    positions: list[int | None] = [None] * num_words
    for position, word in enumerate(word_ids):
        if word is not None and positions[word] is None:
            positions[word] = position
    return positions


def encode_words(tokenizer, words: Sequence[str], max_length: int):
    """One pre-split sentence through a fast tokenizer (a ``BatchEncoding`` with ``word_ids()``), cut at
    ``max_length`` pieces or at the most the tokenizer's model reads, when that is less."""
    return tokenizer(list(words), is_split_into_words=True, truncation=True,
                     max_length=min(max_length, tokenizer.model_max_length), verbose=False)


def alignment_table(tokenizer, words: Sequence[str], tags: Sequence[str], tag_names: Sequence[str],
                    max_length: int) -> pd.DataFrame:
    """One row per piece of one sentence: position, piece, its word (empty for a special token), the
    label id the loss sees (the word's tag id at its first piece, else -100) and that label as text."""
    encoding = encode_words(tokenizer, words, max_length)
    word_ids = encoding.word_ids()
    labels = align_labels(word_ids, [list(tag_names).index(t) for t in tags])
    return pd.DataFrame([
        {"position": position, "piece": piece, "word": "" if word is None else words[word],
         "label id": label, "label": "-100 (ignored)" if label == IGNORE else tag_names[label]}
        for position, (piece, word, label) in enumerate(zip(encoding.tokens(), word_ids, labels))])


def tagged_text(words: Sequence[str], tags: Sequence[str]) -> tuple[str, list[tuple[int, int, str]]]:
    """A tagged sentence as readable text and its entities as (start, end, type) character spans."""
    text, offsets = join_words(words)
    return text, [(offsets[s.start][1], offsets[s.end - 1][2], s.kind) for s in bio_entities(tags)]


def o_share(data: TaggedSentences) -> float:
    """The share of words tagged O: the word accuracy of a model that tags everything O."""
    words = data.word_count()
    return sum(t == 0 for tags in data.tags for t in tags) / words if words else float("nan")


# --- words and text -------------------------------------------------------------------------------------

_NO_SPACE_BEFORE = {".", ",", "?", "!", ";", ":", "'s", "’s", ")", "'"}


def join_words(words: Sequence[str]) -> tuple[str, list[tuple[str, int, int]]]:
    """Readable text from pre-split words (no space before punctuation or ``'s``, inside brackets or
    quotes) and each word's (word, start, end) character offsets in it."""
    text, offsets, quote_open, previous = "", [], False, ""
    for word in words:
        space = bool(text) and word not in _NO_SPACE_BEFORE and previous != "(" \
            and not (word == '"' and quote_open) and not (previous == '"' and quote_open)
        if word == '"':
            quote_open = not quote_open
        text += " " if space else ""
        offsets.append((word, len(text), len(text) + len(word)))
        text += word
        previous = word
    return text, offsets


_ABBREVIATIONS = {"Mr", "Mrs", "Ms", "Dr", "St", "Prof", "Jr", "Sr", "Mt", "Gen", "Sen", "Gov", "Rev", "Capt"}
_PIECE = re.compile(r"(?:[A-Za-z]\.){2,}|\w+(?:[-'’]\w+)*|[^\w\s]")


def split_words(text: str) -> list[tuple[str, int, int]]:
    """Words as the held-out file has them, with character offsets (start, end) into ``text``.

    Punctuation marks are words of their own, a possessive ``'s`` is split off (``Babbage 's``),
    hyphenated words stay one word (``Stratford-upon-Avon``), initials and titles keep their full stop
    (``J.K.``, ``Dr.``).
    """
    out: list[tuple[str, int, int]] = []
    for match in _PIECE.finditer(text):
        word, start, end = match.group(), match.start(), match.end()
        if word == "." and out and out[-1][0] in _ABBREVIATIONS and out[-1][2] == start:
            out[-1] = (out[-1][0] + ".", out[-1][1], end)
        elif len(word) > 2 and word[-2:] in ("'s", "’s"):
            out += [(word[:-2], start, end - 2), (word[-2:], end - 2, end)]
        else:
            out.append((word, start, end))
    return out
