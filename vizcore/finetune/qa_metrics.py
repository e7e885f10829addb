"""SQuAD's answer metrics and two answer-free baselines.

Exact match and token F1 follow the official SQuAD v1.1 evaluation script: both texts are normalised
(lower case, punctuation removed, the articles a / an / the removed, whitespace collapsed); exact match
is 1 when the normalised texts are equal; token F1 is the harmonic mean of precision and recall of the
shared normalised words (a bag: a word counts as often as it occurs in both), 0 when none is shared.
Each is the maximum over the question's gold answers, then averaged over questions.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import Sequence

import numpy as np

from vizcore.finetune.qa import QAExample

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = set(string.punctuation)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[a-z0-9]+")
# Words that say nothing about where the answer is: the overlap baseline ignores them.
_STOP = frozenset("a an the of in on at to for by with from and or is are was were be been do does did what which "
                  "who whom whose when where why how many much its it this that these those as into than".split())


def normalize_answer(text: str) -> str:
    """SQuAD v1.1's normalisation: lower -> no punctuation -> no articles -> single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def token_f1(prediction: str, gold: str) -> float:
    predicted, wanted = normalize_answer(prediction).split(), normalize_answer(gold).split()
    shared = sum((Counter(predicted) & Counter(wanted)).values())
    if shared == 0:
        return 0.0
    precision, recall = shared / len(predicted), shared / len(wanted)
    return 2 * precision * recall / (precision + recall)


def best_over_gold(metric, prediction: str, golds: Sequence[str]) -> float:
    return max(metric(prediction, gold) for gold in golds)


def answer_scores(predictions: Sequence[str], examples: Sequence[QAExample]) -> dict[str, np.ndarray]:
    """Per question: ``{"exact_match": (N,), "token_f1": (N,)}``, each the best over the gold answers."""
    golds = [[answer.text for answer in example.answers] for example in examples]
    return {"exact_match": np.array([best_over_gold(exact_match, p, g) for p, g in zip(predictions, golds)]),
            "token_f1": np.array([best_over_gold(token_f1, p, g) for p, g in zip(predictions, golds)])}


def mean_scores(predictions: Sequence[str], examples: Sequence[QAExample]) -> dict[str, float]:
    """``{"token_f1", "exact_match"}`` averaged over the questions (nan for none)."""
    scores = answer_scores(predictions, examples)
    return {name: float(values.mean()) if len(values) else float("nan") for name, values in scores.items()}


# ---- baselines that read no model -------------------------------------------------------------------

def sentences(context: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(context.strip()) if s]


def first_sentence_answer(example: QAExample) -> str:
    return sentences(example.context)[0]


def overlap_sentence_answer(example: QAExample) -> str:
    """The passage sentence sharing the most content words with the question (the first on a tie)."""
    asked = set(_WORD.findall(example.question.lower())) - _STOP
    candidates = sentences(example.context)
    overlap = [len(asked & set(_WORD.findall(s.lower()))) for s in candidates]
    return candidates[int(np.argmax(overlap))]


BASELINES = {"first sentence of the passage": first_sentence_answer,
             "the passage sentence sharing most words with the question": overlap_sentence_answer}


def baseline_scores(examples: Sequence[QAExample]) -> dict[str, dict[str, float]]:
    """Each baseline's ``{"token_f1", "exact_match"}`` on ``examples``."""
    return {name: mean_scores([answer(e) for e in examples], examples) for name, answer in BASELINES.items()}
