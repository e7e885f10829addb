"""Fine-tuning a tiny random BERT to the end: a separable toy task is learned (the mechanics:
tests/unit/test_finetune.py)."""

import numpy as np
import pytest

from tests.unit.test_finetune import toy_data
from vizcore.finetune.training import FinetuneConfig, train_classifier
from vizcore.model.loading import load_model


@pytest.fixture(scope="module")
def tiny(tiny_bert_dir):
    return load_model(str(tiny_bert_dir), device="cpu")


def test_a_separable_toy_task_is_learned_and_history_is_complete(tiny):
    seen = []
    config = FinetuneConfig(mode="head", epochs=8, batch_size=8, lr=5e-2, seed=0)
    result = train_classifier(tiny, toy_data(), config, on_progress=seen.append)
    assert result.total_steps == 8 * 4 and result.steps_done == 32 and not result.stopped
    assert [e["step"] for e in result.history.evals] == [0, 4, 8, 12, 16, 20, 24, 28, 32]
    assert result.final_score == 1.0
    losses = [row["loss"] for row in result.history.steps]
    assert np.mean(losses[-4:]) < np.mean(losses[:4])
    steps = [p.step for p in seen]
    assert steps == sorted(steps) and steps[-1] == 32
    assert seen[-1].eta_s == pytest.approx(0.0)
