"""Labelled text for fine-tuning: built-in sets, or a user's CSV (a text column, or two for sentence
pairs, and a label column).

The built-in sets were written for this project (vizcore/data/README.md): ``sentiment.csv``, 436 short
English sentences labelled ``negative``/``positive`` (split: 348 train, 88 test, balanced), and
``pairs.csv``, 480 premise/hypothesis pairs labelled entailment/neutral/contradiction (split by premise:
384 train, 96 test, balanced).

A CSV is checked at the boundary and every problem a user can cause is a VizError that says how to
fix it: too big, not UTF-8 (UTF-16 with a byte-order mark is read), binary, not parseable, one column
only, rows with more fields than the header, missing columns, empty rows, one class only.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Generic, TypeVar

import numpy as np
import pandas as pd

from vizcore.errors import VizError
from vizcore.text import decode_upload, read_file

BUILTIN_PATH = Path(__file__).resolve().parents[1] / "data" / "sentiment.csv"
BUILTIN_PAIRS_PATH = BUILTIN_PATH.with_name("pairs.csv")
BUILTIN_NAME = "builtin"
MAX_BYTES = 5_000_000  # 5 MB
SAVE_AS_CSV = "Save it as 'CSV UTF-8' and upload it again."
SHRINK_CSV = "Use fewer or shorter rows."
MAX_ROWS = 20_000
MAX_CLASSES = 20
MAX_TEXT_CHARS = 5_000  # one example; longer texts are refused (the model reads at most max_length tokens)
SPLIT_COLUMN = "split"
_QUOTE_HINT = "put texts that contain commas in double quotes"


@dataclass(frozen=True)
class LabelledTexts:
    """Texts with integer labels ``labels[i]`` indexing ``label_names`` (sorted by name). For sentence
    pairs, ``texts`` holds the first sentences (A) and ``second`` the second ones (B)."""

    texts: tuple[str, ...]
    labels: np.ndarray  # int64 [N]
    label_names: tuple[str, ...]
    dropped_empty: int = 0  # rows skipped because a text or the label was empty
    second: tuple[str, ...] | None = None

    def __len__(self) -> int:
        return len(self.texts)

    def counts(self) -> dict[str, int]:
        return {name: int((self.labels == i).sum()) for i, name in enumerate(self.label_names)}

    def subset(self, indices: np.ndarray) -> "LabelledTexts":
        second = None if self.second is None else tuple(self.second[i] for i in indices)
        return LabelledTexts(tuple(self.texts[i] for i in indices), self.labels[indices], self.label_names,
                             second=second)


Examples = TypeVar("Examples")


@dataclass(frozen=True)
class TrainTestData(Generic[Examples]):
    """A task's data, split: what it trains on, what it is scored on, and where both came from. The
    classification tasks' examples are ``LabelledTexts``; the token and QA tasks extend this record."""

    train: Examples
    test: Examples
    source: str  # "builtin" or the file name
    split_note: str  # how the held-out set was chosen, for the UI and the JSON


def read_csv_bytes(data: bytes, name: str = "upload.csv") -> pd.DataFrame:
    """Parse an uploaded CSV (all columns as text). Raises VizError for size, encoding, format, rows."""
    text = decode_upload(data, name, "a header row and at least two labelled rows", SAVE_AS_CSV, SHRINK_CSV, MAX_BYTES)
    try:
        frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False, skip_blank_lines=True)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        hint = f" ({_QUOTE_HINT})" if "Expected" in first else ""
        raise VizError(f"'{name}' could not be read as CSV: {first}{hint}") from error
    if not isinstance(frame.index, pd.RangeIndex):  # pandas took the extra leading fields as an index
        raise VizError(f"'{name}' has rows with more fields than its header ({len(frame.columns)} columns): "
                       f"{_QUOTE_HINT}.")
    if len(frame.columns) < 2:
        raise VizError(f"'{name}' has only one column ('{str(frame.columns[0])[:80]}'): it needs a text column "
                       "and a label column, separated by commas.")
    if len(frame) > MAX_ROWS:
        raise VizError(f"'{name}' has {len(frame):,} rows; the limit is {MAX_ROWS:,}. Use a sample.")
    frame.columns = [str(c).strip() for c in frame.columns]
    return frame


def read_csv_file(path: str | Path) -> pd.DataFrame:
    return read_csv_bytes(read_file(path, "CSV file", SHRINK_CSV, MAX_BYTES), Path(path).name)


def labelled_texts(
    frame: pd.DataFrame, text_column: str = "text", label_column: str = "label",
    label_names: tuple[str, ...] | None = None, second_column: str | None = None,
) -> LabelledTexts:
    """Pick the text (and, for pairs, the second text) and label columns. ``label_names`` (from a
    training set) maps labels by name."""
    roles = [("text", text_column), ("label", label_column)]
    if second_column is not None:
        roles.insert(1, ("second text", second_column))
    for role, column in roles:
        if column not in frame.columns:
            have = ", ".join(f"'{c}'" for c in frame.columns) or "none"
            raise VizError(f"The CSV has no {role} column '{column}' (columns: {have}). "
                           f"Choose the {role} column.")
    if len({column for _, column in roles}) < len(roles):
        raise VizError("The " + " and ".join(role for role, _ in roles) + " columns must be different columns.")
    columns = [frame[column].astype(str).str.strip() for _, column in roles]
    keep = np.logical_and.reduce([column != "" for column in columns])
    dropped = int((~keep).sum())
    texts, *rest = [column[keep].tolist() for column in columns]
    second, labels = (rest[0], rest[1]) if second_column is not None else (None, rest[0])
    if not texts:
        raise VizError("Every row has an empty " + " or ".join(f"'{c}'" for _, c in roles) + ": nothing to train on.")
    too_long = [i for i, t in enumerate(texts + (second or [])) if len(t) > MAX_TEXT_CHARS]
    if too_long:
        raise VizError(f"{len(too_long)} text(s) are longer than {MAX_TEXT_CHARS:,} characters; "
                       "shorten them (the model reads only the first few hundred tokens anyway).")
    data = _with_label_ids(texts, labels, label_names, label_column, dropped)
    return data if second is None else replace(data, second=tuple(second))


def _with_label_ids(texts: list[str], labels: list[str], label_names: tuple[str, ...] | None,
                    label_column: str, dropped: int) -> LabelledTexts:
    found = sorted(set(labels))
    if label_names is None:
        if len(found) < 2:
            raise VizError(f"Column '{label_column}' has only one class ('{found[0]}'): a classifier "
                           "needs at least two labels.")
        if len(found) > MAX_CLASSES:
            raise VizError(f"Column '{label_column}' has {len(found)} different labels; the limit is "
                           f"{MAX_CLASSES}. Is it really the label column?")
        label_names = tuple(found)
    unknown = [name for name in found if name not in label_names]
    if unknown:
        raise VizError(f"Label(s) {', '.join(repr(u) for u in unknown[:5])} are not among the training "
                       f"labels ({', '.join(label_names)}); labels are matched by name.")
    index = {name: i for i, name in enumerate(label_names)}
    ids = np.asarray([index[name] for name in labels], dtype=np.int64)
    return LabelledTexts(tuple(texts), ids, tuple(label_names), dropped)


def stratified_split(data: LabelledTexts, test_fraction: float = 0.2, seed: int = 0
                     ) -> tuple[LabelledTexts, LabelledTexts]:
    """Seeded split keeping each label's share: round(test_fraction * n_label) of each label held out."""
    rng = np.random.default_rng(seed)
    test_idx: list[int] = []
    for label in range(len(data.label_names)):
        members = np.flatnonzero(data.labels == label)
        rng.shuffle(members)
        take = int(round(test_fraction * len(members)))
        test_idx += members[: min(take, len(members) - 1)].tolist()  # keep >= 1 of each for training
    test_mask = np.zeros(len(data), dtype=bool)
    test_mask[test_idx] = True
    train, test = data.subset(np.flatnonzero(~test_mask)), data.subset(np.flatnonzero(test_mask))
    if len(test) == 0:
        raise VizError("Too few rows to hold any out for testing: add more rows or give an eval CSV.")
    return train, test


def grouped_split(data: LabelledTexts, test_fraction: float = 0.2, seed: int = 0
                  ) -> tuple[LabelledTexts, LabelledTexts]:
    """Seeded split of pairs by their first text: every pair of a held-out first text is held out, so no
    premise seen in training is tested on (a model could otherwise learn the premise, not the relation)."""
    firsts = sorted(set(data.texts))
    rng = np.random.default_rng(seed)
    held = set(rng.permutation(firsts)[: int(round(test_fraction * len(firsts)))].tolist())
    test_mask = np.asarray([text in held for text in data.texts])
    if not test_mask.any() or test_mask.all():
        raise VizError("Too few different first texts to hold some out for testing: add more rows, give the "
                       "CSV a 'split' column, or give an eval CSV.")
    return data.subset(np.flatnonzero(~test_mask)), data.subset(np.flatnonzero(test_mask))


def frame_to_train_test(frame: pd.DataFrame, text_column: str, label_column: str, source: str,
                        seed: int = 0, second_column: str | None = None) -> TrainTestData:
    """Use the CSV's ``split`` column (train/test) when it has one, else a seeded 80/20 split: by label
    for single texts, by first text for pairs."""
    if SPLIT_COLUMN in frame.columns and {"train", "test"} <= set(frame[SPLIT_COLUMN].str.strip().str.lower()):
        split = frame[SPLIT_COLUMN].str.strip().str.lower()
        train = labelled_texts(frame[split == "train"], text_column, label_column, second_column=second_column)
        test = labelled_texts(frame[split == "test"], text_column, label_column, train.label_names, second_column)
        return TrainTestData(train, test, source, "the CSV's 'split' column")
    data = labelled_texts(frame, text_column, label_column, second_column=second_column)
    if second_column is None:
        train, test = stratified_split(data, 0.2, seed)
        note = f"20 % of each label held out at random (seed {seed})"
    else:
        train, test = grouped_split(data, 0.2, seed)
        note = f"20 % of the first texts held out at random with all their pairs (seed {seed})"
    return TrainTestData(replace(train, dropped_empty=data.dropped_empty), test, source, note)


def builtin_data(kind: str = "sentence") -> TrainTestData:
    """The built-in sentiment set (348 train, 88 test) or, ``kind="pair"``, the built-in entailment pairs
    (384 train, 96 test, split by premise), each with its fixed split."""
    if kind == "pair":
        frame = read_csv_file(BUILTIN_PAIRS_PATH)
        return frame_to_train_test(frame, "premise", "label", BUILTIN_NAME, second_column="hypothesis")
    return frame_to_train_test(read_csv_file(BUILTIN_PATH), "text", "label", BUILTIN_NAME)


def load_train_test(train: str, eval_path: str | None = None, text_column: str = "text",
                    label_column: str = "label", seed: int = 0, second_column: str | None = None) -> TrainTestData:
    """CLI entry: ``train`` is ``builtin`` or a CSV path; ``eval_path`` a CSV whose labels match by name.
    ``second_column`` makes it pairs (the built-in set is then the entailment pairs).

    With an eval file, a training CSV trains on all its rows; the built-in set trains on its train split.
    """
    kind = "sentence" if second_column is None else "pair"
    if eval_path is None:
        if train == BUILTIN_NAME:
            return builtin_data(kind)
        return frame_to_train_test(read_csv_file(train), text_column, label_column, Path(train).name, seed,
                                   second_column)
    if train == BUILTIN_NAME:
        train_texts, source = builtin_data(kind).train, BUILTIN_NAME
    else:
        train_texts = labelled_texts(read_csv_file(train), text_column, label_column, second_column=second_column)
        source = Path(train).name
    test = labelled_texts(read_csv_file(eval_path), text_column, label_column, train_texts.label_names,
                          second_column)
    return TrainTestData(train_texts, test, source, f"the eval file '{Path(eval_path).name}'")
