"""Next sentence prediction on a tiny random BertForPreTraining: P(IsNext) is the softmax of the model's
own seq_relationship logits; [CLS]'s attention shares are its attention row summed over A, B and the
special tokens; the pair's checks; the NSP figures show those numbers."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from transformers import BertConfig, BertForPreTraining

from tests.support.tiny import TINY, wordpiece_tokenizer
from vizcore.errors import VizError
from vizcore.mlm.figures import cls_attention_bars, cls_share_heatmaps, cls_share_table, examples_table, is_next_gauge
from vizcore.mlm.nsp import EXAMPLES, check_pair, next_sentence
from vizcore.model.loading import load_model

PAIRS = [EXAMPLES[0][:2], EXAMPLES[1][:2], ("Short.", "A much longer second sentence, with a comma and more words.")]


@pytest.fixture(scope="module")
def pretraining(tmp_path_factory):
    """A tiny BERT with both pre-training heads, drawn with a wide init so P(IsNext) is far from 0.5."""
    torch.manual_seed(0)
    tokenizer = wordpiece_tokenizer()
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=TINY["hidden"], num_hidden_layers=3,
                        num_attention_heads=TINY["heads"], intermediate_size=TINY["ffn"],
                        max_position_embeddings=TINY["positions"], initializer_range=0.5)
    folder = tmp_path_factory.mktemp("tiny-pretraining")
    BertForPreTraining(config).eval().save_pretrained(folder)
    tokenizer.model_max_length = TINY["positions"]
    tokenizer.save_pretrained(folder)
    return load_model(str(folder), device="cpu", head="nsp")


@pytest.mark.parametrize(("text", "pair"), PAIRS)
def test_the_probability_is_a_softmax_of_the_models_own_seq_relationship_logits(pretraining, text, pair):
    result = next_sentence(pretraining, text, pair)
    inputs = pretraining.tokenizer(text, pair, return_tensors="pt")
    with torch.no_grad():
        logits = pretraining.model(**inputs).seq_relationship_logits[0].double()
    expected = float(torch.exp(logits[0]) / torch.exp(logits).sum())  # label 0 = IsNext
    assert result.is_next == pytest.approx(expected, abs=1e-6)
    assert result.logits == pytest.approx(logits.tolist(), abs=1e-5)
    assert result.tokens == pretraining.tokenizer.convert_ids_to_tokens(inputs["input_ids"][0].tolist())
    assert result.segments == inputs["token_type_ids"][0].tolist()


def test_probabilities_differ_between_pairs(pretraining):
    """The wide init makes the head's answer depend on the pair (else the softmax test above says little)."""
    values = [next_sentence(pretraining, a, b).is_next for a, b in PAIRS]
    assert max(values) - min(values) > 0.01 and all(abs(v - 0.5) > 0.01 for v in values)


def test_shares_are_the_cls_row_summed_over_a_b_and_specials_and_sum_to_one(pretraining):
    text, pair = PAIRS[2]
    result = next_sentence(pretraining, text, pair)
    inputs = pretraining.tokenizer(text, pair, return_tensors="pt")
    with torch.no_grad():
        attentions = pretraining.model(**inputs, output_attentions=True).attentions
    rows = torch.stack([a[0, :, 0, :] for a in attentions])  # [layer, head, token]
    torch.testing.assert_close(result.cls_attention, rows)
    first_sep = result.tokens.index("[SEP]")
    masks = {"A": [0 < i < first_sep for i in range(len(result.tokens))],
             "B": [first_sep < i < len(result.tokens) - 1 for i in range(len(result.tokens))]}
    masks["special"] = [t in ("[CLS]", "[SEP]") for t in result.tokens]
    assert result.parts == ["special" if masks["special"][i] else "A" if masks["A"][i] else "B"
                            for i in range(len(result.tokens))]
    for part, mask in masks.items():
        torch.testing.assert_close(result.share[part], rows[..., torch.tensor(mask)].sum(-1))
    total = sum(result.share.values())
    assert total.shape == (3, TINY["heads"])
    torch.testing.assert_close(total, torch.ones_like(total))


@pytest.mark.parametrize(("text", "pair", "message"), [
    ("The man went to the store.", None, r"needs a second sentence \(B\)"),
    ("The man went to the store.", "", r"needs a second sentence \(B\)"),
    ("The man went to the store.", "   \n", r"needs a second sentence \(B\)"),
    ("", "He bought a gallon of milk.", "sentence A is empty"),
    ("  ", "He bought a gallon of milk.", "sentence A is empty"),
])
def test_check_pair_says_which_sentence_is_missing(text, pair, message):
    with pytest.raises(VizError, match=message):
        check_pair(text, pair)


def test_a_model_without_the_next_sentence_head_is_refused(tiny_bert_dir):
    with pytest.raises(VizError, match="no next-sentence head"):
        next_sentence(load_model(str(tiny_bert_dir), device="cpu"), *EXAMPLES[0][:2])


def test_to_dict_is_json_with_the_fixed_fields(pretraining):
    result = next_sentence(pretraining, *EXAMPLES[0][:2])
    payload = json.loads(json.dumps(result.to_dict()))
    assert payload["model"] == result.model and payload["is_next"] == result.is_next
    assert payload["not_next"] == pytest.approx(1 - result.is_next)
    assert np.allclose(payload["cls_share"]["B"], result.share["B"].numpy())
    assert len(payload["special"]) == len(payload["tokens"]) == len(payload["segments"])


def test_figures_show_the_results_numbers(pretraining):
    result = next_sentence(pretraining, *PAIRS[2])
    heatmaps = cls_share_heatmaps(result, "shares")
    assert [t.type for t in heatmaps.data] == ["heatmap"] * 3
    for trace, part in zip(heatmaps.data, ("A", "B", "special")):
        np.testing.assert_allclose(trace.z, result.share[part].numpy())
    colorbar = heatmaps.layout.coloraxis.colorbar
    assert "share" in colorbar.title.text and (heatmaps.layout.coloraxis.cmin, heatmaps.layout.coloraxis.cmax) == (0, 1)
    assert "%{z:.1%}" in heatmaps.data[0].hovertemplate
    bars = cls_attention_bars(result, 2, 1, "one head")
    shown = np.zeros(len(result.tokens))
    order = list(bars.layout.xaxis.categoryarray)  # the tokens as categories, in reading order
    for trace in bars.data:
        shown[[order.index(x) for x in trace.x]] = trace.y
    np.testing.assert_allclose(shown, result.cls_attention[2, 1].numpy())
    table = cls_share_table(result)
    assert len(table) == 3 * TINY["heads"] * 3 and table["layer"].min() == 1 and table["head"].max() == TINY["heads"]
    assert is_next_gauge(result.is_next, "g").data[0].value == pytest.approx(100 * result.is_next)
    rows = examples_table([("a", "b", "IsNext", 0.7), ("a", "c", "IsNext", 0.2)])
    assert rows["model says"].tolist() == ["IsNext", "NotNext"]


def test_a_pair_longer_than_the_model_reads_is_cut_and_says_so(pretraining):
    short = next_sentence(pretraining, *EXAMPLES[0][:2])
    assert not short.truncated and short.truncation_note is None
    long_b = " ".join(["the cat sat on the mat"] * 40)
    result = next_sentence(pretraining, EXAMPLES[0][0], long_b)
    assert result.truncated and len(result.tokens) == pretraining.max_length
    assert result.num_input_tokens > pretraining.max_length
    assert f"{result.num_input_tokens:,} tokens" in result.truncation_note
    assert result.to_dict()["truncated"] is True


def test_the_gauges_number_is_fitted_to_the_gauge_on_a_screen_and_on_a_projector():
    """A fixed 64 px number (96 px on the projector) was wider than the gauge in the NSP section's narrow column at
    1024 x 768, drawn over the arc ("98.2 %" cut by it, measured in Chromium); with no size plotly fits the number
    inside the arc, and the projector's floor of 20 px must not pin it small."""
    from vizcore.plot import for_projector

    for figure in (is_next_gauge(0.982, "g"), for_projector(is_next_gauge(0.982, "g"))):
        number = figure.data[0].number
        assert number.font.size is None and number.font.color == "#009e73" and number.suffix == " %"


def test_the_gauges_end_labels_are_inside_the_figure():
    """The arc filled the figure's width and its end labels, drawn outside it, were cut ("100 %" at the right edge,
    on the laptop and on the projector, seen in Chromium at 1024 x 768): the arc keeps a margin on both sides and its
    ticks are plain numbers (the number above them carries the %)."""
    from vizcore.plot import for_projector

    for figure in (is_next_gauge(0.5, "g"), for_projector(is_next_gauge(0.5, "g"))):
        indicator = figure.data[0]
        left, right = indicator.domain.x
        assert left >= 0.05 and right <= 0.95 and not indicator.gauge.axis.ticksuffix
