"""QA data (built-in, SQuAD JSON, flat JSON, CSV; the split; every fix-it message) and SQuAD's metrics."""

from __future__ import annotations

import codecs
import json
import re
import string
from collections import Counter

import numpy as np
import pytest

from vizcore.errors import VizError
from vizcore.finetune.qa import MAX_BYTES, QAExample, builtin_qa, load_qa, read_qa_bytes
from vizcore.finetune.qa_metrics import (
    answer_scores,
    baseline_scores,
    exact_match,
    first_sentence_answer,
    mean_scores,
    normalize_answer,
    overlap_sentence_answer,
    token_f1,
)

CONTEXT_A = "Paris is the capital of France. It lies on the Seine."
CONTEXT_B = "The Nile flows north. It ends in the Mediterranean Sea."


def squad(*paragraphs: dict) -> bytes:
    return json.dumps({"version": "1.1", "data": [{"title": "T", "paragraphs": list(paragraphs)}]}).encode()


def paragraph(context: str, *qas: tuple[str, str]) -> dict:
    return {"context": context, "qas": [{"id": f"q{i}", "question": q, "answers": [
        {"text": a, "answer_start": context.index(a)}]} for i, (q, a) in enumerate(qas)]}


def flat_passages(count: int, split: bool = False) -> list[dict]:
    passages = []
    for p in range(count):
        context = f"Passage number {p} says that the answer is word{p} and nothing else."
        passages.append({"id": f"p{p}", "title": f"P{p}", "context": context, **({"split": "test" if p % 5 == 4
                         else "train"} if split else {}), "questions": [
            {"id": f"p{p}-q1", "question": "What is the answer?",
             "answers": [{"text": f"word{p}", "answer_start": context.index(f"word{p}")}]}]})
    return passages


def error_of(payload: bytes, name: str = "up.json") -> str:
    with pytest.raises(VizError) as caught:
        read_qa_bytes(payload, name)
    return str(caught.value)


# ---- the built-in set ---------------------------------------------------------------------------------

def test_builtin_counts_and_split_by_passage():
    data = builtin_qa()
    assert (len(data.train), len(data.test)) == (342, 79)
    assert (data.train.passages, data.test.passages) == (60, 14)
    assert not {e.context for e in data.train.examples} & {e.context for e in data.test.examples}
    assert data.source == "builtin" and "passage" in data.split_note
    for example in data.test.examples:
        answer = example.answers[0]
        assert example.context[answer.start: answer.end] == answer.text


# ---- uploads -------------------------------------------------------------------------------------------

def test_squad_json_keeps_every_gold_answer_and_skips_unanswerable():
    first = paragraph(CONTEXT_A, ("What is the capital of France?", "Paris"))
    first["qas"][0]["answers"].append({"text": "Paris is the capital", "answer_start": 0})
    first["qas"].append({"id": "x", "question": "Who?", "answers": [], "is_impossible": True})
    data = read_qa_bytes(squad(first, paragraph(CONTEXT_B, ("Where does the Nile end?", "Mediterranean Sea"))))
    everything = data.train.examples + data.test.examples
    assert len(everything) == 2 and data.skipped == 1
    paris = next(e for e in everything if e.context == CONTEXT_A)
    assert [a.text for a in paris.answers] == ["Paris", "Paris is the capital"]
    assert (len(data.train), len(data.test)) == (1, 1)  # two passages: one held out, one trained on


def test_flat_json_without_split_holds_out_a_seeded_fifth_of_the_passages():
    payload = json.dumps(flat_passages(20)).encode()
    data = read_qa_bytes(payload, "mine.json", seed=3)
    assert (data.train.passages, data.test.passages) == (16, 4)
    assert not {e.context for e in data.train.examples} & {e.context for e in data.test.examples}
    assert "seed 3" in data.split_note
    again = read_qa_bytes(payload, "mine.json", seed=3)
    other = read_qa_bytes(payload, "mine.json", seed=4)
    assert again.test == data.test and other.test != data.test


def test_flat_json_split_field_is_used():
    data = read_qa_bytes(json.dumps(flat_passages(10, split=True)).encode(), "mine.json")
    assert [e.id for e in data.test.examples] == ["p4-q1", "p9-q1"]
    assert "split" in data.split_note


def test_csv_finds_answer_start_and_uses_a_given_one():
    text = ("context,question,answer,answer_start\n"
            f'"{CONTEXT_A}",Which river?,Seine,\n'
            f'"{CONTEXT_B}",Which way does it flow?,north,\n'
            '"the cat and the cat",Which animal?,cat,16\n')
    data = read_qa_bytes(text.encode(), "qa.csv")
    starts = {e.answers[0].text: e.answers[0].start for e in data.train.examples + data.test.examples}
    assert starts == {"Seine": CONTEXT_A.index("Seine"), "north": CONTEXT_B.index("north"), "cat": 16}


def test_utf16_with_bom_is_read():
    text = "context,question,answer\nCafé au lait is sweet.,What is sweet?,Café au lait\nNo tea here.,What?,tea\n"
    data = read_qa_bytes(codecs.BOM_UTF16_LE + text.encode("utf-16-le"), "qa.csv")
    assert {e.answers[0].text for e in data.train.examples + data.test.examples} == {"Café au lait", "tea"}


def test_eval_file_holds_out_all_its_questions(tmp_path):
    path = tmp_path / "eval.json"
    path.write_bytes(json.dumps(flat_passages(3)).encode())
    data = load_qa("builtin", str(path))
    assert (len(data.train), len(data.test)) == (342, 3) and "eval.json" in data.split_note


@pytest.mark.parametrize(("payload", "name", "expected"), [
    (b"x" * (MAX_BYTES + 1), "big.json", "limit is 5 MB"),
    (b"\xff\xfe\x00\xd8ab", "bad.csv", "not UTF-16"),  # a lone surrogate
    ("context,question,answer\nCaf\xe9,q,Caf\xe9\n".encode("latin-1"), "bad.csv", "not UTF-8 text (byte 27"),
    (b"   \n ", "empty.json", "is empty"),
    (b"PK\x03\x04\x00\x00binary", "sheet.csv", "not a text file"),
    (b'[{"context": "a b",\n "questions": [}]', "syntax.json", "line 2, column 16"),
    (b'{"version": "1"}', "odd.json", "neither SQuAD"),
    (json.dumps([{"questions": []}]).encode(), "f.json", "passage 1 has no 'context' field"),
    (squad({"context": "abc", "qas": [{"question": "q?", "answers": [{"text": "b"}]}]}), "s.json",
     "data[0].paragraphs[0].qas[0].answers[0] has no 'answer_start'"),
    (squad({"context": "abc", "qas": [{"question": "q?", "answers": [{"text": "b", "answer_start": "1"}]}]}),
     "s.json", "'answer_start' should be a number"),
    (squad({"context": "the sea and the sky", "qas": [{"question": "q?", "answers": [
        {"text": "sky", "answer_start": 3}]}]}), "s.json", "not at answer_start 3 of its context (there: ' se'). It "
     "occurs at 16."),
    (squad({"context": "abc", "qas": [{"question": "q?", "answers": [{"text": "zz", "answer_start": 0}]}]}),
     "s.json", "does not occur in the context at all"),
    (squad({"context": "abc", "qas": [{"question": "q?", "answers": [], "is_impossible": True}]}), "s.json",
     "no answerable question (1 unanswerable"),
    (b"context,question\nabc,q?\n", "qa.csv", "no column 'answer'"),
    (b"context,question,answer\nabc,q?,zz\n", "qa.csv", "row 2: the answer 'zz' does not occur"),
    (b"context,question,answer\nabc,q?,b\n\"a b a\",q?,a\n", "qa.csv", "row 3: the answer 'a' occurs 2 times"),
    (b"context,question,answer,answer_start\nabc,q?,b,x\n", "qa.csv", "row 2: answer_start 'x' is not a whole"),
    (b"context,question,answer\nabc,q?,b,extra\n", "qa.csv", "row 2 has a different number of fields"),
    (b"context,question,answer\nabc,q?,b\nabd,q?,d\n".replace(b"abd,q?,d", b"abd,,d"), "qa.csv",
     "row 3: the question is empty"),
    (json.dumps(flat_passages(2)[:1] * 1).encode(), "one.json", "one passage"),
    (json.dumps([{**p, "split": "dev"} for p in flat_passages(2)]).encode(), "d.json", "unknown split value 'dev'"),
])
def test_every_bad_upload_is_one_fix_it_message(payload, name, expected):
    assert expected in error_of(payload, name)


# ---- metrics -------------------------------------------------------------------------------------------

def official_normalize(s):  # SQuAD v1.1 evaluate-v1.1.py, verbatim apart from names
    def remove_articles(text):
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


def official_f1(prediction, ground_truth):
    prediction_tokens = official_normalize(prediction).split()
    ground_truth_tokens = official_normalize(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


@pytest.mark.parametrize(("prediction", "gold", "em", "f1"), [
    ("The Eiffel Tower.", "eiffel tower", 1.0, 1.0),
    ("the big red dog", "a red dog barked", 0.0, 2 / 3),  # 2 shared of 3 and 3 words
    ("dog dog", "dog", 0.0, 2 / 3),  # a bag: precision 1/2, recall 1
    ("an ananas", "Ananas!", 1.0, 1.0),  # 'an' the word goes, 'an' inside a word stays
    ("in 1969", "July 1969", 0.0, 0.5),
    ("nothing shared", "else", 0.0, 0.0),
    ("a  single\tqueen", "single queen", 1.0, 1.0),
])
def test_metrics_match_hand_computed_values(prediction, gold, em, f1):
    assert exact_match(prediction, gold) == em
    assert token_f1(prediction, gold) == pytest.approx(f1)
    assert token_f1(prediction, gold) == pytest.approx(official_f1(prediction, gold))


def test_metrics_match_the_official_formulas_on_random_texts():
    rng = np.random.default_rng(0)
    words = ["the", "a", "an", "Dog", "dog,", "cat", "red.", "it's", "1969", "ananas", "(big)", "-"]
    for _ in range(300):
        prediction, gold = (" ".join(rng.choice(words, rng.integers(1, 6))) for _ in range(2))
        assert normalize_answer(prediction) == official_normalize(prediction)
        assert token_f1(prediction, gold) == pytest.approx(official_f1(prediction, gold))


def test_scores_take_the_best_gold_answer_then_the_mean():
    example = QAExample("q", "", "ctx", "q?", ())
    golds = [example.__class__("q", "", "ctx", "q?", tuple(_answers("red dog", "the dog"))),
             example.__class__("r", "", "ctx", "q?", tuple(_answers("cat")))]
    scores = answer_scores(["dog", "cat"], golds)
    assert scores["exact_match"].tolist() == [1.0, 1.0]  # "dog" == "the dog" normalised
    assert mean_scores(["red", "dog"], golds) == pytest.approx({"exact_match": 0.0, "token_f1": (2 / 3) / 2})


def _answers(*texts):
    from vizcore.finetune.qa import Answer

    return [Answer(text, 0) for text in texts]


def test_sentence_baselines():
    context = "Bees live in hives. The queen lays the eggs. Drones do not sting."
    example = QAExample("q", "", context, "Who lays the eggs in a hive?", tuple(_answers("The queen")))
    assert first_sentence_answer(example) == "Bees live in hives."
    assert overlap_sentence_answer(example) == "The queen lays the eggs."
    scores = baseline_scores([example])
    assert scores["first sentence of the passage"]["token_f1"] == 0.0
    assert scores["the passage sentence sharing most words with the question"]["token_f1"] == pytest.approx(
        official_f1("The queen lays the eggs.", "The queen"))
