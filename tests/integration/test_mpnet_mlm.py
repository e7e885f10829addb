"""The base-size masked-LM ``mpnet-mlm-tuned`` (issue 48) as the app ships it: it answers wherever blanks are filled
once the base model is installed (the suite's pin taken off), its export loads in plain transformers'
``AutoModelForMaskedLM`` and gives the app's numbers, its card's figures are the shipped file's, and the demo set
is not in its training windows. Skipped when the base model is not installed or its weights are not shipped."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.unit.test_cli_hostile import run_main
from vizcore.model import catalog, loading
from vizcore.model.catalog import BASE_MLM_MODEL, BASE_MODEL, BUILTIN_MODELS

ROOT = Path(__file__).resolve().parents[2]
WEIGHTS = catalog.base_mlm_weights()
pytestmark = pytest.mark.skipif(
    not BUILTIN_MODELS[BASE_MODEL].installed() or not WEIGHTS.is_file(),
    reason=f"{BASE_MODEL} is not installed (make models) or {WEIGHTS.name} is not shipped yet")
FRANCE = "The capital of France is [MASK]."


@pytest.fixture(scope="module")
def mlm():
    return loading.load_model(BASE_MLM_MODEL, device="cpu", head="mlm")


def test_it_answers_wherever_blanks_are_filled_once_installed(monkeypatch):
    monkeypatch.delenv(catalog.FILL_MASK_ENV)  # the suite's pin to the small one
    assert catalog.fill_mask_model() == BASE_MLM_MODEL
    from vizcore.cli import build_parser

    assert build_parser().parse_args(["fill-mask", "--text", FRANCE]).model == BASE_MLM_MODEL


def test_the_export_loads_in_plain_transformers_with_the_apps_numbers(mlm, monkeypatch, capsys, tmp_path):
    from transformers import AutoModelForMaskedLM

    from vizcore.mlm.fill_mask import fill_mask
    from vizcore.model import export

    monkeypatch.setattr(export, "load_model", lambda name, device="cpu", head="base": mlm)
    code, out, err = run_main(capsys, "export-model", BASE_MLM_MODEL, "--out", str(tmp_path / "out"))
    assert code == 0, err
    assert json.loads(out)["architecture"] == "MPNetForMaskedLM"
    plain = AutoModelForMaskedLM.from_pretrained(tmp_path / "out", attn_implementation="eager").eval()
    inputs = mlm.tokenizer(FRANCE.replace("[MASK]", mlm.tokenizer.mask_token), return_tensors="pt")
    with torch.no_grad():
        theirs = plain(**inputs).logits.softmax(-1)[0]
    ours = fill_mask(mlm, FRANCE, top_k=5, lenses=False).masks[0]
    for prediction in ours.predictions:
        assert abs(prediction.score - float(theirs[ours.index, prediction.token_id])) <= 1e-5


def test_the_card_says_what_the_shipped_file_scores():
    metrics = json.loads(WEIGHTS.with_suffix(".json").read_text())
    best, data = metrics["best"], metrics["data"]
    assert data["demo_sentences_in_training_windows"] == 0
    card = (WEIGHTS.parent / "MODEL_CARD_MPNET_MLM.md").read_text()
    assert f"**top-1 {best['demo_top1']:.1%}**" in card and f"**top-1 {best['heldout_top1']:.1%}**" in card
    assert WEIGHTS.stat().st_size <= 25e6  # issue 48: what it adds stays small


def test_the_demo_set_is_not_in_the_training_windows():
    """Where the training windows are (the machine that trained; .mlm-work is not in the repository), they are the
    ones the card names (their SHA-256) and hold no demo sentence, token by token."""
    windows = ROOT / ".mlm-work" / "mpnet-train-64.npy"
    if not windows.is_file():
        pytest.skip("the training windows are not on this machine (python -m tools.mpnet_mlm windows makes them)")
    from tools.mpnet_mlm import demo_in_windows, load_encoder

    rows = np.load(windows, mmap_mode="r")
    recorded = json.loads(WEIGHTS.with_suffix(".json").read_text())["data"]["train_windows_sha256"]
    assert hashlib.sha256(np.ascontiguousarray(rows).tobytes()).hexdigest() == recorded
    assert demo_in_windows(rows, load_encoder()[1]) == []
