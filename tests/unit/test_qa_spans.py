"""QA features ([CLS] question [SEP] passage [SEP], targets, truncation, windows) and span decoding."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tests.support.tiny import wordpiece_tokenizer
from vizcore.errors import VizError
from vizcore.finetune.qa import Answer, QAExample, builtin_qa
from vizcore.finetune.qa_spans import (
    CLS,
    answer_tokens,
    best_span,
    decode_example,
    encode_features,
    passage_mask,
)


@pytest.fixture(scope="module")
def tokenizer():
    return wordpiece_tokenizer()


def example(context: str, question: str, answer: str) -> QAExample:
    return QAExample("q", "", context, question, (Answer(answer, context.index(answer)),))


def brute_force(starts, ends, allowed, limit):
    best = None
    for i, j in itertools.product(range(len(starts)), repeat=2):
        if allowed[i] and allowed[j] and i <= j < i + limit:
            score = starts[i] + ends[j]
            if best is None or score > best[2]:
                best = (i, j, score)
    return best


# ---- features ------------------------------------------------------------------------------------------

def test_pair_layout_segments_and_targets_on_the_builtin_set(tokenizer):
    examples = builtin_qa().test.examples
    features = encode_features(tokenizer, examples, 384)
    assert len(features) == len(examples)
    for feature, item in zip(features, examples):
        question = tokenizer(item.question, add_special_tokens=False)["input_ids"]
        ids = list(feature.input_ids)
        assert ids[: len(question) + 2] == [tokenizer.cls_token_id, *question, tokenizer.sep_token_id]
        assert ids[-1] == tokenizer.sep_token_id and feature.passage == (len(question) + 2, len(ids) - 2)
        assert feature.segments == (0,) * (len(question) + 2) + (1,) * (len(ids) - len(question) - 2)
        answer = item.answers[0]
        assert item.context[feature.offsets[feature.start][0]: feature.offsets[feature.end][1]] == answer.text


def test_segments_equal_the_tokenizers_token_type_ids(tokenizer):
    item = builtin_qa().train.examples[0]
    feature = encode_features(tokenizer, [item], 128)[0]
    assert list(feature.segments) == tokenizer(item.question, item.context, truncation="only_second",
                                               max_length=128)["token_type_ids"]


def test_truncation_cuts_the_passage_only_and_a_cut_answer_points_at_cls(tokenizer):
    context = "word " * 40 + "The treasure is buried under the old oak tree."
    item = example(context, "Where is the treasure buried?", "under the old oak tree")
    short, long = encode_features(tokenizer, [item, item], 32)[0], encode_features(tokenizer, [item], 96)[0]
    assert len(short.input_ids) == 32 and short.input_ids[:9] == long.input_ids[:9]  # the whole question kept
    assert (short.start, short.end) == (CLS, CLS) and short.cut_off
    assert not long.cut_off
    assert context[long.offsets[long.start][0]: long.offsets[long.end][1]] == "under the old oak tree"


def test_answer_tokens_inside_a_word_piece_and_at_the_window_edges():
    offsets = [(-1, -1), (0, 4), (4, 8), (9, 12), (-1, -1)]  # "playing" split in two, then "now"
    assert answer_tokens(offsets, (1, 3), 0, 8) == (1, 2)
    assert answer_tokens(offsets, (1, 3), 5, 7) == (2, 2)  # characters inside one piece
    assert answer_tokens(offsets, (1, 3), 9, 12) == (3, 3)
    assert answer_tokens(offsets, (1, 2), 9, 12) == (CLS, CLS)  # after the window
    assert answer_tokens(offsets, (2, 3), 0, 8) == (CLS, CLS)  # starts before the window


def test_windows_cover_a_long_passage_with_the_stated_overlap(tokenizer):
    context = " ".join(f"fact{i} is number {i}." for i in range(60)) + " The key is hidden in the red box."
    item = example(context, "Where is the key?", "in the red box")
    windows = encode_features(tokenizer, [item], 64, stride=16)
    passage_tokens = len(tokenizer(context, add_special_tokens=False)["input_ids"])
    assert len(windows) > 3 and all(len(w.input_ids) <= 64 for w in windows)
    covered = [w.offsets[i] for w in windows for i in range(w.passage[0], w.passage[1] + 1)]
    assert len(set(covered)) == passage_tokens  # every passage token is in some window
    for left, right in zip(windows, windows[1:]):
        shared = set(left.offsets[left.passage[0]: left.passage[1] + 1]) & set(right.offsets)
        assert len(shared) == 16
    assert sum(not w.cut_off for w in windows) >= 1 and windows[0].cut_off


def test_a_question_too_long_for_the_window_is_refused(tokenizer):
    item = example("A short passage.", "Why " * 40 + "?", "short")
    with pytest.raises(VizError, match="tokens; with a maximum length of 32"):
        encode_features(tokenizer, [item], 32)


# ---- decoding ------------------------------------------------------------------------------------------

def test_best_span_equals_brute_force_on_random_logits():
    rng = np.random.default_rng(0)
    for _ in range(200):
        length = int(rng.integers(2, 40))
        starts, ends = rng.normal(size=length), rng.normal(size=length)
        allowed = rng.random(length) < 0.7
        allowed[rng.integers(length)] = True
        limit = int(rng.integers(1, 12))
        expected = brute_force(starts, ends, allowed, limit)
        got = best_span(starts, ends, allowed, limit)
        assert got[:2] == expected[:2] and got[2] == pytest.approx(expected[2])


def test_best_start_after_best_end_is_not_chosen():
    starts = np.array([0, 0, 1.5, 0, 0, 9.0])  # the best start is at 5 ...
    ends = np.array([0, 0, 8.0, 0, 0, 0])  # ... the best end at 2: (5, 2) is not a span
    assert best_span(starts, ends, np.ones(6, bool), 30) == (2, 2, 9.5)  # beats (5, 5) = 9 + 0
    ends[5] = 1.0
    assert best_span(starts, ends, np.ones(6, bool), 30) == (5, 5, 10.0)


def test_the_length_limit_binds():
    starts, ends = np.zeros(12), np.zeros(12)
    starts[1], ends[10] = 5.0, 5.0
    assert best_span(starts, ends, np.ones(12, bool), 30)[:2] == (1, 10)
    start, end, _ = best_span(starts, ends, np.ones(12, bool), 4)
    assert end - start + 1 <= 4 and (start == 1 or end == 10)


def test_question_tokens_are_excluded(tokenizer):
    item = example("The cat sat on the mat.", "Where did the cat sit?", "on the mat")
    feature = encode_features(tokenizer, [item], 64)[0]
    length = len(feature.input_ids)
    starts, ends = np.zeros(length), np.zeros(length)
    starts[:feature.passage[0]] = ends[:feature.passage[0]] = 100.0  # [CLS] and the question shout loudest
    starts[feature.start], ends[feature.end] = 1.0, 1.0
    choice = decode_example([feature], [starts], [ends])
    assert (choice.start, choice.end) == (feature.start, feature.end)
    assert item.context[choice.start_char: choice.end_char] == "on the mat"
    assert passage_mask(feature).sum() == feature.passage[1] - feature.passage[0] + 1


def test_decoding_picks_the_best_window(tokenizer):
    context = " ".join(f"fact{i} is number {i}." for i in range(30)) + " The key is in the red box."
    item = example(context, "Where is the key?", "in the red box")
    windows = encode_features(tokenizer, [item], 48, stride=12)
    starts = [np.zeros(len(w.input_ids)) for w in windows]
    ends = [np.zeros(len(w.input_ids)) for w in windows]
    last = windows[-1]
    starts[-1][last.start], ends[-1][last.end] = 3.0, 3.0
    starts[0][windows[0].passage[0]] = 2.0  # a weaker span in the first window
    choice = decode_example(windows, starts, ends)
    assert choice.window == len(windows) - 1 and context[choice.start_char: choice.end_char] == "in the red box"
