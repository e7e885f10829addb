"""The QA task on a tiny random BERT: the span head, loss, batch score, evaluation against an independent
window-by-window computation, training through the one loop, and the figures."""

from __future__ import annotations

import html

import numpy as np
import pytest
import torch

from tests.unit.test_finetune_qa import official_f1, official_normalize
from vizcore.errors import VizError
from vizcore.finetune.qa import Answer, QAData, QAExample, QASet, builtin_qa
from vizcore.finetune.qa_figures import (
    GOLD_STYLE,
    PREDICTED_STYLE,
    VISIBLE_TOKENS,
    highlighted_passage,
    probability_table,
    span_probability_bars,
)
from vizcore.finetune.qa_predict import QAReading, answer_question, read_example
from vizcore.finetune.qa_spans import DOC_STRIDE, encode_features
from vizcore.finetune.qa_task import MASKED, QA, SpanModel
from vizcore.finetune.tasks import TASKS, get_task, pad_id_of
from vizcore.finetune.training import task_config, train_task
from vizcore.model.loading import load_model

MAX = 64  # the tiny model's position table


@pytest.fixture(scope="module")
def tiny(tiny_bert_dir):
    return load_model(str(tiny_bert_dir), device="cpu")


@pytest.fixture(scope="module")
def model(tiny):
    torch.manual_seed(0)
    return SpanModel(tiny.model).eval()  # reads the shared tiny encoder; nothing here trains it


def toy_set(count: int, offset: int = 0) -> QASet:
    """Questions whose answer is the colour named after 'painted': learnable by a tiny model."""
    colours = ["red", "blue", "green", "yellow", "black", "white", "pink", "brown"]
    examples = []
    for i in range(offset, offset + count):
        colour = colours[i % len(colours)]
        context = f"The house number {i} stands on a hill. It was painted {colour} last year."
        examples.append(QAExample(f"t{i}", "", context, "What colour was the house painted?",
                                  (Answer(colour, context.index(f"painted {colour}") + 8),)))
    return QASet(tuple(examples))


def test_the_task_is_registered_with_its_metric_and_defaults():
    assert get_task("qa") is QA and TASKS["qa"] is QA
    assert (QA.metric, QA.metric_label, QA.extra_metrics) == ("token_f1", "token F1", {"exact_match": "exact match"})
    config = task_config(QA, mode="full")
    assert (config.max_length, config.epochs, config.batch_size, config.learning_rate) == (384, 4, 8, 3e-4)


def test_the_head_gives_start_and_end_logits_and_masks_padding(tiny, model):
    short = QAExample("s", "", "It is red.", "What colour?", (Answer("red", 6),))
    features = encode_features(tiny.tokenizer, [*toy_set(2).examples, short], MAX)
    batch = QA.collate(features, pad_id_of(tiny.tokenizer), tiny.device, model.encoder)
    with torch.no_grad():
        start, end = model(batch.inputs)
        hidden = tiny.model(**batch.inputs).last_hidden_state  # (B, T, H)
    expected = hidden @ model.head.weight.T + model.head.bias  # (B, T, 2)
    allowed = torch.zeros_like(start, dtype=torch.bool)  # [CLS] and the passage, nothing else
    for row, feature in enumerate(features):
        allowed[row, 0] = True
        allowed[row, feature.passage[0]: feature.passage[1] + 1] = True
    assert torch.allclose(start[allowed], expected[..., 0][allowed], atol=1e-6)
    assert torch.allclose(end[allowed], expected[..., 1][allowed], atol=1e-6)
    assert (start[~allowed] == MASKED).all() and (end[~allowed] == MASKED).all()
    assert not allowed[2, len(features[2].input_ids):].any()  # padding
    assert not allowed[0, 1: features[0].passage[0]].any()  # the question and its [SEP]
    assert batch.inputs["token_type_ids"][0, : len(features[0].segments)].tolist() == list(features[0].segments)
    assert batch.targets[0].tolist() == [f.start for f in features]


def test_loss_is_the_mean_of_two_cross_entropies_and_the_batch_score_counts_whole_spans():
    rng = np.random.default_rng(0)
    start, end = rng.normal(size=(4, 7)), rng.normal(size=(4, 7))
    start_at, end_at = np.array([1, 2, 3, 4]), np.array([1, 5, 3, 6])

    def log_softmax(x):
        return x - np.log(np.exp(x).sum(1, keepdims=True))

    rows = np.arange(4)
    expected = -(log_softmax(start)[rows, start_at].mean() + log_softmax(end)[rows, end_at].mean()) / 2
    outputs = (torch.tensor(start), torch.tensor(end))
    targets = (torch.tensor(start_at), torch.tensor(end_at))
    assert float(QA.loss(outputs, targets)) == pytest.approx(expected)
    start[0, 1] = end[0, 1] = start[1, 2] = 50.0  # example 0 wholly right; example 1 only its start
    outputs = (torch.tensor(start), torch.tensor(end))
    right = [(start[i].argmax() == start_at[i]) and (end[i].argmax() == end_at[i]) for i in rows]
    assert QA.batch_score(outputs, targets) == pytest.approx(np.mean(right)) and right[0] and not right[1]


def independent_answer(model, tokenizer, example: QAExample, max_length: int) -> str:
    """Each window run alone (no padding, no batching), every (start, end) pair tried in a Python loop."""
    best = (-np.inf, "")
    for window in encode_features(tokenizer, [example], max_length, stride=DOC_STRIDE):
        ids = torch.tensor([window.input_ids])
        inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids),
                  "token_type_ids": torch.tensor([window.segments])}
        with torch.no_grad():
            start, end = (t[0].numpy() for t in model(inputs))
        first, last = window.passage
        for i in range(first, last + 1):
            for j in range(i, min(last, i + 29) + 1):
                if start[i] + end[j] > best[0]:
                    best = (start[i] + end[j], example.context[window.offsets[i][0]: window.offsets[j][1]])
    return best[1]


def test_evaluate_equals_an_independent_window_by_window_computation(tiny, model):
    examples = builtin_qa().test.examples[:12]  # ~150 tokens each: several 64-token windows per passage
    scores = QA.evaluate(model, tiny.tokenizer, QASet(examples), MAX)
    answers = [independent_answer(model, tiny.tokenizer, e, MAX) for e in examples]
    golds = [e.answers[0].text for e in examples]
    assert scores["token_f1"] == pytest.approx(np.mean([official_f1(a, g) for a, g in zip(answers, golds)]))
    assert scores["exact_match"] == pytest.approx(np.mean([official_normalize(a) == official_normalize(g)
                                                           for a, g in zip(answers, golds)]))


@pytest.mark.parametrize("mode", ["head", "full"])
def test_the_one_loop_trains_the_span_head(tiny, mode):
    data = QAData(toy_set(48), toy_set(16, offset=48), "toy", "toy split")
    config = task_config(QA, mode=mode, epochs=4, batch_size=8, max_length=MAX, lr=3e-3 if mode == "head" else 2e-3)
    result = train_task(tiny, QA, data, config)
    losses = [row["loss"] for row in result.history.steps]
    assert [e["step"] for e in result.history.evals] == [0, 6, 12, 18, 24]
    assert np.mean(losses[-6:]) < np.mean(losses[:6])
    assert set(result.scores) == {"token_f1", "exact_match"}
    assert result.scores["token_f1"] == result.final_score > result.history.evals[0]["token_f1"]
    assert result.label_names == ()


def test_held_out_records_agree_with_the_held_out_figures(tiny, model):
    split = QASet(builtin_qa().test.examples[:6])
    records = QA.held_out_records(model, tiny.tokenizer, split, MAX)
    scores = QA.evaluate(model, tiny.tokenizer, split, MAX)
    assert [r["id"] for r in records] == [e.id for e in split.examples]
    assert [r["gold"] for r in records] == [[a.text for a in e.answers] for e in split.examples]
    for record, example in zip(records, split.examples):
        assert record["predicted"] in example.context
        best = max(official_f1(record["predicted"], a.text) for a in example.answers)
        assert record["token_f1"] == pytest.approx(best)
    assert np.mean([r["token_f1"] for r in records]) == pytest.approx(scores["token_f1"])
    assert np.mean([r["exact_match"] for r in records]) == pytest.approx(scores["exact_match"])


def reading(tokens: int = 120, start: int = 80, end: int = 82, gold: tuple[int, int] | None = (81, 83)) -> QAReading:
    """A made-up reading of a passage "w0 w1 ... w{tokens-1}", one token per word."""
    words = [f"w{i}" for i in range(tokens)]
    starts = np.cumsum([0] + [len(w) + 1 for w in words[:-1]])
    offsets = tuple((int(a), int(a) + len(w)) for a, w in zip(starts, words))
    probs = np.full(tokens, 0.5 / (tokens - 1))
    probs[start] = 0.5
    gold_chars = None if gold is None else (offsets[gold[0]][0], offsets[gold[1]][1])
    return QAReading(" ".join(words), "Which <b>word</b>?", tuple(words), offsets, probs, np.roll(probs, end - start),
                     start, end, (offsets[start][0], offsets[end][1]), gold, gold_chars, 1)


def test_the_bars_show_both_probabilities_per_token_and_open_around_the_answer():
    shown = reading()
    fig = span_probability_bars(shown)
    rows = {"x": [], "x2": []}
    for trace in fig.data:
        rows[trace.xaxis].append(trace)
    for axis, probs in (("x", shown.start_probs), ("x2", shown.end_probs)):
        values = {int(x): y for trace in rows[axis] for x, y in zip(trace.x, trace.y)}
        assert np.allclose([values[i] for i in range(120)], probs)
    roles = {trace.name: list(trace.x) for trace in rows["x"]}
    assert roles["predicted answer"] == [80] and roles["predicted and gold"] == [81, 82]
    assert roles["gold answer"] == [83]
    low, high = fig.layout.xaxis2.range
    assert high - low == VISIBLE_TOKENS and low < 80 and high > 83
    assert fig.layout.xaxis2.rangeslider.visible
    predicted = next(trace for trace in rows["x"] if trace.name == "predicted answer")
    assert predicted.customdata.tolist() == [["w80"]] and "p(start)" in predicted.hovertemplate
    assert fig.layout.yaxis.range == fig.layout.yaxis2.range == (0, 0.55)  # 1.1 x the largest probability


def test_when_prediction_and_gold_are_far_apart_the_view_opens_on_the_prediction():
    low, high = span_probability_bars(reading(start=100, end=101, gold=(5, 6))).layout.xaxis2.range
    assert low <= 100 and 101 <= high and low > 6


def test_without_a_gold_answer_only_the_prediction_is_marked():
    shown = reading(tokens=10, start=2, end=3, gold=None)
    assert probability_table(shown)["role"].tolist() == ["other"] * 2 + ["predicted"] * 2 + ["other"] * 6
    assert "gold answer" not in highlighted_passage(shown)
    fig = span_probability_bars(shown)
    assert {t.name for t in fig.data} == {"predicted answer", "rest of the passage"}
    assert not fig.layout.xaxis2.rangeslider.visible  # 10 tokens fit: no slider


def test_the_highlighted_passage_marks_both_spans_and_escapes_text():
    shown = reading(tokens=12, start=3, end=5, gold=(4, 6))
    page = highlighted_passage(shown)
    assert f"<span style='{PREDICTED_STYLE}'>w3 </span>" in page
    assert f"<span style='{PREDICTED_STYLE};{GOLD_STYLE}'>w4 w5</span>" in page
    assert f"<span style='{GOLD_STYLE}'> w6</span>" in page
    assert html.escape("Which <b>word</b>?") in page and "<b>word</b>" not in page
    assert "predicted answer" in page and "gold answer" in page


def test_reading_an_example_and_your_own_question(tiny, model):
    example = builtin_qa().test.examples[0]
    shown = read_example(model, tiny.tokenizer, example, MAX)
    assert shown.windows > 1 and shown.start_probs.sum() == pytest.approx(1.0)
    spans = [(i, j) for i in range(len(shown.tokens)) for j in range(i, min(i + 30, len(shown.tokens)))]
    assert (shown.start, shown.end) == max(spans, key=lambda s: shown.start_probs[s[0]] * shown.end_probs[s[1]])
    assert shown.answer == example.context[slice(*shown.answer_chars)]
    yours = answer_question(model, tiny.tokenizer, "The cat sat on the mat.", "Where did the cat sit?", MAX,
                            gold="on the mat")
    assert yours.gold_chars == (12, 22) and len(yours.tokens) == 7
    assert yours.probability == pytest.approx(yours.start_probs[yours.start] * yours.end_probs[yours.end])
    with pytest.raises(VizError, match="Type a passage and a question"):
        answer_question(model, tiny.tokenizer, "  ", "Why?", MAX)
