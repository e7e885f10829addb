"""Token attribution on tiny random models: each method against an independent recomputation (the model
called directly, a hand-written path integral, explicit shorter inputs, a hand-written rollout loop),
completeness, the classifier's target, the figures, and the attribute command's one-line errors."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import torch

from vizcore import cli
from vizcore.errors import VizError
from vizcore.finetune.training import FinetuneConfig, FinetuneResult, History, new_classifier
from vizcore.model.loading import LoadedModel, load_model
from vizcore.why import attribution as attr
from vizcore.why.figures import attribution_bars, attribution_text, method_correlation_heatmap

TEXT = "The capital of France is [MASK]."


@pytest.fixture(scope="module", params=["bert", "roberta"])
def mlm(request, tiny_mlm_dir) -> LoadedModel:
    return load_model(str(tiny_mlm_dir(request.param)), device="cpu", head="mlm")


@pytest.fixture(scope="module")
def target(mlm) -> attr.Target:
    return attr.answer_target(mlm, TEXT)


# ---- the model called directly, with no vizcore code in between ---------------------------------

def direct_ids(loaded: LoadedModel, text: str = TEXT) -> list[int]:
    return loaded.tokenizer(text.replace("[MASK]", loaded.tokenizer.mask_token))["input_ids"]


def direct_f(loaded: LoadedModel, answer: int, ids: list[int] | None = None,
             embeds: torch.Tensor | None = None) -> torch.Tensor:
    """P(answer) at the mask of ``ids`` (or of the sentence, with word embeddings ``embeds`` (B, T, D)), (B,)."""
    ids = direct_ids(loaded) if ids is None else ids
    mask = ids.index(loaded.tokenizer.mask_token_id)
    if embeds is None:
        logits = loaded.model(input_ids=torch.tensor([ids])).logits
    else:
        mask_ones = torch.ones(embeds.shape[:2], dtype=torch.long)
        logits = loaded.model(inputs_embeds=embeds, attention_mask=mask_ones).logits
    return logits[:, mask].softmax(-1)[:, answer]


def words(loaded: LoadedModel) -> torch.Tensor:
    return loaded.model.get_input_embeddings()(torch.tensor([direct_ids(loaded)])).detach()  # (1, T, D)


def pad_baseline(loaded: LoadedModel) -> torch.Tensor:
    ids = direct_ids(loaded)
    special = set(loaded.tokenizer.all_special_ids)
    ids = [i if i in special else loaded.tokenizer.pad_token_id for i in ids]
    return loaded.model.get_input_embeddings()(torch.tensor([ids])).detach()


# ---- the methods -------------------------------------------------------------------------------

def test_the_default_answer_is_the_top_prediction_and_its_score_is_its_probability(mlm, target):
    ids = direct_ids(mlm)
    with torch.no_grad():
        logits = mlm.model(input_ids=torch.tensor([ids])).logits[0, ids.index(mlm.tokenizer.mask_token_id)]
    assert target.output == int(logits.argmax())
    result = attr.attribute(target, ["rollout"])
    assert result.score == pytest.approx(float(logits.softmax(-1).max()), rel=1e-5)
    assert target.tokens == mlm.tokenizer.convert_ids_to_tokens(ids) and target.mask_index == len(ids) - 3


def test_the_models_own_answer_is_its_arg_max_as_a_word_that_reads_back(mlm):
    from vizcore.why.targets import top_answer, word_id

    ids = direct_ids(mlm)
    with torch.no_grad():
        logits = mlm.model(input_ids=torch.tensor([ids])).logits[0, ids.index(mlm.tokenizer.mask_token_id)]
    best = int(logits.argmax())
    decoded = mlm.tokenizer.decode([best]).strip()
    try:
        reads_back = word_id(mlm, decoded) == best
    except VizError:
        reads_back = False
    assert top_answer(mlm, TEXT) == (decoded if reads_back else None)


def test_grad_x_input_equals_an_independent_autograd_computation(mlm, target):
    embeds = words(mlm).requires_grad_(True)
    (grad,) = torch.autograd.grad(direct_f(mlm, target.output, embeds=embeds).sum(), embeds)
    expected = (grad * embeds).sum(-1)[0].detach().numpy()
    np.testing.assert_allclose(attr.grad_x_input(target), expected, rtol=1e-4, atol=1e-7)
    assert np.abs(expected).max() > 1e-4  # not a test of zeros


def hand_integrated_gradients(loaded: LoadedModel, answer: int, points: int = 400) -> np.ndarray:
    """The midpoint rule on the straight path from the [PAD] baseline, written out (no Captum), [T]."""
    x, baseline = words(loaded), pad_baseline(loaded)
    alphas = (torch.arange(points, dtype=torch.float32) + 0.5) / points
    path = (baseline + alphas[:, None, None] * (x - baseline)).requires_grad_(True)  # (points, T, D)
    (grad,) = torch.autograd.grad(direct_f(loaded, answer, embeds=path).sum(), path)
    return ((x - baseline)[0] * grad.mean(0)).sum(-1).detach().numpy()


def test_integrated_gradients_equal_a_hand_written_path_integral(mlm, target):
    result = attr.integrated_gradients(target, steps=100)
    expected = hand_integrated_gradients(mlm, target.output)
    np.testing.assert_allclose(result.attributions, expected, atol=2e-4 * np.abs(expected).max())
    assert result.attributions[~target.ordinary].tolist() == [0.0] * int((~target.ordinary).sum())


def test_integrated_gradients_are_complete_at_many_steps(mlm, target):
    result = attr.integrated_gradients(target, steps=200)
    with torch.no_grad():
        ends = direct_f(mlm, target.output, embeds=torch.cat([words(mlm), pad_baseline(mlm)]))
    assert (result.f_input, result.f_baseline) == pytest.approx(ends.tolist(), rel=1e-5)
    assert abs(result.total - result.delta) < 1e-3 * abs(result.delta) and result.gap < 1e-3
    few = attr.integrated_gradients(target, steps=3)
    assert few.gap > result.gap  # the gap measures the quadrature, so it shrinks with the steps


def test_integrated_gradients_are_the_same_in_one_batch_or_one_point_at_a_time(target):
    batched = attr.integrated_gradients(target, steps=24)
    assert attr.batch_rows(target.num_tokens, 24) == 24
    for rows in (1, 5):
        np.testing.assert_allclose(attr.integrated_gradients(target, 24, internal_batch_size=rows).attributions,
                                   batched.attributions, atol=1e-5 * np.abs(batched.attributions).max())


def test_batches_shrink_with_the_square_of_the_length():
    assert attr.batch_rows(12, 50) == 50
    assert attr.batch_rows(12, 500) == 64
    assert attr.batch_rows(128, 50) == 16
    assert attr.batch_rows(512, 50) == 1


def test_occlusion_equals_explicit_runs_without_each_token(mlm, target, monkeypatch):
    answer, ids = target.output, direct_ids(mlm)
    with torch.no_grad():
        full = float(direct_f(mlm, answer))
        expected = [0.0 if not target.ordinary[i] else full - float(direct_f(mlm, answer, ids[:i] + ids[i + 1:]))
                    for i in range(len(ids))]
    np.testing.assert_allclose(attr.occlusion(target), expected, atol=1e-6)
    assert np.abs(expected).max() > 1e-4
    monkeypatch.setattr(attr, "_BATCH_ROWS", 1)  # batches of 4 shorter inputs: the 6 ordinary tokens in 2
    np.testing.assert_allclose(attr.occlusion(target), expected, atol=1e-6)


def hand_rollout(attention: list[np.ndarray], rows: list[int]) -> np.ndarray:
    """Abnar & Zuidema's rollout as a loop: per layer, head mean, half residual, rows renormalised."""
    size = attention[0].shape[-1]
    rolled = np.eye(size)
    for layer in attention:
        mixed = 0.5 * layer.mean(0) + 0.5 * np.eye(size)
        for i in range(size):
            mixed[i] /= mixed[i].sum()
        rolled = mixed @ rolled
    return np.mean([rolled[r] for r in rows], axis=0)


def test_rollout_equals_a_hand_written_loop(mlm, target):
    with torch.no_grad():
        output = mlm.model(input_ids=torch.tensor([direct_ids(mlm)]), output_attentions=True)
    expected = hand_rollout([a[0].double().numpy() for a in output.attentions], [target.mask_index])
    np.testing.assert_allclose(attr.rollout(target), expected, atol=1e-6)
    assert attr.rollout(target).sum() == pytest.approx(1.0, abs=1e-5)


def test_several_masks_explain_the_first_and_keep_the_others(mlm):
    target = attr.answer_target(mlm, "The [MASK] of France is [MASK].")
    masks = [i for i, t in enumerate(target.tokens) if t == mlm.tokenizer.mask_token]
    assert target.mask_index == masks[0] and len(masks) == 2
    assert not target.ordinary[masks].any()
    assert attr.occlusion(target)[masks].tolist() == [0.0, 0.0]


def test_a_chosen_answer_is_explained_and_a_word_of_several_tokens_is_refused(mlm):
    target = attr.answer_target(mlm, TEXT, "capital")
    assert target.token == "capital" and target.output == mlm.tokenizer.convert_tokens_to_ids(
        mlm.tokenizer.tokenize(" capital" if mlm.tokenizer.mask_token == "<mask>" else "capital"))[0]
    with pytest.raises(VizError, match="not one token"):
        attr.answer_target(mlm, TEXT, "unbelievably")
    with pytest.raises(VizError, match="no mask"):
        attr.answer_target(mlm, "The capital of France is Paris.")


def test_long_inputs_are_refused_with_the_limit(mlm, finetuned, monkeypatch):
    monkeypatch.setattr(attr, "MAX_TOKENS", 8)
    with pytest.raises(VizError, match="limited to 8 tokens \\(this input has 9\\).*Shorten"):
        attr.answer_target(mlm, TEXT)
    with pytest.raises(VizError, match="limited to 8 tokens"):
        attr.class_target(finetuned, SENTENCE)


def test_steps_and_methods_are_checked():
    for steps in (0, -3, attr.MAX_STEPS + 1):
        with pytest.raises(VizError, match="steps must be between"):
            attr.check_steps(steps)
    with pytest.raises(VizError, match="between 2"):
        attr.check_steps(1, "riemann_trapezoid")
    with pytest.raises(VizError, match="Unknown quadrature"):
        attr.check_steps(10, "simpson")
    with pytest.raises(VizError, match="Unknown method 'saliency'"):
        attr.check_methods(["saliency"])


def test_the_shared_model_is_left_frozen_with_no_gradient_or_hook(mlm, target):
    def hooks() -> int:
        return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in mlm.model.modules())

    before = hooks()
    attr.attribute(target, steps=8)
    assert hooks() == before
    assert all(not p.requires_grad and p.grad is None for p in mlm.model.parameters())


# ---- rank correlation --------------------------------------------------------------------------

def test_rank_correlation_is_spearmans_over_the_ordinary_tokens():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=8), rng.normal(size=8)
    ordinary = np.array([False, True, True, True, True, True, True, False])
    a[0], b[0], a[-1], b[-1] = 100.0, -100.0, 50.0, -50.0  # special tokens: must not count

    def ranks(v: np.ndarray) -> np.ndarray:
        return np.argsort(np.argsort(v)).astype(float)

    expected = np.corrcoef(ranks(a[ordinary]), ranks(b[ordinary]))[0, 1]
    matrix = attr.rank_correlation({"a": a, "b": b, "flat": np.ones(8)}, ordinary)
    assert matrix[0, 1] == pytest.approx(expected) and matrix[1, 0] == pytest.approx(expected)
    assert matrix[0, 0] == 1.0 and np.isnan(matrix[2, 0])
    ties = attr.rank_correlation({"a": np.array([1.0, 1.0, 2.0]), "b": np.array([1.0, 2.0, 3.0])}, np.ones(3, bool))
    assert ties[0, 1] == pytest.approx(np.corrcoef([1.5, 1.5, 3.0], [1.0, 2.0, 3.0])[0, 1])  # average ranks


# ---- the fine-tuned classifier -----------------------------------------------------------------

@pytest.fixture(scope="module", params=["mean", "cls"])
def finetuned(request, tiny_bert_dir) -> FinetuneResult:
    loaded = load_model(str(tiny_bert_dir), device="cpu")
    config = FinetuneConfig(mode="full", pooling=request.param)
    classifier = new_classifier(loaded, 3, config).eval()  # trainable weights, as after a session's training
    return FinetuneResult(model=classifier, tokenizer=loaded.tokenizer, label_names=("neg", "neu", "pos"),
                          config=config, history=History(), steps_done=0, total_steps=0, stopped=False, seconds=0.0,
                          trainable_parameters=0, total_parameters=0, model_name="tiny")


SENTENCE = "The film was long but the ending was wonderful."


def class_f(result: FinetuneResult, label: int, embeds: torch.Tensor) -> torch.Tensor:
    """The class probability written out: encoder, pooling by hand, the linear head."""
    classifier = result.classifier
    mask = torch.ones(embeds.shape[:2], dtype=torch.long)
    hidden = classifier.encoder(inputs_embeds=embeds, attention_mask=mask).last_hidden_state
    pooled = hidden[:, 0] if result.config.pooling == "cls" else hidden.mean(1)
    return classifier.head(pooled).softmax(-1)[:, label]


def test_the_classifier_target_explains_its_predicted_class_by_default(finetuned):
    target = attr.class_target(finetuned, SENTENCE)
    ids = finetuned.tokenizer(SENTENCE)["input_ids"]
    embeds = finetuned.classifier.encoder.get_input_embeddings()(torch.tensor([ids]))
    with torch.no_grad():
        probs = torch.stack([class_f(finetuned, c, embeds)[0] for c in range(3)])
    assert target.token == finetuned.label_names[int(probs.argmax())] and target.mask_index is None
    assert attr.attribute(target, ["rollout"]).score == pytest.approx(float(probs.max()), rel=1e-5)
    with pytest.raises(VizError, match="Class 3 does not exist"):
        attr.class_target(finetuned, SENTENCE, 3)


def test_the_classifier_methods_equal_independent_computations(finetuned):
    label, ids = 2, finetuned.tokenizer(SENTENCE)["input_ids"]
    target = attr.class_target(finetuned, SENTENCE, label)
    embeddings = finetuned.classifier.encoder.get_input_embeddings()
    embeds = embeddings(torch.tensor([ids])).detach().requires_grad_(True)
    (grad,) = torch.autograd.grad(class_f(finetuned, label, embeds).sum(), embeds)
    np.testing.assert_allclose(attr.grad_x_input(target), (grad * embeds).sum(-1)[0].detach().numpy(),
                               rtol=1e-4, atol=1e-7)
    with torch.no_grad():
        full = float(class_f(finetuned, label, embeddings(torch.tensor([ids]))))
        expected = [0.0 if i in (0, len(ids) - 1) else
                    full - float(class_f(finetuned, label, embeddings(torch.tensor([ids[:i] + ids[i + 1:]]))))
                    for i in range(len(ids))]
        output = finetuned.classifier.encoder(input_ids=torch.tensor([ids]), output_attentions=True)
    np.testing.assert_allclose(attr.occlusion(target), expected, atol=1e-6)
    rows = [0] if finetuned.config.pooling == "cls" else list(range(len(ids)))
    np.testing.assert_allclose(attr.rollout(target), hand_rollout([a[0].double().numpy() for a in output.attentions],
                                                                  rows), atol=1e-6)
    assert attr.integrated_gradients(target, steps=200).gap < 1e-3
    assert all(p.grad is None for p in finetuned.classifier.parameters())


# ---- JSON and figures --------------------------------------------------------------------------

def test_the_records_carry_the_fixed_fields(target):
    result = attr.attribute(target, steps=16)
    one = attr.to_json(result, "integrated-gradients", "tiny")
    assert {"model", "tokens", "attributions", "target", "completeness"} <= set(one)
    assert one["completeness"]["sum"] == pytest.approx(sum(one["attributions"]), abs=1e-6)
    assert one["completeness"]["delta"] == pytest.approx(one["completeness"]["f_input"]
                                                         - one["completeness"]["f_baseline"])
    assert attr.to_json(result, "occlusion", "tiny")["completeness"] is None
    everything = json.loads(json.dumps(attr.to_dict(result, "tiny", TEXT)))
    assert list(everything["attributions"]) == list(attr.METHODS)
    assert everything["correlation"]["spearman"][0][0] == 1.0


def test_coloured_text_escapes_tokens_and_puts_each_value_in_its_hover():
    html = attribution_text(["[CLS]", "<b>bold</b>", "cat", "[SEP]"], {"IG & co": np.array([0.0, 0.5, -0.25, 0.0])})
    assert "<b>bold</b>" not in html and "&lt;b&gt;bold&lt;/b&gt;" in html
    assert 'title="&lt;b&gt;bold&lt;/b&gt; · IG &amp; co: +0.5"' in html and "· IG &amp; co: -0.25" in html
    colours = re.findall(r"background:(#[0-9a-f]{6})", html)
    assert colours[0] == "#f7f7f7"  # 0 is white (the middle of RdBu)
    assert colours[1] == "#67001f" and colours[2] != colours[1]  # +max is the red end
    assert "linear-gradient" in html and "raises f" in html and "±0.5" in html


def test_bars_split_by_sign_with_exact_values_and_the_heatmap_writes_its_values():
    fig = attribution_bars(["a", "b", "c"], {"m": np.array([0.2, -0.1, 0.0]), "n": np.array([1.0, 2.0, 3.0])})
    raises, lowers = fig.data[0], fig.data[1]
    np.testing.assert_array_equal(raises.y, [0.2, np.nan, np.nan])
    np.testing.assert_array_equal(lowers.y, [np.nan, -0.1, np.nan])
    assert "%{y:+.4g}" in raises.hovertemplate and [t.showlegend for t in fig.data] == [True, True, False, False]
    heat = method_correlation_heatmap(np.array([[1.0, np.nan], [np.nan, 1.0]]), ["x", "y"]).data[0]
    assert [list(row) for row in heat.text] == [["+1.00", "n/a"], ["n/a", "+1.00"]]
    assert (heat.zmin, heat.zmax) == (-1, 1) and heat.colorbar.title.text == "Spearman ρ"


# ---- the attribute command ---------------------------------------------------------------------

def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    code = cli.main(["attribute", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("args, message", [
    (["--text", TEXT, "--method", "saliency"], "invalid choice: 'saliency'"),
    (["--text", TEXT], "the following arguments are required: --method"),
    (["--text", TEXT, "--method", "rollout", "--steps", "many"], "invalid int value"),
    (["--text", TEXT, "--method", "integrated-gradients", "--steps", "0"], "steps must be between 1 and"),
    (["--text", TEXT, "--method", "integrated-gradients", "--steps", "1000000"], "got 1,000,000"),
    (["--text", "The capital of France is Paris.", "--method", "occlusion"], "The text has no mask"),
])
def test_bad_input_is_one_line_and_exit_code_2_before_any_model_loads(capsys, args, message):
    code, out, err = run_cli(capsys, *args)
    assert code == 2 and out == "" and message in err and err.count("\n") == 1 and err.startswith("error: ")


def test_the_command_on_a_tiny_model(capsys, tiny_mlm_dir):
    model = str(tiny_mlm_dir("bert"))
    code, out, err = run_cli(capsys, "--text", "The [MASK] of France is [MASK].", "--method", "integrated-gradients",
                             "--steps", "64", "--model", model)
    record = json.loads(out)
    assert code == 0 and set(record) >= {"model", "tokens", "attributions", "target", "completeness"}
    assert record["model"] == model and len(record["attributions"]) == len(record["tokens"]) == 9
    assert record["mask_index"] == 2 and record["target"]["score"] > 0
    assert record["completeness"]["sum"] == pytest.approx(sum(record["attributions"]), abs=1e-6)
    code, out, err = run_cli(capsys, "--text", TEXT, "--method", "grad-x-input", "--answer", "unbelievably",
                             "--model", model)
    assert code == 2 and "'unbelievably' is not one token" in err and err.count("\n") == 1


def test_the_cli_names_every_method_without_importing_torch():
    from vizcore.why import cli as why_cli
    from vizcore.why.attribution import METHODS

    assert set(why_cli.ATTRIBUTION_METHODS) == set(METHODS)
