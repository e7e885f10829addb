"""The from-scratch Transformer learns reversal: a training run (its parts: tests/unit/test_tiny_transformer.py)."""

import numpy as np

from tests.support.threads import one_torch_thread
from vizcore.finetune.tiny import TinyConfig, anti_diagonal_mass, predict_tiny, train_tiny


def test_reversal_is_learned_quickly_and_a_head_turns_anti_diagonal():
    config = TinyConfig(task="reverse", length=6, steps=250, snapshot_every=50)
    with one_torch_thread():  # as the app's training jobs run (vizcore.jobs)
        result = train_tiny(config)
    assert result.sequence_accuracy >= 0.95
    assert predict_tiny(result, [1, 2, 3, 4, 5, 6]) == [6, 5, 4, 3, 2, 1]
    first_step, first = result.history.snapshots[0]
    last_step, last = result.history.snapshots[-1]
    assert (first_step, last_step) == (0, 250) and last.shape == (2, 4, 6, 6)
    best_before = max(anti_diagonal_mass(first[l, h]) for l in range(2) for h in range(4))
    best_after = max(anti_diagonal_mass(last[l, h]) for l in range(2) for h in range(4))
    assert best_before < 0.4 and best_after > 0.8
    np.testing.assert_allclose(last.sum(-1), 1.0, atol=1e-5)
