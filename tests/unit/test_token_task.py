"""The token (NER) task on a tiny random BERT: -100 targets, the loss over first pieces only, reading a
word's tag at its first piece, entity figures, typed-text spans, and one loop that learns a toy tagging."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from vizcore.finetune.entities import entity_scores
from vizcore.finetune.tasks import get_task, pad_id_of
from vizcore.finetune.token_figures import (
    TYPE_COLOURS,
    alignment_html,
    entity_html,
    legend_html,
    type_colours,
    type_scores_chart,
)
from vizcore.finetune.token_task import (
    TOKEN,
    TokenTagger,
    TokenTask,
    encode_sentences,
    example_records,
    predict_entities,
    token_scores,
    word_probabilities,
)
from vizcore.finetune.tokens import IGNORE, TaggedData, TaggedSentences, alignment_table, tagged_sentences
from vizcore.finetune.training import task_config, train_task
from vizcore.model.loading import load_model

NAMES = ("O", "B-LOC", "I-LOC", "B-PER", "I-PER")


@pytest.fixture(scope="module")
def tiny(tiny_bert_dir):
    return load_model(str(tiny_bert_dir), device="cpu")


def tagger(tiny, bias: list[float] | None = None) -> TokenTagger:
    """A tagger on the tiny encoder; with ``bias`` its head ignores the input and always prefers that tag."""
    torch.manual_seed(0)
    model = TokenTagger(tiny.model, len(NAMES)).eval()
    if bias is not None:
        with torch.no_grad():
            model.head.weight.zero_()
            model.head.bias.copy_(torch.tensor(bias))
    return model


def sentences(rows: list[list[tuple[str, str]]]) -> TaggedSentences:
    return tagged_sentences([([w for w, _ in r], [t for _, t in r]) for r in rows], "toy", NAMES)


def test_registered_with_its_defaults():
    task = get_task("token")
    assert task is TOKEN and isinstance(task, TokenTask) and task.metric == "entity_f1"
    config = task_config(task)
    assert config.max_length == 128 and config.epochs == 5


def test_features_label_first_pieces_and_the_batch_pads_with_minus_100(tiny):
    data = sentences([[("Kowalczykowa", "B-PER"), ("visited", "O")], [("Leeds", "B-LOC")]])
    features = TOKEN.encode(tiny.tokenizer, data, 64)
    pieces = tiny.tokenizer.tokenize("Kowalczykowa")
    assert len(pieces) > 1  # the example needs a word of several pieces
    assert features[0]["labels"] == [IGNORE, 3, *[IGNORE] * (len(pieces) - 1), 0, IGNORE]
    batch = TOKEN.collate(features, pad_id_of(tiny.tokenizer), tiny.device, tiny.model)
    width = batch.inputs["input_ids"].shape[1]
    assert batch.targets.shape == (2, width) and width == len(features[0]["ids"])
    assert batch.targets[1].tolist() == [IGNORE, 1, IGNORE] + [IGNORE] * (width - 3)
    assert batch.inputs["attention_mask"][1].tolist() == [1, 1, 1] + [0] * (width - 3)


def test_loss_counts_only_the_labelled_pieces():
    torch.manual_seed(0)
    logits = torch.randn(2, 5, 4)
    targets = torch.tensor([[IGNORE, 1, IGNORE, 3, IGNORE], [IGNORE, 0, IGNORE, IGNORE, IGNORE]])
    picked = [(0, 1, 1), (0, 3, 3), (1, 1, 0)]
    expected = -sum(torch.log_softmax(logits[b, t], -1)[y] for b, t, y in picked) / len(picked)
    assert TOKEN.loss(logits, targets).item() == pytest.approx(expected.item(), rel=1e-6)
    changed = logits.clone()
    changed[0, 2] += 100.0  # an ignored piece
    assert TOKEN.loss(changed, targets).item() == pytest.approx(expected.item(), rel=1e-6)
    right = torch.zeros(2, 5, 4)
    right[0, 1, 1] = right[0, 3, 2] = right[1, 1, 0] = 5.0  # two of the three labelled pieces right
    assert TOKEN.batch_score(right, targets) == pytest.approx(2 / 3)


def test_a_words_prediction_is_read_at_its_first_piece(tiny):
    model = tagger(tiny)
    words = ["Anna", "Kowalski", "visited", "Stratford-upon-Avon"]
    probs = word_probabilities(model, tiny.tokenizer, [words], 64)[0]
    # independent: the first piece of word i sits after [CLS] and the pieces of the words before it
    counts = [len(tiny.tokenizer.tokenize(w)) for w in words]
    positions = [1 + sum(counts[:i]) for i in range(len(words))]
    ids = tiny.tokenizer(" ".join(words), return_tensors="pt")
    with torch.no_grad():
        logits = model({"input_ids": ids["input_ids"], "attention_mask": ids["attention_mask"],
                        "token_type_ids": ids["token_type_ids"]})[0]
    expected = torch.softmax(logits[positions], -1).numpy()
    np.testing.assert_allclose(probs, expected, atol=1e-5)


def test_words_cut_off_by_truncation_are_predicted_o(tiny):
    words = ["word"] * 12
    probs = word_probabilities(tagger(tiny, [0, 0, 0, 9, 0]), tiny.tokenizer, [words], max_length=8)[0]
    assert probs.shape == (12, len(NAMES))
    assert probs[:6, 3].min() > 0.9  # 6 words fit between [CLS] and [SEP]
    assert (probs[6:, 0] == 1.0).all()
    ids, word_ids = encode_sentences(tiny.tokenizer, [words], 8)
    assert len(ids[0]) == 8 and word_ids[0][-1] is None


def test_token_scores_by_hand():
    gold = sentences([[("Anna", "B-PER"), ("Smith", "I-PER"), ("in", "O"), ("Leeds", "B-LOC")],
                      [("York", "B-LOC"), ("rain", "O")]])
    predicted = [["B-PER", "I-PER", "O", "O"], ["B-LOC", "B-LOC"]]
    scores = token_scores(gold, predicted)
    # gold: PER, LOC | LOC -> 3; predicted: PER | LOC, LOC -> 3; right: PER, York -> 2
    assert scores["precision"] == pytest.approx(2 / 3) and scores["recall"] == pytest.approx(2 / 3)
    assert scores["entity_f1"] == pytest.approx(2 / 3)
    assert scores["f1_PER"] == 1.0 and scores["f1_LOC"] == pytest.approx(0.5)  # LOC: P 1/2, R 1/2
    assert scores["token_accuracy"] == pytest.approx(4 / 6)


def test_an_all_o_model_is_the_majority_baseline(tiny):
    data = sentences([[("Anna", "B-PER"), ("went", "O"), ("to", "O"), ("Leeds", "B-LOC")]])
    scores = TOKEN.evaluate(tagger(tiny, [9, 0, 0, 0, 0]), tiny.tokenizer, data, 64)
    assert (scores["entity_f1"], scores["precision"], scores["recall"]) == (0.0, 0.0, 0.0)
    assert scores["token_accuracy"] == pytest.approx(0.5)


def test_typed_text_becomes_character_spans(tiny):
    text = "Anna met Dr. Kowalski's cat."
    words, tags, found = predict_entities(tagger(tiny, [0, 0, 0, 9, 0]), tiny.tokenizer, text, NAMES, 64)
    assert words == ["Anna", "met", "Dr.", "Kowalski", "'s", "cat", "."]
    assert tags == ["B-PER"] * 7  # every word starts its own PER entity
    starts = [0, 5, 9, 13, 21, 24, 27]
    assert [(f.text, f.start, f.end) for f in found] == [(w, s, s + len(w)) for w, s in zip(words, starts)]
    assert all(f.kind == "PER" and f.confidence > 0.9 for f in found)
    assert predict_entities(tagger(tiny), tiny.tokenizer, "  ", NAMES, 64) == ([], [], [])


def toy_data() -> TaggedData:
    """Names always PER, cities always LOC: learnable from the word alone."""
    rng = np.random.default_rng(0)
    people, places, others = ["anna", "tom", "mira"], ["leeds", "paris", "oslo"], ["saw", "the", "a", "big", "dog"]
    rows = []
    for _ in range(60):
        row = [(str(rng.choice(others)), "O") for _ in range(3)]
        row.insert(int(rng.integers(0, 4)), (str(rng.choice(people)), "B-PER"))
        row.insert(int(rng.integers(0, 5)), (str(rng.choice(places)), "B-LOC"))
        rows.append(row)
    data = sentences(rows)
    return TaggedData(data.subset(range(48)), data.subset(range(48, 60)), "toy", "the last 12")


def test_one_loop_learns_a_toy_tagging(tiny):
    config = task_config(TOKEN, mode="head", lr=5e-2, epochs=8, batch_size=8, seed=0)
    result = train_task(tiny, TOKEN, toy_data(), config)
    first, last = result.history.evals[0], result.history.evals[-1]
    assert last["entity_f1"] >= 0.9 > first["entity_f1"]
    assert last["score"] == last["entity_f1"] and {"f1_PER", "f1_LOC", "token_accuracy"} <= set(last)
    assert result.label_names == NAMES and isinstance(result.model.head, nn.Linear)


def test_held_out_records_give_each_sentences_gold_and_predicted_tags(tiny):
    data = sentences([[("Anna", "B-PER"), ("went", "O"), ("to", "O"), ("Leeds", "B-LOC")],
                      [("Tom", "B-PER"), ("slept", "O")]])
    records = TOKEN.held_out_records(tagger(tiny, [0, 9, 0, 0, 0]), tiny.tokenizer, data, 64)  # always NAMES[1]
    assert [r["words"] for r in records] == [list(w) for w in data.words]
    assert [r["gold_tags"] for r in records] == [["B-PER", "O", "O", "B-LOC"], ["B-PER", "O"]]
    assert [r["predicted_tags"] for r in records] == [[NAMES[1]] * 4, [NAMES[1]] * 2]
    # Anna (PER) missed; Anna, went, to as LOC wrong; Leeds right
    assert records[0]["gold"] == "Anna (PER), Leeds (LOC)" and records[0]["mistakes"] == 4


def test_example_records_list_missed_and_wrong_entities():
    gold = sentences([[("Anna", "B-PER"), ("Smith", "I-PER"), ("in", "O"), ("Leeds", "B-LOC"), (".", "O")]])
    rows = example_records(gold, [["B-PER", "O", "O", "B-LOC", "O"]])
    assert rows == [{"sentence": "Anna Smith in Leeds.", "gold": "Anna Smith (PER), Leeds (LOC)",
                     "predicted": "Anna (PER), Leeds (LOC)", "missed": "Anna Smith (PER)", "wrong": "Anna (PER)",
                     "mistakes": 2}]


def test_span_html_escapes_the_text_and_marks_each_entity():
    text = "<b>Ada</b> & Babbage"
    page = entity_html(text, [(3, 6, "PER"), (13, 20, "PER")], type_colours(["PER"]))
    assert "<b>" not in page and "&lt;b&gt;" in page and "&amp;" in page
    assert page.count("<mark") == 2 and ">Ada<span" in page and ">Babbage<span" in page
    assert TYPE_COLOURS["PER"] in page and "PER" in legend_html(type_colours(["PER", "DATE"]))
    assert set(type_colours(["PER", "DATE", "X"]).values()) >= {TYPE_COLOURS["PER"]}


def test_alignment_html_shows_minus_100_under_every_unlabelled_piece(tiny):
    words, tags = ["Kowalczykowa", "visited", "Leeds"], ["B-PER", "O", "B-LOC"]
    table = alignment_table(tiny.tokenizer, words, tags, NAMES, 64)
    page = alignment_html(table, type_colours(["PER", "LOC"]))
    assert page.count(">-100<") == int((table["label id"] == IGNORE).sum()) == len(table) - 3
    assert ">B-PER<" in page and ">B-LOC<" in page and "[CLS]" in page


def test_score_chart_bars_are_the_scores():
    scores = entity_scores([["B-PER", "O", "B-LOC"]], [["B-PER", "O", "O"]])
    fig = type_scores_chart(scores)
    assert [trace.name for trace in fig.data] == ["precision", "recall", "F1"]
    assert list(fig.data[2].x) == ["LOC", "PER", "all (micro)"]
    assert list(fig.data[2].y) == [0.0, 1.0, pytest.approx(2 / 3)]
