"""The MLM training recipe without a model: schedule, held-out sampling, command-line errors (with the embedded
encoder: tests/integration/test_mlm_training.py)."""

import numpy as np
import pytest

from tools import mlm_training
from tools.mlm_training import TrainConfig, learning_rate


def test_learning_rate_warms_up_stays_flat_then_decays_to_a_tenth():
    config = TrainConfig(steps=1000, lr=1e-3, warmup=100, decay_fraction=0.25)
    assert learning_rate(0, config) == pytest.approx(1e-5)
    assert learning_rate(99, config) == pytest.approx(1e-3)
    assert learning_rate(500, config) == pytest.approx(1e-3)
    assert learning_rate(750, config) == pytest.approx(1e-3)
    assert learning_rate(875, config) == pytest.approx(1e-3 * (1 - 0.9 * 0.5))
    assert learning_rate(1000, config) == pytest.approx(1e-4)


def test_learning_rate_after_a_warm_start_warms_up_again_and_decays_over_the_new_steps():
    config = TrainConfig(steps=3000, lr=1e-3, warmup=100, decay_fraction=0.25)
    start = 2000
    assert learning_rate(start, config, start) == pytest.approx(1e-5)
    assert learning_rate(start + 100, config, start) == pytest.approx(1e-3)
    assert learning_rate(2750, config, start) == pytest.approx(1e-3)  # decay: last quarter of 1000 new steps
    assert learning_rate(3000, config, start) == pytest.approx(1e-4)


def test_evaluation_spreads_a_sample_over_the_whole_held_out_set():
    # The held-out file lists its sources one after another; the first N windows are one source.
    assert list(mlm_training.evaluation_rows(10, 0)) == list(range(10))
    assert list(mlm_training.evaluation_rows(10, 50)) == list(range(10))
    rows = mlm_training.evaluation_rows(4000, 512)
    assert len(rows) == 512 and rows[0] == 0 and rows[-1] == 3999
    assert np.all(np.diff(rows) >= 7)


def test_evaluation_names_the_held_out_set_it_measured():
    windows = np.arange(64 * 10, dtype=np.int32).reshape(10, 64)
    whole = mlm_training.heldout_set(windows, mlm_training.evaluation_rows(10, 0))
    assert whole.startswith("10 of 10 windows, ")
    assert mlm_training.heldout_set(windows, mlm_training.evaluation_rows(10, 5)) != whole
    assert mlm_training.heldout_set(windows + 1, mlm_training.evaluation_rows(10, 0)) != whole


def test_the_command_line_reports_a_missing_file_in_one_line_and_exits_2(tmp_path, capsys):
    evaluate = ["evaluate", "--work-dir", str(tmp_path), "--weights"]
    assert mlm_training.main([*evaluate, str(tmp_path / "no.safetensors")]) == 2
    (tmp_path / "w.safetensors").write_bytes(b"x")
    assert mlm_training.main([*evaluate, str(tmp_path / "w.safetensors")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("error: '") and "is missing." in err[0]
    assert "run python -m tools.mlm_training build-corpus --work-dir" in err[1] and len(err) == 2
