"""Extractive question answering data: the built-in set, or a user's SQuAD JSON, flat JSON or CSV.

An example is a question about a passage (``context``) with one or more gold answers, each a span of
the passage given by its text and ``answer_start``, the character offset (Python string indices).

* Built-in: ``vizcore/data/qa.json`` (written for this project, see ``vizcore/data/README.md``):
  421 questions over 74 passages, split by passage (342 train / 79 test questions).
* SQuAD v1.1 JSON: ``{"data": [{"title", "paragraphs": [{"context", "qas": [{"id", "question",
  "answers": [{"text", "answer_start"}]}]}]}]}``. SQuAD 2.0's unanswerable questions are skipped
  (the span head here cannot say "no answer") and counted.
* The project's flat JSON: a list of passages ``{"id", "title", "split", "context", "questions":
  [{"id", "question", "answers": [...]}]}`` (``id``, ``title`` and ``split`` optional).
* CSV with columns ``context``, ``question``, ``answer`` (optional ``answer_start``, ``split``):
  without ``answer_start`` the answer must occur exactly once in its context.

Without a split, a seeded 20 % of the *passages* is held out with all their questions, so no held-out
passage is seen in training (questions about one passage share their answers' surroundings).
Everything a user can get wrong is a VizError that says how to fix it.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from vizcore.errors import VizError
from vizcore.finetune.datasets import TrainTestData
from vizcore.text import decode_upload, read_file

BUILTIN_PATH = Path(__file__).resolve().parents[1] / "data" / "qa.json"
BUILTIN_NAME = "builtin"
MAX_BYTES = 5_000_000  # SQuAD v1.1's dev file (4.9 MB, 10,570 questions) fits
SHRINK = "Use fewer passages."
MAX_QUESTIONS = 20_000
MAX_CONTEXT_CHARS = 10_000
MAX_QUESTION_CHARS = 500
TEST_FRACTION = 0.2
CSV_COLUMNS = ("context", "question", "answer")
_SHOWN = 60  # characters of user text quoted in a message


@dataclass(frozen=True)
class Answer:
    text: str
    start: int  # character offset in the context

    @property
    def end(self) -> int:
        return self.start + len(self.text)


@dataclass(frozen=True)
class QAExample:
    id: str
    title: str
    context: str
    question: str
    answers: tuple[Answer, ...]  # the first one is the training target; metrics take the best over all


@dataclass(frozen=True)
class QASet:
    """Questions in file order; the passages are the distinct contexts."""

    examples: tuple[QAExample, ...]

    def __len__(self) -> int:
        return len(self.examples)

    @property
    def passages(self) -> int:
        return len({example.context for example in self.examples})


@dataclass(frozen=True)
class QAData(TrainTestData[QASet]):
    skipped: int = 0  # unanswerable questions left out


@dataclass(frozen=True)
class _Row:
    """One question as read, before the split: its passage key and an optional split name."""

    example: QAExample
    passage: int
    split: str | None


# ---- reading bytes ---------------------------------------------------------------------------------

def decode_text(data: bytes, name: str) -> str:
    """UTF-8 (with or without a BOM) or UTF-16 with a BOM; VizError for size, binary and bad bytes."""
    return decode_upload(data, name, "at least one passage with a question and its answer",
                         "Save it as UTF-8 (JSON or CSV) and upload it again.", SHRINK, MAX_BYTES)


def read_qa_bytes(data: bytes, name: str = "upload.json", seed: int = 0,
                  columns: dict[str, str] | None = None) -> QAData:
    """A SQuAD, flat JSON or CSV upload (chosen by the name's extension, else by the first character).
    ``columns`` renames a CSV's columns: ``{"context": ..., "question": ..., "answer": ...}``."""
    text = decode_text(data, name)
    is_csv = name.lower().endswith(".csv") or (not name.lower().endswith(".json")
                                              and text.lstrip()[:1] not in ("{", "["))
    rows, skipped = (_csv_rows(text, name, columns or {}), 0) if is_csv else _json_rows(text, name)
    return _train_test(rows, name, seed, skipped)


def read_qa_file(path: str | Path, seed: int = 0, columns: dict[str, str] | None = None) -> QAData:
    return read_qa_bytes(read_file(path, "QA file", SHRINK, MAX_BYTES), Path(path).name, seed, columns)


def builtin_qa() -> QAData:
    """The built-in set with its fixed split by passage (342 train / 79 test questions)."""
    data = read_qa_file(BUILTIN_PATH)
    return replace(data, source=BUILTIN_NAME, split_note="the fixed split by passage (every fifth passage)")


def load_qa(train: str, eval_path: str | None = None, seed: int = 0,
            columns: dict[str, str] | None = None) -> QAData:
    """CLI entry: ``train`` is ``builtin`` or a file; with ``eval_path`` every question of ``train``
    (the built-in set: its train split) trains and the eval file's questions are held out. ``columns``
    renames a CSV's columns (see ``read_qa_bytes``)."""
    data = builtin_qa() if train == BUILTIN_NAME else read_qa_file(train, seed, columns)
    if eval_path is None:
        return data
    held_out = read_qa_file(eval_path, seed, columns)
    everything = data.train if train == BUILTIN_NAME else QASet(data.train.examples + data.test.examples)
    return QAData(everything, QASet(held_out.train.examples + held_out.test.examples),
                  BUILTIN_NAME if train == BUILTIN_NAME else Path(train).name,
                  f"the eval file '{Path(eval_path).name}'", data.skipped + held_out.skipped)


# ---- JSON --------------------------------------------------------------------------------------------

def _json_rows(text: str, name: str) -> tuple[list[_Row], int]:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise VizError(f"'{name}' is not valid JSON: {error.msg} at line {error.lineno}, column {error.colno}. "
                       "Fix the file there (a missing comma or quote?) and upload it again.") from error
    if isinstance(document, dict) and "data" in document:
        return _squad_rows(document["data"], name)
    if isinstance(document, list):
        return _flat_rows(document, name)
    raise VizError(f"'{name}' is JSON but neither SQuAD ({{\"data\": [...]}}) nor a list of passages "
                   "({\"context\", \"questions\"}). See the formats under the upload button.")


def _field(record: object, key: str, where: str, kind: type) -> object:
    if not isinstance(record, dict):
        raise VizError(f"{where} should be a JSON object {{...}}, not {type(record).__name__}.")
    if key not in record:
        have = ", ".join(f"'{k}'" for k in record) or "none"
        raise VizError(f"{where} has no '{key}' field (it has {have}). Add it.")
    value = record[key]
    if kind is int and isinstance(value, bool) or not isinstance(value, kind):
        raise VizError(f"{where}: '{key}' should be {'a number' if kind is int else kind.__name__}, "
                       f"not {json.dumps(value)[:_SHOWN]}.")
    return value


def _squad_rows(articles: object, name: str) -> tuple[list[_Row], int]:
    if not isinstance(articles, list):
        raise VizError(f"'{name}': 'data' should be a list of articles.")
    rows, skipped = [], 0
    for a, article in enumerate(articles):
        title = str(article.get("title", "")) if isinstance(article, dict) else ""
        paragraphs = _field(article, "paragraphs", f"data[{a}]", list)
        for p, paragraph in enumerate(paragraphs):
            where = f"data[{a}].paragraphs[{p}]"
            context = _field(paragraph, "context", where, str)
            questions = _field(paragraph, "qas", where, list)
            made, gone = _questions(questions, context, title, f"{where}.qas", len({r.passage for r in rows}))
            rows, skipped = rows + made, skipped + gone
    return rows, skipped


def _flat_rows(passages: list, name: str) -> tuple[list[_Row], int]:
    rows, skipped = [], 0
    for p, passage in enumerate(passages):
        where = f"passage {p + 1}"
        context = _field(passage, "context", where, str)
        questions = _field(passage, "questions", where, list)
        split = passage.get("split")
        made, gone = _questions(questions, context, str(passage.get("title", "")), f"{where}: questions",
                                p, None if split is None else str(split).strip().lower())
        rows, skipped = rows + made, skipped + gone
    return rows, skipped


def _questions(questions: list, context: str, title: str, where: str, passage: int,
               split: str | None = None) -> tuple[list[_Row], int]:
    """The answerable questions of one passage as rows, and how many had no answer (SQuAD 2.0)."""
    rows, skipped = [], 0
    for q, record in enumerate(questions):
        here = f"{where}[{q}]"
        question = _field(record, "question", here, str)
        answers = _field(record, "answers", here, list)
        if record.get("is_impossible") or not answers:
            skipped += 1
            continue
        parsed = tuple(_answer(answer, context, f"{here}.answers[{k}]") for k, answer in enumerate(answers))
        qid = str(record.get("id", f"p{passage + 1}-q{q + 1}"))
        rows.append(_Row(_example(qid, title, context, question, parsed, here), passage, split))
    return rows, skipped


def _answer(record: object, context: str, where: str) -> Answer:
    text = _field(record, "text", where, str)
    start = _field(record, "answer_start", where, int)
    return _checked_answer(text, start, context, where)


def _checked_answer(text: str, start: int, context: str, where: str) -> Answer:
    if not text.strip():
        raise VizError(f"{where}: the answer text is empty. Give the answer's words.")
    if context[start: start + len(text)] != text or start < 0:
        found = _occurrences(context, text)
        hint = (f" It occurs at {', '.join(map(str, found[:5]))}." if found
                else " It does not occur in the context at all (check spelling and spaces).")
        raise VizError(f"{where}: the answer {text[:_SHOWN]!r} is not at answer_start {start} of its "
                       f"context (there: {context[max(start, 0): max(start, 0) + len(text)][:_SHOWN]!r}).{hint}")
    return Answer(text, start)


def _occurrences(context: str, text: str) -> list[int]:
    found, at = [], context.find(text)
    while at >= 0:
        found.append(at)
        at = context.find(text, at + 1)
    return found


def _example(qid: str, title: str, context: str, question: str, answers: tuple[Answer, ...],
             where: str) -> QAExample:
    if not context.strip():
        raise VizError(f"{where}: the context is empty. Give the passage the question is about.")
    if len(context) > MAX_CONTEXT_CHARS:
        raise VizError(f"{where}: the context has {len(context):,} characters; the limit is "
                       f"{MAX_CONTEXT_CHARS:,}. Split it into shorter passages.")
    if not question.strip():
        raise VizError(f"{where}: the question is empty.")
    if len(question) > MAX_QUESTION_CHARS:
        raise VizError(f"{where}: the question has {len(question):,} characters; the limit is "
                       f"{MAX_QUESTION_CHARS}. Shorten it.")
    return QAExample(qid, title, context, question.strip(), answers)


# ---- CSV ---------------------------------------------------------------------------------------------

def _csv_rows(text: str, name: str, columns: dict[str, str]) -> list[_Row]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        header = [str(c).strip().lower() for c in (reader.fieldnames or [])]
        records = list(reader)
    except csv.Error as error:
        raise VizError(f"'{name}' could not be read as CSV: {error} (put texts that contain commas or "
                       "line breaks in double quotes).") from error
    wanted = [columns.get(role, role).strip().lower() for role in CSV_COLUMNS]
    missing = [c for c in wanted if c not in header]
    if missing:
        have = ", ".join(f"'{c}'" for c in header) or "none"
        raise VizError(f"'{name}' has no column {', '.join(repr(c) for c in missing)} (columns: {have}). "
                       "A QA CSV needs a context, a question and an answer column.")
    rows, passages = [], {}
    for line, record in enumerate(records, start=2):  # line 1 is the header
        if None in record or None in record.values():  # DictReader's marks for extra and missing fields
            raise VizError(f"'{name}' row {line} has a different number of fields than the header: put "
                           "texts that contain commas in double quotes.")
        record = {str(k).strip().lower(): v for k, v in record.items()}
        context, question, answer = (record[c] for c in wanted)
        if not (context.strip() or question.strip() or answer.strip()):
            continue
        where = f"'{name}' row {line}"
        found = _csv_answer(record, context, answer, where)
        key = passages.setdefault(context, len(passages))
        split = record.get("split", "").strip().lower() or None
        example = _example(str(record.get("id") or f"row-{line}"), str(record.get("title", "")), context,
                           question, (found,), where)
        rows.append(_Row(example, key, split))
    return rows


def _csv_answer(record: dict, context: str, answer: str, where: str) -> Answer:
    """The answer at its ``answer_start`` when the CSV has one, else its one occurrence in the context."""
    if not answer.strip():
        raise VizError(f"{where}: the answer is empty. Give the answer's words, copied from the context.")
    start = str(record.get("answer_start", "")).strip()
    if start:
        if not start.isdigit():
            raise VizError(f"{where}: answer_start {start[:_SHOWN]!r} is not a whole number of characters.")
        return _checked_answer(answer, int(start), context, where)
    found = _occurrences(context, answer)
    if not found:
        raise VizError(f"{where}: the answer {answer[:_SHOWN]!r} does not occur in its context. Copy it from "
                       "the context exactly (same spelling, capitals and spaces).")
    if len(found) > 1:
        raise VizError(f"{where}: the answer {answer[:_SHOWN]!r} occurs {len(found)} times in its context "
                       f"(at {', '.join(map(str, found[:5]))}). Add a column answer_start with the right "
                       "offset, or a longer answer that occurs once.")
    return Answer(answer, found[0])


# ---- the held-out split -------------------------------------------------------------------------------

def _train_test(rows: list[_Row], name: str, seed: int, skipped: int) -> QAData:
    if not rows:
        reason = f" ({skipped} unanswerable question(s) were skipped)" if skipped else ""
        raise VizError(f"'{name}' has no answerable question{reason}: add passages with questions and answers.")
    if len(rows) > MAX_QUESTIONS:
        raise VizError(f"'{name}' has {len(rows):,} questions; the limit is {MAX_QUESTIONS:,}. Use a sample.")
    splits = {row.split for row in rows}
    if splits == {"train", "test"}:
        note = "the file's split field (train/test)"
        held_out = [row.split == "test" for row in rows]
    else:
        unknown = sorted(s for s in splits - {"train", "test", None})
        if unknown:
            raise VizError(f"'{name}': unknown split value {unknown[0]!r}; use train or test (or leave the "
                           "split out everywhere for a seeded split by passage).")
        held_out, note = _split_by_passage([row.passage for row in rows], seed)
    train = QASet(tuple(row.example for row, out in zip(rows, held_out) if not out))
    test = QASet(tuple(row.example for row, out in zip(rows, held_out) if out))
    return QAData(train, test, name, note, skipped)


def _split_by_passage(passages: list[int], seed: int) -> tuple[list[bool], str]:
    """A seeded ``TEST_FRACTION`` of the passages (at least one, never all) is held out with its questions."""
    distinct = sorted(set(passages))
    if len(distinct) < 2:
        raise VizError("All questions are about one passage: add a second passage (the held-out questions "
                       "are about passages the model has not trained on), or mark a split.")
    order = np.random.default_rng(seed).permutation(distinct)
    take = min(len(distinct) - 1, max(1, int(round(TEST_FRACTION * len(distinct)))))
    chosen = set(order[:take].tolist())
    return [p in chosen for p in passages], (f"{take} of {len(distinct)} passages ({TEST_FRACTION:.0%}) held "
                                             f"out at random with all their questions (seed {seed})")
