"""Head ablation equals weight surgery on a copy of the model; no ablation is the plain answer, bit for bit."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from vizcore.errors import VizError
from vizcore.mlm.fill_mask import fill_mask
from vizcore.model import arch as archs
from vizcore.model.loading import load_model
from vizcore.model.run import Capture, run
from vizcore.plot import shown_labels
from vizcore.why.ablation import ablate_mlm, format_heads, head_means, parse_heads
from vizcore.why.targets import word_id

TEXT = "The cat sat on the [MASK] because it was tired."
REFERENCE = ("A dog ran in the park.", "She reads a book every night.", "The sun is warm today.")


@pytest.fixture(scope="module", params=["bert", "distilbert", "roberta"])
def loaded(request, tiny_mlm_dir):
    return load_model(str(tiny_mlm_dir(request.param)), device="cpu", head="mlm")


def text_for(loaded) -> str:
    return TEXT.replace("[MASK]", loaded.tokenizer.mask_token)


def surgery(loaded, heads, means=None) -> torch.nn.Module:
    """A copy whose W_O ignores the heads' slices (zero), plus W_O @ mean in the bias (mean ablation)."""
    model = copy.deepcopy(loaded.model)
    arch = archs.arch_of(model)
    d_head = model.config.hidden_size // loaded.num_heads if hasattr(model.config, "hidden_size") else \
        model.config.dim // loaded.num_heads
    for layer, head in heads:
        out = archs.get(archs.blocks(model)[layer], arch.stacks[arch.main_stack].self_attention.out)
        cut = slice(head * d_head, (head + 1) * d_head)
        with torch.no_grad():
            if means is not None:
                out.bias += out.weight[:, cut] @ torch.as_tensor(means[layer, head])
            out.weight[:, cut] = 0.0
    return model


def surgery_probabilities(loaded, heads, means=None) -> np.ndarray:
    encoding = loaded.tokenizer(text_for(loaded), return_tensors="pt")
    mask = int((encoding["input_ids"][0] == loaded.tokenizer.mask_token_id).nonzero()[0])
    with torch.no_grad():
        logits = surgery(loaded, heads, means)(**encoding).logits[0, mask]
    return logits.softmax(-1).numpy()


@pytest.mark.parametrize("heads", [[(0, 1)], [(1, 0), (1, 3)], [(0, 0), (2, 2), (2, 3)]])
def test_zero_ablation_equals_zeroing_the_heads_columns_of_w_o(loaded, heads):
    result = ablate_mlm(loaded, text_for(loaded), heads, top_k=8, word="the")
    expected = surgery_probabilities(loaded, heads)
    ablated = result.masks[0].ablated
    assert [p.token_id for p in ablated] == list(np.argsort(-expected)[:8])
    np.testing.assert_allclose([p.score for p in ablated], np.sort(expected)[::-1][:8], atol=1e-5)
    assert result.masks[0].word_after == pytest.approx(float(expected[word_id(loaded, "the")]), abs=1e-5)


def test_mean_ablation_equals_moving_the_heads_mean_into_the_bias(loaded):
    means = head_means(loaded, REFERENCE)
    heads = [(0, 2), (2, 1)]
    result = ablate_mlm(loaded, text_for(loaded), heads, mode="mean", top_k=5, means=means)
    expected = surgery_probabilities(loaded, heads, means)
    np.testing.assert_allclose([p.score for p in result.masks[0].ablated], np.sort(expected)[::-1][:5], atol=1e-5)


def test_head_means_are_the_mean_of_every_real_tokens_head_output(loaded):
    outputs = [run(loaded, s, capture=Capture(hidden=False, head_outputs=True)).head_outputs for s in REFERENCE]
    expected = np.concatenate(outputs, axis=2).mean(axis=2)  # [L, H, T, d] -> [L, H, d]
    np.testing.assert_allclose(head_means(loaded, REFERENCE, batch_size=2), expected, atol=1e-5)


def test_no_ablation_is_the_fill_mask_answer_bit_for_bit(loaded):
    plain = fill_mask(loaded, text_for(loaded), top_k=10)
    result = ablate_mlm(loaded, text_for(loaded), [], top_k=10)
    for mask, effect in zip(plain.masks, result.masks):
        assert [(p.token_id, p.score) for p in mask.predictions] == [(p.token_id, p.score) for p in effect.ablated]
        assert [(p.token_id, p.score) for p in mask.predictions] == [(p.token_id, p.score) for p in effect.baseline]
    assert np.array_equal(result.attention_before, result.attention_after)
    assert not result.attention_change().any()


def test_attention_moves_only_after_the_ablated_layer(loaded):
    change = ablate_mlm(loaded, text_for(loaded), [(1, 0)]).attention_change()  # [L, H]
    assert not change[:2].any()  # layers 1 and 2 (0-based 0, 1) read nothing the ablation changed
    assert (change[2] > 1e-4).all()


def test_heads_are_parsed_one_based_and_checked():
    assert parse_heads("3:5, 4:1,3:5", 6, 12) == [(2, 4), (3, 0)]
    assert format_heads([(2, 4), (3, 0)]) == "3:5,4:1"
    assert parse_heads("", 6, 12) == []
    with pytest.raises(VizError, match="does not exist"):
        parse_heads("7:1", 6, 12)
    with pytest.raises(VizError, match="not a head"):
        parse_heads("3-5", 6, 12)


def test_bad_requests_get_clear_messages(loaded):
    with pytest.raises(VizError, match="no mask"):
        ablate_mlm(loaded, "No mask here.", [(0, 0)])
    with pytest.raises(VizError, match="zero or mean"):
        ablate_mlm(loaded, text_for(loaded), [(0, 0)], mode="half")
    with pytest.raises(VizError, match="does not exist"):
        ablate_mlm(loaded, text_for(loaded), [(0, 9)])


def test_a_classifiers_heads_are_ablated_in_its_own_encoder(tiny_model_dir):
    from vizcore.finetune.analysis import finetuned_model
    from vizcore.finetune.classify import SequenceClassifier
    from vizcore.why.ablation import ablate_classifier

    base = load_model(str(tiny_model_dir("bert")), device="cpu")
    torch.manual_seed(3)
    classifier = SequenceClassifier(copy.deepcopy(base.model), num_labels=3).eval()
    encoder = finetuned_model(base, type("Result", (), {"classifier": classifier})())
    text, heads = "A fine day for a walk.", [(0, 1), (1, 3)]
    effect = ablate_classifier(classifier, encoder, ("neg", "neu", "pos"), text, 32, heads)
    batch = base.tokenizer([text], return_tensors="pt")
    with torch.no_grad():
        plain = classifier(dict(batch)).softmax(-1)[0].numpy()
        operated = SequenceClassifier(surgery(base, heads), num_labels=3).eval()
        operated.head.load_state_dict(classifier.head.state_dict())
        expected = operated(dict(batch)).softmax(-1)[0].numpy()
    np.testing.assert_allclose(effect.before, plain, atol=1e-6)
    np.testing.assert_allclose(effect.after, expected, atol=1e-5)
    assert np.abs(effect.after - effect.before).max() > 1e-4  # the heads mattered: the test can tell
    assert effect.labels == ("neg", "neu", "pos")


def test_the_bars_legend_sits_at_the_foot_of_the_figure_under_the_axis_title():
    """At 1024 x 768 a legend placed at a share of the plot's height below it was drawn over the axis title (8 words)
    or the tick labels (1 word), measured in Chromium; at the figure's foot plotly keeps the axis clear of it."""
    from vizcore.why.figures import before_after_bars

    for words in (1, 8, 15):
        compared = [(f"w{i}", 0.08 - i * 0.005, 0.07) for i in range(words)]
        legend = before_after_bars(compared, "The masked word").layout.legend
        assert (legend.yref, legend.y, legend.yanchor, legend.orientation) == ("container", 0, "bottom", "h")


def test_the_head_with_and_without_the_heads_off_is_one_figure_of_two_maps_and_one_colour_bar():
    """Two figures in two columns left each map about 60 px wide at 1024 x 768 (seen in Chromium): one figure with
    one column of query labels and one colour bar leaves each map about 200 px."""
    from vizcore.why.figures import attention_before_after

    tokens = ["[CLS]", "the", "cat", "[MASK]", ".", "[SEP]"]
    before, after = np.eye(6, dtype=np.float32), np.full((6, 6), 1 / 6, dtype=np.float32)
    fig = attention_before_after(before, after, tokens, "Layer 2, head 3")
    maps = [trace for trace in fig.data if trace.type == "heatmap"]
    assert len(maps) == 2 and [bool(m.showscale) for m in maps] == [False, True]
    assert np.array_equal(maps[0].z, before) and np.array_equal(maps[1].z, after)
    assert (maps[0].zmin, maps[0].zmax) == (maps[1].zmin, maps[1].zmax) == (0.0, 1.0)  # one scale for both
    assert fig.layout.xaxis.title.text == "key · every head" and fig.layout.xaxis2.title.text == "key · heads off"
    assert fig.layout.yaxis2.matches == "y" and shown_labels(fig, "yaxis")[2] == "cat"
