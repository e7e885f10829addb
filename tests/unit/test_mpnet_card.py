"""The base-size masked-LM's card (tools/mpnet_card.py): every figure from the metrics file, the goals judged from
the numbers, the demo set's answers listed, and a metrics file without a measured checkpoint refused."""

import json

import pytest

from tools.mpnet_card import model_card, write_card
from vizcore.errors import VizError

ROW = {"step": 600, "tokens": 1228800, "lr": 5e-4, "heldout_top1": 0.4123, "heldout_top5": 0.6, "heldout_copied": 0.08,
       "demo_top1": 0.8125, "demo_top5": 0.9, "demo_copied": 0.125}
METRICS = {
    "best": {**ROW, "heldout_tokens": 37000, "demo_sentences": 48, "config": {"rank": 16, "copy_penalty": 1.0},
             "answers": [{"sentence": "The capital of France is [MASK].", "accepted": ["paris"], "answer": "paris"},
                         {"sentence": "Rome is the capital of [MASK].", "accepted": ["italy"], "answer": "rome"}]},
    "data": {"window_tokens": 64, "train_windows": 164908, "train_windows_sha256": "ab" * 32, "heldout_windows": 4111,
             "demo_sentences_in_training_windows": 0},
    "minilm": {"heldout_top1": 0.438, "heldout_copied": 0.264, "demo_top1": 0.1875, "demo_copied": 0.354},
    "curve": [ROW],
}


def test_the_card_says_the_measured_figures_and_judges_each_goal():
    card = model_card(METRICS, 6_600_000)
    assert "**top-1 41.2%**" in card and "**top-1 81.2%**" in card and "**12.5%**" in card
    assert "| demo top1 | 81.2% | ≥ 75% | yes |" in card
    assert "| demo copied | 12.5% | ≤ 10% | no |" in card and "| heldout top1 | 41.2% | ≥ 55% | no |" in card
    assert "| ✓ | The capital of France is [MASK]. | paris | paris |" in card
    assert "| ✗ | Rome is the capital of [MASK]. | rome | italy |" in card
    assert "demo sentences found in them: **0**" in card and "6.6 MB" in card and "164,908" in card
    assert "held-out top-1 43.8%" in card  # the small masked-LM, the same measure


def test_files_are_written_and_an_unmeasured_file_is_refused(tmp_path):
    path = tmp_path / "mpnet-mlm.json"
    path.write_text(json.dumps(METRICS))
    write_card(path)
    assert (tmp_path / "MODEL_CARD_MPNET_MLM.md").is_file() and (tmp_path / "mpnet-mlm-curve.svg").is_file()
    with pytest.raises(VizError, match="no measured best checkpoint"):
        model_card({"best": {}})
