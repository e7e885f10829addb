"""Head importance on the shipped masked-LM: the held-out metric equals the Fill-mask pipeline's own numbers,
and the pruning curves behave as Michel et al. report (a few heads can go; all of them cannot)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vizcore.mlm.fill_mask import forward as fill_mask_forward
from vizcore.model.catalog import MLM_MODEL
from vizcore.model.loading import LoadedModel, load_model
from vizcore.why import heldout
from vizcore.why import importance as imp


@pytest.fixture(scope="module")
def mlm() -> LoadedModel:
    return load_model(MLM_MODEL, device="cpu", head="mlm")


def test_the_held_out_metric_is_fill_masks_log_probability_of_the_masked_words(mlm):
    target = imp.masked_lm_target(mlm, 8)
    got = imp.evaluate(target, np.ones((1, mlm.num_layers, mlm.num_heads)))[0, 0]
    total, count = 0.0, 0
    for row in range(target.size):  # each sentence alone, through the Fill-mask page's forward
        length = int(target.batch.inputs["attention_mask"][row].sum())
        inputs = {name: value[row: row + 1, :length] for name, value in target.batch.inputs.items()}
        labels = target.batch.labels[row, :length]
        masks = (labels != heldout.IGNORE).nonzero().flatten().tolist()
        logits = fill_mask_forward(mlm, inputs, masks, details=False).mask_logits  # (M, V)
        total += torch.log_softmax(logits.float(), -1)[torch.arange(len(masks)), labels[masks]].sum().item()
        count += len(masks)
    assert got == pytest.approx(total / count, abs=1e-5)
    assert -8 < got < -1  # the model guesses these everyday words far better than chance (log 1/30522 = -10.3)


def test_a_few_heads_can_go_but_not_all_of_them(mlm):
    result = imp.head_importance(imp.masked_lm_target(mlm, 6), curve_points=7)
    plain, curves = result.plain[0], {name: curve[:, 0] for name, curve in result.curves.items()}
    assert result.removed.tolist() == [0, 12, 24, 36, 48, 60, 72]
    assert curves["ablation"][1] > plain - 0.2  # the 12 least important heads by ablation cost almost nothing
    assert curves["ablation"][-1] < plain - 2  # with every head gone the model is lost
    assert curves["ablation"][2] > curves["random"][2]  # a ranking beats a random order
    assert np.isfinite(result.correlation())
