"""Head importance on tiny models: every number equals an independent recomputation, one sentence and
one configuration at a time, through the model's own full output (no batching, no MLM-head shortcut)."""

from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest
import torch

from vizcore.errors import VizError
from vizcore.finetune.datasets import LabelledTexts, TrainTestData
from vizcore.finetune.training import FinetuneConfig, train_classifier
from vizcore.model.loading import LoadedModel, load_model
from vizcore.model.run import HeadAblation, hooks, intervention_hooks
from vizcore.plot import shown_labels
from vizcore.why import heldout
from vizcore.why import importance as imp
from vizcore.why.figures import importance_heatmap, importance_ranks, pruning_lines, rank_scatter

SENTENCES = heldout.SENTENCES[:6]


@pytest.fixture(scope="module")
def mlm(tiny_mlm_dir) -> LoadedModel:
    return load_model(str(tiny_mlm_dir("bert")), device="cpu", head="mlm")


@pytest.fixture(scope="module")
def target(mlm) -> imp.MaskedLMTarget:
    return imp.masked_lm_target(mlm, SENTENCES)


def one_by_one(target: imp.MaskedLMTarget):
    """Each sentence alone, unpadded: (inputs (1, T), labels (T,))."""
    for row in range(target.size):
        length = int(target.batch.inputs["attention_mask"][row].sum())
        yield ({name: value[row: row + 1, :length] for name, value in target.batch.inputs.items()},
               target.batch.labels[row, :length])


def mean_log_prob(loaded: LoadedModel, target: imp.MaskedLMTarget, ablate: list[HeadAblation]) -> float:
    """The metric from the model's full logits, one sentence at a time, the heads ablated by HeadAblation."""
    total, count = 0.0, 0
    for inputs, labels in one_by_one(target):
        with torch.no_grad(), hooks(loaded.model, intervention_hooks(loaded, ablate)):
            logits = loaded.model(**inputs).logits[0]  # (T, V)
        where = labels != heldout.IGNORE
        total += torch.log_softmax(logits[where], -1).gather(1, labels[where, None]).sum().item()
        count += int(where.sum())
    return total / count


# ---- held-out sentences and masking --------------------------------------------------------------

def test_masking_is_deterministic_and_masks_only_ordinary_word_pieces(mlm):
    batch = heldout.masked_batch(mlm, SENTENCES)
    again = heldout.masked_batch(mlm, tuple(reversed(SENTENCES)))  # another batch: same masks per sentence
    tokenizer = mlm.tokenizer
    for row, text in enumerate(SENTENCES):
        alone = tokenizer(text)["input_ids"]
        pieces = tokenizer.convert_ids_to_tokens(alone)
        masked = (batch.labels[row] != heldout.IGNORE).nonzero().flatten().tolist()
        ordinary = [i for i, p in enumerate(pieces)
                    if p not in tokenizer.all_special_tokens and any(c.isalnum() for c in p)]
        assert masked and set(masked) <= set(ordinary)
        assert len(masked) == max(1, round(0.15 * len(ordinary)))
        assert [alone[i] for i in masked] == batch.labels[row, masked].tolist()  # the labels are the originals
        assert (batch.inputs["input_ids"][row, masked] == tokenizer.mask_token_id).all()
        unmasked = [i for i in range(len(alone)) if i not in masked]
        assert batch.inputs["input_ids"][row, unmasked].tolist() == [alone[i] for i in unmasked]
        other = len(SENTENCES) - 1 - row
        assert (again.labels[other, : len(alone)] == batch.labels[row, : len(alone)]).all()
    assert heldout.masked_batch(mlm, SENTENCES, seed=1).labels.ne(batch.labels).any()  # the seed matters


def test_held_out_sentences_are_many_distinct_and_bad_input_is_refused(mlm):
    assert 40 <= len(heldout.SENTENCES) == len(set(heldout.SENTENCES)) <= 60
    assert heldout.heldout_sentences(3) == heldout.SENTENCES[:3]
    for bad in (0, len(heldout.SENTENCES) + 1):
        with pytest.raises(VizError, match="held-out sentences"):
            heldout.heldout_sentences(bad)
    with pytest.raises(VizError, match="no sentences"):
        heldout.masked_batch(mlm, [])
    with pytest.raises(VizError, match="no word to mask"):
        heldout.masked_batch(mlm, ["A fine day.", "?!"])
    with pytest.raises(VizError, match="empty"):
        heldout.masked_batch(mlm, ["A fine day.", "   "])
    with pytest.raises(VizError, match="masking rate"):
        heldout.masked_batch(mlm, SENTENCES, rate=0.0)


# ---- ablation ------------------------------------------------------------------------------------

def test_plain_metric_equals_the_models_own_logits(mlm, target):
    plain = imp.evaluate(target, np.ones((1, mlm.num_layers, mlm.num_heads)))[0, 0]
    assert plain == pytest.approx(mean_log_prob(mlm, target, []), abs=1e-5)
    assert plain < 0


def test_ablation_importance_equals_one_run_per_head(mlm, target):
    plain, ablated = imp.ablation_importance(target)
    assert plain[0] == pytest.approx(mean_log_prob(mlm, target, []), abs=1e-5)
    expected = np.array([[mean_log_prob(mlm, target, [HeadAblation(l, h)]) for h in range(mlm.num_heads)]
                         for l in range(mlm.num_layers)])
    np.testing.assert_allclose(ablated[0], expected, atol=1e-5)
    assert np.ptp(expected) > 1e-3  # the heads differ: the comparison says something
    np.testing.assert_allclose(imp.drop(plain, ablated, (True,))[0], plain[0] - expected, atol=1e-5)


def test_batching_does_not_change_the_numbers(target, mlm):
    keep = imp.single_ablations(mlm.num_layers, mlm.num_heads)
    np.testing.assert_allclose(imp.evaluate(target, keep, chunk_rows=5), imp.evaluate(target, keep, chunk_rows=200),
                               atol=1e-5)


# ---- gradient --------------------------------------------------------------------------------------

def test_gradient_importance_equals_autograd_on_a_gate_of_my_own(mlm, target):
    """Michel et al.'s score from a gate built here: a pre-hook multiplying W_O's input, per sentence."""
    layers, heads = mlm.num_layers, mlm.num_heads
    total = torch.zeros(layers, heads, dtype=torch.float64)
    for inputs, labels in one_by_one(target):
        gate = torch.ones(layers, heads, requires_grad=True)

        def gated(l, gate=gate):
            def hook(module, args):
                x = args[0]  # (1, T, H * d)
                return (x.view(*x.shape[:2], heads, -1).mul(gate[l][:, None]).view(x.shape),)
            return hook

        handles = [layer.attention.output.dense.register_forward_pre_hook(gated(l))
                   for l, layer in enumerate(mlm.model.bert.encoder.layer)]
        try:
            with torch.enable_grad():
                logits = mlm.model(**inputs).logits[0]
        finally:
            for handle in handles:
                handle.remove()
        where = labels != heldout.IGNORE
        loss = -torch.log_softmax(logits[where], -1).gather(1, labels[where, None]).mean()
        (grad,) = torch.autograd.grad(loss, gate)
        total += grad.abs().double()
    expected = (total / target.size).numpy()
    got = imp.gradient_importance(target, chunk_rows=4)  # two batches of unequal size
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-7)
    assert expected.min() > 0
    assert all(p.grad is None for p in mlm.model.parameters())


def test_gradient_is_a_finite_difference_of_the_metric(mlm):
    """For one sentence, dL/dxi at 1 equals the change of the loss between scales 1 +- eps."""
    one = imp.masked_lm_target(mlm, SENTENCES[:1])
    grad = imp.gradient_importance(one)
    eps, layer, head = 1e-2, 1, 2
    keep = np.ones((2, mlm.num_layers, mlm.num_heads), dtype=np.float32)
    keep[0, layer, head], keep[1, layer, head] = 1 + eps, 1 - eps
    scale = torch.as_tensor(keep)
    sums, counts = one.scores(np.zeros(2, dtype=int), scale)
    loss = (-sums[:, 0] / counts).double()
    assert grad[layer, head] == pytest.approx(abs((loss[0] - loss[1]).item()) / (2 * eps), rel=2e-2, abs=1e-4)


def test_normalising_per_layer_gives_unit_rows():
    scores = np.array([[3.0, 4.0], [0.0, 0.0], [1.0, 0.0]])
    np.testing.assert_allclose(imp.normalise_per_layer(scores), [[0.6, 0.8], [0, 0], [1, 0]])


# ---- pruning and rank correlation ----------------------------------------------------------------

def test_pruning_curve_starts_at_the_plain_model_and_ends_with_every_head_gone(mlm, target):
    n = mlm.num_layers * mlm.num_heads
    order = np.random.default_rng(3).permutation(n)
    removed = imp.curve_steps(n, 5)
    curve = imp.pruning_curve(target, order, removed)[:, 0]
    every = [HeadAblation(l, h) for l in range(mlm.num_layers) for h in range(mlm.num_heads)]
    assert curve[0] == pytest.approx(mean_log_prob(mlm, target, []), abs=1e-5)
    assert curve[-1] == pytest.approx(mean_log_prob(mlm, target, every), abs=1e-5)
    middle = [HeadAblation(int(i // mlm.num_heads), int(i % mlm.num_heads)) for i in order[: removed[2]]]
    assert curve[2] == pytest.approx(mean_log_prob(mlm, target, middle), abs=1e-5)


def test_curve_steps_cover_none_to_all():
    assert imp.curve_steps(12, 25).tolist() == list(range(13))
    steps = imp.curve_steps(72, 25)
    assert steps[0] == 0 and steps[-1] == 72 and len(steps) == 25 and (np.diff(steps) > 0).all()
    with pytest.raises(VizError, match="at least 2 points"):
        imp.curve_steps(72, 1)


def test_pruning_refuses_an_order_that_is_not_a_permutation(target):
    with pytest.raises(VizError, match="each of the 12 heads once"):
        imp.pruning_curve(target, np.zeros(12, dtype=int), [0, 1])
    with pytest.raises(VizError, match="shape"):
        imp.evaluate(target, np.ones((1, 2, 2)))


def test_rank_correlation_is_spearmans():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    a[0, :2] = a[1, 0]  # ties
    assert imp.rank_correlation(a, b) == pytest.approx(stats.spearmanr(a.ravel(), b.ravel())[0], abs=1e-12)
    assert imp.rank_correlation(a, 2 * a + 1) == pytest.approx(1.0)
    assert imp.rank_correlation(a, -a) == pytest.approx(-1.0)
    assert np.isnan(imp.rank_correlation(a, np.ones_like(a)))


# ---- everything at once, and the job --------------------------------------------------------------

def test_head_importance_ranks_prunes_and_serialises(mlm, target):
    result = imp.head_importance(target, curve_points=5, seed=1)
    n = mlm.num_layers * mlm.num_heads
    for ranking in imp.RANKINGS:
        assert sorted(result.orders[ranking].tolist()) == list(range(n))
        assert result.curves[ranking].shape == (5, 1)
        assert result.curves[ranking][0, 0] == pytest.approx(result.plain[0])
    assert (np.diff(result.ablation[0].ravel()[result.orders["ablation"]]) >= 0).all()  # least important first
    assert (np.diff(result.gradient_normalised.ravel()[result.orders["gradient"]]) >= 0).all()
    ends = {float(curve[-1, 0]) for curve in result.curves.values()}
    assert len(ends) == 1  # every ranking ends with every head gone
    assert result.correlation() == pytest.approx(imp.rank_correlation(result.ablation[0], result.gradient_normalised))
    data = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert data["target"] == "masked-lm" and data["examples"] == len(SENTENCES)
    assert data["averaged_over"] == target.batch.masked
    first = result.orders["gradient"][0]
    assert data["pruning"]["orders"]["gradient"][0] == [int(first // mlm.num_heads), int(first % mlm.num_heads)]
    assert np.asarray(data["ablation_importance"]["log_prob"]).shape == (mlm.num_layers, mlm.num_heads)
    assert data["pruning"]["curves"]["random"]["log_prob"][0] == pytest.approx(result.plain[0])


class Gated:
    """A target whose every batch waits for a permit from the test."""

    def __init__(self, target):
        self.inner, self.permits, self.batches = target, threading.Semaphore(0), 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def scores(self, *args, **kwargs):
        assert self.permits.acquire(timeout=20)
        self.batches += 1
        return self.inner.scores(*args, **kwargs)


def test_the_job_reports_progress_and_stop_ends_it_between_batches(target):
    gated = Gated(target)
    job = imp.ImportanceJob(gated, curve_points=5).start()
    gated.permits.release(2)
    deadline = time.monotonic() + 20
    while job.progress()[0] == 0.0 and time.monotonic() < deadline:
        time.sleep(0.01)
    fraction, text = job.progress()
    assert 0 < fraction < 1 and "gradient" in text
    job.stop()
    gated.permits.release(100)  # a batch already waiting may finish; none after it starts
    job.join(20)
    assert job.status == "stopped" and job.result is None
    assert gated.batches <= 3


def test_the_job_runs_to_its_end(target):
    job = imp.ImportanceJob(target, curve_points=4).start()
    job.join(60)
    assert job.status == "done", job.error
    assert job.progress()[0] == pytest.approx(1.0) and job.progress()[1].startswith("Done in")
    assert job.result.curves["ablation"].shape == (4, 1)
    job.release()
    assert job.result is None and job.target is None


# ---- the classifier ------------------------------------------------------------------------------

POSITIVE = ("What a lovely meal.", "The film was wonderful.", "Great service and kind staff.", "I loved the hotel.")
NEGATIVE = ("The soup was cold.", "A dull and boring film.", "Rude staff, slow service.", "The room was dirty.")


@pytest.fixture(scope="module")
def classifier(tiny_model_dir):
    base = load_model(str(tiny_model_dir("bert")), device="cpu")
    texts = POSITIVE + NEGATIVE
    labels = np.array([1] * 4 + [0] * 4)
    data = TrainTestData(LabelledTexts(texts, labels, ("negative", "positive")),
                         LabelledTexts(texts[1:7], labels[1:7], ("negative", "positive")), "test", "by hand")
    result = train_classifier(base, data, FinetuneConfig(mode="full", epochs=1, batch_size=4, lr=1e-3))
    return base, result, data


def classifier_metrics(result, data, ablate_in: LoadedModel | None, ablate: list[HeadAblation]) -> tuple[float, float]:
    """(mean loss, accuracy), one example at a time, through the classifier's own forward."""
    losses, correct = [], []
    for text, label in zip(data.texts, data.labels):
        batch = {k: v for k, v in result.tokenizer(text, return_tensors="pt").items()}
        specs = intervention_hooks(ablate_in, ablate) if ablate else []
        with torch.no_grad(), hooks(result.classifier.encoder, specs):
            logits = result.classifier.eval()(batch)[0]
        losses.append(-torch.log_softmax(logits, -1)[label].item())
        correct.append(int(logits.argmax()) == label)
    return float(np.mean(losses)), float(np.mean(correct))


def test_classifier_metrics_and_ablations_equal_one_example_at_a_time(classifier):
    base, result, data = classifier
    target = imp.classifier_target(base, result, data.test)
    plain, ablated = imp.ablation_importance(target)
    np.testing.assert_allclose(plain, classifier_metrics(result, data.test, None, []), atol=1e-5)
    wrapped = target.loaded
    for layer, head in ((0, 1), (1, 3)):
        expected = classifier_metrics(result, data.test, wrapped, [HeadAblation(layer, head)])
        np.testing.assert_allclose(ablated[:, layer, head], expected, atol=1e-5)
    importance = imp.drop(plain, ablated, target.higher_is_better)
    np.testing.assert_allclose(importance[0], ablated[0] - plain[0])  # a loss: importance is its rise
    grads = [None if p.grad is None else p.grad.clone() for p in result.classifier.parameters()]  # from training
    gradient = imp.gradient_importance(target)
    assert gradient.shape == (2, 4) and gradient.min() > 0
    for before, p in zip(grads, result.classifier.parameters()):  # the weights' gradients were not touched
        assert (before is None and p.grad is None) or torch.equal(before, p.grad)


def test_a_classifier_sample_and_bad_input(classifier):
    base, result, data = classifier
    sample = imp.classifier_target(base, result, data.test, limit=3, seed=0)
    assert sample.size == 3 and imp.classifier_target(base, result, data.test, limit=3, seed=0).labels.equal(
        sample.labels)
    empty = LabelledTexts((), np.zeros(0, dtype=np.int64), ("negative", "positive"))
    with pytest.raises(VizError, match="no held-out examples"):
        imp.classifier_target(base, result, empty)
    with pytest.raises(VizError, match="at least one"):
        imp.classifier_target(base, result, data.test, limit=0)


# ---- hooks of a run act in its own thread only --------------------------------------------------

def test_another_threads_pass_on_the_shared_model_sees_no_ablation(mlm, target):
    keep = np.zeros((1, mlm.num_layers, mlm.num_heads), dtype=np.float32)
    inputs = {k: v[:1] for k, v in target.batch.inputs.items()}
    with torch.no_grad():
        alone = mlm.model(**inputs).logits
    seen = []
    specs = imp.head_scale_hooks(mlm, torch.as_tensor(keep[0]))  # the core's hooks() keeps them to this thread

    def other():
        with torch.no_grad():
            seen.append(mlm.model(**inputs).logits)

    with hooks(mlm.model, specs):
        with torch.no_grad():
            mine = mlm.model(**inputs).logits
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
    assert torch.equal(seen[0], alone)
    assert not torch.allclose(mine, alone)


# ---- figures ---------------------------------------------------------------------------------------

def test_figures_label_heads_one_based_and_carry_values_and_ranks():
    values = np.array([[0.5, -0.2, 0.1], [0.0, 0.3, -0.4]])
    assert importance_ranks(values).tolist() == [[1, 5, 3], [4, 2, 6]]
    figure = importance_heatmap(values, "t", "drop", diverging=True)
    heatmap = figure.data[0]
    assert shown_labels(figure, "yaxis") == ["1", "2"] and shown_labels(figure, "xaxis") == ["1", "2", "3"]
    assert "layer 2, head 3" in heatmap.customdata[1][2] and "-0.4" in heatmap.customdata[1][2]
    assert "rank 6 of 6" in heatmap.customdata[1][2]
    assert heatmap.zmin == -0.5 and heatmap.zmax == 0.5 and heatmap.colorbar.title.text == "drop"
    curves = {"ablation": np.array([1.0, 0.9, 0.2]), "random": np.array([1.0, 0.5, 0.2])}
    lines = pruning_lines(np.array([0, 3, 6]), curves, 1.0, "accuracy", 6, "t")
    assert [list(t.y) for t in lines.data] == [[1.0, 0.9, 0.2], [1.0, 0.5, 0.2]]
    assert lines.layout.shapes[0].y0 == 1.0  # the intact model's line
    scatter = rank_scatter(values, values, "a", "b", 1.0)
    assert list(scatter.data[0].x) == list(scatter.data[0].y) and "1.00" in scatter.layout.title.text
