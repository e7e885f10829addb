"""The built-in data for the pair, QA and NER tasks (vizcore/data): counts, splits, offsets, BIO tags.

Each ``*_problems`` function lists what is wrong with the data it is given, one message per problem.
The first tests assert that the shipped files have none; the rest break a copy of each file in one
way and assert that the check meant for it says so, because a check that cannot fail is a defect.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

DATA = Path(__file__).resolve().parents[2] / "vizcore" / "data"
PAIR_LABELS = {"entailment", "neutral", "contradiction"}
SPLITS = {"train", "test"}
NER_TYPES = ("PER", "LOC", "ORG", "MISC")
NER_MINIMUM = {"PER": 40, "LOC": 40, "ORG": 40, "MISC": 20}


def read_pairs() -> pd.DataFrame:
    return pd.read_csv(DATA / "pairs.csv", dtype=str, keep_default_na=False)


def read_qa() -> list[dict]:
    return json.loads((DATA / "qa.json").read_text(encoding="utf-8"))


def read_ner() -> str:
    return (DATA / "ner-heldout.conll").read_text(encoding="utf-8")


def share_problems(test_share: float, what: str) -> list[str]:
    return [] if 0.15 <= test_share <= 0.25 else [f"{what}: test share {test_share:.2f} is not about 20 %"]


# --- sentence pairs ---------------------------------------------------------------------------------

def pair_problems(frame: pd.DataFrame) -> list[str]:
    problems = []
    if list(frame.columns) != ["premise", "hypothesis", "label", "split"]:
        return [f"columns are {list(frame.columns)}"]
    for column in frame.columns:
        bad = frame[column].str.strip().eq("") | frame[column].ne(frame[column].str.strip())
        problems += [f"row {i}: empty or padded {column}" for i in frame.index[bad]]
    problems += [f"row {i}: unknown label {v!r}" for i, v in frame["label"].items() if v not in PAIR_LABELS]
    problems += [f"row {i}: unknown split {v!r}" for i, v in frame["split"].items() if v not in SPLITS]
    if len(frame) < 450:
        problems.append(f"only {len(frame)} pairs")
    for split, rows in frame.groupby("split"):
        counts = rows["label"].value_counts()
        if set(counts.index) != PAIR_LABELS or counts.nunique() != 1:
            problems.append(f"{split} split is not balanced: {counts.to_dict()}")
    problems += share_problems((frame["split"] == "test").mean(), "pairs")
    shared = set(frame.loc[frame["split"] == "train", "premise"]) & set(frame.loc[frame["split"] == "test", "premise"])
    problems += [f"premise in both splits: {p!r}" for p in sorted(shared)]
    duplicated = frame.duplicated(["premise", "hypothesis"], keep=False)
    problems += [f"row {i}: duplicate pair" for i in frame.index[duplicated]]
    repeated = frame.index[frame["premise"] == frame["hypothesis"]]
    problems += [f"row {i}: hypothesis repeats the premise" for i in repeated]
    return problems


def test_pairs_file_has_no_problems():
    assert pair_problems(read_pairs()) == []


def test_pairs_reuse_each_premise_with_different_labels():
    frame = read_pairs()
    labels_per_premise = frame.groupby("premise")["label"].agg(list)
    assert all(len(set(labels)) == len(labels) >= 2 for labels in labels_per_premise)
    assert frame["premise"].nunique() >= 150


# --- extractive question answering ------------------------------------------------------------------

def qa_problems(passages: list[dict]) -> list[str]:
    problems = []
    ids = [p.get("id") for p in passages] + [q.get("id") for p in passages for q in p.get("questions", [])]
    problems += [f"id {i!r} used {n} times" for i, n in Counter(ids).items() if n > 1]
    for passage in passages:
        problems += passage_problems(passage)
    contexts = {split: {p["context"] for p in passages if p["split"] == split} for split in SPLITS}
    problems += [f"context in both splits: {c[:40]!r}" for c in contexts["train"] & contexts["test"]]
    if len({p["context"] for p in passages}) != len(passages):
        problems.append("two passages have the same context")
    n_questions = sum(len(p["questions"]) for p in passages)
    if len(passages) < 70 or n_questions < 350:
        problems.append(f"only {len(passages)} passages and {n_questions} questions")
    problems += share_problems(sum(p["split"] == "test" for p in passages) / len(passages), "qa passages")
    return problems


def passage_problems(passage: dict) -> list[str]:
    where = passage.get("id")
    if set(passage) != {"id", "title", "context", "split", "questions"}:
        return [f"{where}: keys are {sorted(passage)}"]
    problems = [] if passage["split"] in SPLITS else [f"{where}: unknown split {passage['split']!r}"]
    context = passage["context"]
    if not 60 <= len(context.split()) <= 150:
        problems.append(f"{where}: context has {len(context.split())} words")
    if not 4 <= len(passage["questions"]) <= 6:
        problems.append(f"{where}: {len(passage['questions'])} questions")
    for question in passage["questions"]:
        problems += question_problems(question, context)
    return problems


def question_problems(question: dict, context: str) -> list[str]:
    where, text = question["id"], question["question"]
    problems = [] if text.endswith("?") and text == text.strip() else [f"{where}: question {text!r}"]
    if text.rstrip("?").lower() in context.lower():
        problems.append(f"{where}: the question is copied from the passage")
    if not question["answers"]:
        problems.append(f"{where}: no answer")
    for answer in question["answers"]:
        start, answer_text = answer["answer_start"], answer["text"]
        if not answer_text or answer_text != answer_text.strip() or len(answer_text.split()) > 8:
            problems.append(f"{where}: answer {answer_text!r} is empty, padded or long")
        if not isinstance(start, int) or start < 0 or context[start:start + len(answer_text)] != answer_text:
            problems.append(f"{where}: {answer_text!r} is not the context's text at {start}")
    return problems


def test_qa_file_has_no_problems():
    assert qa_problems(read_qa()) == []


# --- NER held-out set -------------------------------------------------------------------------------

def ner_sentences(text: str) -> list[list[tuple[str, str]]]:
    """Sentences of (token, tag); a line that is not exactly ``token<TAB>tag`` becomes ("", line)."""
    sentences = []
    for block in text.rstrip("\n").split("\n\n"):
        rows = [line.split("\t") for line in block.split("\n")]
        sentences.append([(row[0], row[1]) if len(row) == 2 else ("", "\t".join(row)) for row in rows])
    return sentences


def ner_problems(text: str) -> list[str]:
    problems = [] if text.endswith("\n") and "\n\n\n" not in text else ["blank lines are not single"]
    sentences = ner_sentences(text)
    tags = {"O"} | {f"{bi}-{kind}" for bi in "BI" for kind in NER_TYPES}
    for n, sentence in enumerate(sentences, 1):
        for k, (token, tag) in enumerate(sentence):
            if not token or re.search(r"\s", token):
                problems.append(f"sentence {n}, token {k + 1}: empty or blank token ({tag!r})")
            if tag not in tags:
                problems.append(f"sentence {n}, token {k + 1}: unknown tag {tag!r}")
            previous = sentence[k - 1][1] if k else "O"
            if tag.startswith("I-") and previous[2:] != tag[2:]:
                problems.append(f"sentence {n}, token {k + 1}: {tag} after {previous}")
    counts = Counter(tag[2:] for sentence in sentences for _, tag in sentence if tag.startswith("B-"))
    problems += [f"{kind}: {counts[kind]} entities, fewer than {low}" for kind, low in NER_MINIMUM.items()
                 if counts[kind] < low]
    if len(sentences) < 110:
        problems.append(f"only {len(sentences)} sentences")
    words = [" ".join(token for token, _ in sentence) for sentence in sentences]
    problems += [f"sentence repeated: {w[:40]!r}" for w, n in Counter(words).items() if n > 1]
    return problems


def test_ner_file_has_no_problems():
    assert ner_problems(read_ner()) == []


def test_ner_set_has_multi_word_entities_of_every_type_and_sentences_without_any():
    sentences = ner_sentences(read_ner())
    multi_word = {tag[2:] for sentence in sentences for tag in (t for _, t in sentence) if tag.startswith("I-")}
    assert multi_word == set(NER_TYPES)
    assert sum(all(tag == "O" for _, tag in sentence) for sentence in sentences) >= 5


# --- each check catches the damage it is meant for ---------------------------------------------------

def broken_pairs(how: str) -> pd.DataFrame:
    frame = read_pairs()
    first_test = frame.index[frame["split"] == "test"][0]
    if how == "not balanced":
        return frame.drop(index=first_test)
    if how == "premise in both splits":
        frame.loc[first_test, "split"] = "train"
    elif how == "duplicate pair":
        frame = pd.concat([frame, frame.iloc[[0]]], ignore_index=True)
    elif how == "unknown label":
        frame.loc[0, "label"] = "contradicts"
    elif how == "empty or padded":
        frame.loc[0, "hypothesis"] = " "
    return frame


@pytest.mark.parametrize("how", ["not balanced", "premise in both splits", "duplicate pair", "unknown label",
                                 "empty or padded"])
def test_pair_check_catches(how):
    assert any(how in problem for problem in pair_problems(broken_pairs(how)))


def broken_qa(how: str) -> list[dict]:
    passages = read_qa()
    test_passage = next(p for p in passages if p["split"] == "test")
    if how == "is not the context's text":
        passages[0]["questions"][0]["answers"][0]["answer_start"] += 1
    elif how == "used 2 times":
        passages[0]["questions"][1]["id"] = passages[0]["questions"][0]["id"]
    elif how == "context in both splits":
        test_passage["context"] = passages[0]["context"]
    elif how == "3 questions":
        passages[0]["questions"] = passages[0]["questions"][:3]
    elif how == "copied from the passage":
        passages[0]["questions"][0]["question"] = passages[0]["context"].split(".")[0] + "?"
    return passages


@pytest.mark.parametrize("how", ["is not the context's text", "used 2 times", "context in both splits",
                                 "3 questions", "copied from the passage"])
def test_qa_check_catches(how):
    assert any(how in problem for problem in qa_problems(broken_qa(how)))


def broken_ner(how: str) -> str:
    text = read_ner()
    if how == "I-PER after O":
        return text.replace("Anna\tB-PER", "Anna\tI-PER", 1)
    if how == "I-LOC after B-PER":
        return text.replace("Kowalski\tI-PER", "Kowalski\tI-LOC", 1)
    if how == "empty or blank token":
        return text.replace("Anna\tB-PER", "\tB-PER", 1)
    if how == "unknown tag":
        return text.replace("Anna\tB-PER", "Anna\tB-PERSON", 1)
    if how == "fewer than 20":
        return re.sub(r"\t[BI]-MISC", "\tO", text)
    return text.replace("\n\n", "\n\n\n", 1)


@pytest.mark.parametrize("how", ["I-PER after O", "I-LOC after B-PER", "empty or blank token", "unknown tag",
                                 "fewer than 20", "blank lines are not single"])
def test_ner_check_catches(how):
    assert any(how in problem for problem in ner_problems(broken_ner(how)))
