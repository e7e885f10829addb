"""The task core and sentence-pair classification on a tiny random BERT: the pair encoding with segment
ids, macro-F1, the split of pairs by premise, task defaults, and one loop training a pair task."""

import numpy as np
import pytest
import torch

from vizcore.errors import VizError
from vizcore.finetune import TASK_NAMES
from vizcore.finetune.classify import PAIR, SENTENCE, encode_pairs, macro_f1, predict_proba
from vizcore.finetune.datasets import (
    LabelledTexts,
    TrainTestData,
    builtin_data,
    frame_to_train_test,
    read_csv_bytes,
)
from vizcore.finetune.tasks import collate, get_task, pad_id_of, task_names
from vizcore.finetune.training import FinetuneConfig, task_config, train_task
from vizcore.model.loading import load_model


@pytest.fixture(scope="module")
def tiny(tiny_bert_dir):
    return load_model(str(tiny_bert_dir), device="cpu")


def test_a_pair_is_cls_a_sep_b_sep_with_segment_ids(tiny):
    tok = tiny.tokenizer
    a, b = "the cat sat on the mat", "a dog barked"
    ids, segments = encode_pairs(tok, [a], [b], 64)
    pieces_a, pieces_b = tok.tokenize(a), tok.tokenize(b)
    expected = ["[CLS]", *pieces_a, "[SEP]", *pieces_b, "[SEP]"]
    assert tok.convert_ids_to_tokens(ids[0]) == expected
    assert segments[0] == [0] * (len(pieces_a) + 2) + [1] * (len(pieces_b) + 1)
    single_ids, single_segments = encode_pairs(tok, [a], None, 64)
    assert tok.convert_ids_to_tokens(single_ids[0]) == ["[CLS]", *pieces_a, "[SEP]"] and set(single_segments[0]) == {0}


def test_truncating_a_pair_keeps_both_sentences_and_shortens_the_longer(tiny):
    long_a, b = " ".join(["word"] * 40), "short one"
    ids, segments = encode_pairs(tiny.tokenizer, [long_a], [b], 16)
    assert len(ids[0]) == 16 and segments[0].count(1) == len(tiny.tokenizer.tokenize(b)) + 1


def test_the_batch_carries_the_segment_ids_and_the_model_reads_them(tiny):
    ids, segments = encode_pairs(tiny.tokenizer, ["the cat", "a much longer first sentence"], ["sat", "ok"], 32)
    batch = collate(ids, pad_id_of(tiny.tokenizer), tiny.device, tiny.model, segments)
    assert batch["token_type_ids"][0].tolist()[: len(segments[0])] == segments[0]
    assert batch["token_type_ids"][0, len(segments[0]):].eq(0).all()  # padding
    with torch.no_grad():
        with_types = tiny.model(**batch).last_hidden_state
        zeros = tiny.model(**{**batch, "token_type_ids": torch.zeros_like(batch["token_type_ids"])}).last_hidden_state
    assert not torch.allclose(with_types, zeros)  # segment B's tokens are embedded differently


def test_macro_f1_equals_a_hand_computation_and_sklearn():
    labels = np.array([0, 0, 0, 1, 1, 2])
    predictions = np.array([0, 0, 1, 1, 2, 2])
    # class 0: P 2/2, R 2/3 -> F1 0.8; class 1: P 1/2, R 1/2 -> 0.5; class 2: P 1/2, R 1/1 -> 2/3
    assert macro_f1(labels, predictions, 3) == pytest.approx((0.8 + 0.5 + 2 / 3) / 3)
    sklearn = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(0)
    for _ in range(50):
        y, p = rng.integers(0, 4, 30), rng.integers(0, 4, 30)
        present = sorted(set(y) | set(p))
        assert macro_f1(y, p, 4) == pytest.approx(sklearn.f1_score(y, p, average="macro", labels=present))


def test_the_builtin_pairs_are_balanced_and_held_out_by_premise():
    data = builtin_data("pair")
    assert (len(data.train), len(data.test)) == (384, 96)
    assert data.train.label_names == ("contradiction", "entailment", "neutral")
    assert set(data.train.counts().values()) == {128} and set(data.test.counts().values()) == {32}
    assert not set(data.train.texts) & set(data.test.texts)
    assert all(a and b for a, b in zip(data.test.texts, data.test.second))


def test_an_uploaded_pair_csv_without_split_holds_out_whole_premises():
    rows = ["premise,hypothesis,label"] + [f"premise {i},hypothesis {i}-{j},{'yes' if j else 'no'}"
                                           for i in range(10) for j in range(3)]
    frame = read_csv_bytes("\n".join(rows).encode(), "pairs.csv")
    data = frame_to_train_test(frame, "premise", "label", "pairs.csv", seed=1, second_column="hypothesis")
    assert (len(data.train), len(data.test)) == (24, 6)  # 2 of 10 premises, with their 3 pairs each
    assert not set(data.train.texts) & set(data.test.texts)
    assert "first texts" in data.split_note
    with pytest.raises(VizError, match="no second text column 'B'"):
        frame_to_train_test(frame, "premise", "label", "pairs.csv", second_column="B")
    with pytest.raises(VizError, match="must be different columns"):
        frame_to_train_test(frame, "premise", "label", "pairs.csv", second_column="premise")


def test_task_defaults_fill_what_is_not_set():
    assert task_config(PAIR).max_length == 128 and task_config(SENTENCE).max_length == 64
    assert task_config(PAIR, max_length=40, epochs=None).max_length == 40
    assert task_config(PAIR, epochs=None).epochs == 10 and task_config(SENTENCE).epochs == FinetuneConfig().epochs
    assert task_config(PAIR).learning_rate == 1e-4 and task_config(PAIR, mode="head").learning_rate == 2e-3
    assert task_config(PAIR, lr=3e-5).learning_rate == 3e-5
    assert get_task("pair") is PAIR
    with pytest.raises(VizError, match="Unknown task 'tagging'"):
        get_task("tagging")


def pair_data() -> TrainTestData:
    """One word of each sentiment, one per sentence; label 1 when sentence A holds the good word. Both orders
    contain the same tokens, so only the pair's structure (segments, positions) can decide it."""
    good, bad = ["good", "great", "lovely", "nice", "happy"], ["bad", "awful", "poor", "sad", "ugly"]
    rng = np.random.default_rng(0)

    def split(n):
        first, second, labels = [], [], []
        for _ in range(n):
            g, b, label = str(rng.choice(good)), str(rng.choice(bad)), int(rng.integers(0, 2))
            first.append(g if label else b)
            second.append(b if label else g)
            labels.append(label)
        return LabelledTexts(tuple(first), np.array(labels), ("bad first", "good first"), second=tuple(second))

    return TrainTestData(split(96), split(40), "toy", "toy")


def test_one_loop_trains_a_pair_classifier_and_records_accuracy_and_macro_f1(tiny):
    data = pair_data()
    config = task_config(PAIR, mode="full", epochs=6, batch_size=8, lr=3e-3, max_length=16)
    result = train_task(tiny, PAIR, data, config)
    evals = result.history.evals
    assert [e["step"] for e in evals] == [0, 12, 24, 36, 48, 60, 72]
    assert all(e["score"] == e["accuracy"] and "macro_f1" in e for e in evals)
    probs = predict_proba(result.model, tiny.tokenizer, data.test.texts, 16, second=data.test.second)
    accuracy = float((probs.argmax(1) == data.test.labels).mean())
    assert result.final_score == pytest.approx(accuracy) and result.scores["accuracy"] == pytest.approx(accuracy)
    assert accuracy >= 0.9  # it learned which sentence holds which word
    assert result.task is PAIR and result.label_names == ("bad first", "good first")


def test_head_mode_caches_hidden_states_and_trains_like_the_uncached_model(tiny):
    data = pair_data()
    config = task_config(PAIR, mode="head", epochs=2, batch_size=8, lr=5e-2, max_length=16)
    result = train_task(tiny, PAIR, data, config)
    # The cached path's final held-out accuracy equals a fresh evaluation through the whole model.
    probs = predict_proba(result.model, tiny.tokenizer, data.test.texts, 16, second=data.test.second)
    assert result.final_score == pytest.approx(float((probs.argmax(1) == data.test.labels).mean()))
    assert result.trainable_parameters == result.model.head.weight.numel() + result.model.head.bias.numel()


def test_the_command_lines_task_names_are_the_registered_tasks():
    """The parser names the tasks without importing them (no torch for --help): the names must be theirs."""
    assert task_names() == TASK_NAMES
