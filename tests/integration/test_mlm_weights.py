"""The built-in offline masked-LM: embedded encoder + the shipped changed tensors.

Most tests use a weights file made here (the untrained MLM with a few tensors set to known random
values, so loading the file visibly matters); the last ones need the real shipped weights and skip,
saying why, until ``vizcore/weights/minilm-mlm.safetensors`` is committed.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from tests.support.mlm_weights import make_mlm_weights
from tools.mlm_training import MASK_ROW_KEY, new_mlm_model
from vizcore.errors import VizError
from vizcore.mlm.fill_mask import fill_mask
from vizcore.mlm.probes import PROBES
from vizcore.mlm.weights import (
    DEFAULT_WEIGHTS,
    MLM_MODEL,
    WEIGHTS_ENV,
    summary_line,
)
from vizcore.model.loading import load_model

SENTENCE = "The cat sat on the [MASK]."


@pytest.fixture(scope="module")
def made_weights(tmp_path_factory):
    """A weights file in the shipped format plus a metrics file beside it."""
    path = make_mlm_weights(tmp_path_factory.mktemp("mlm-weights") / "minilm-mlm.safetensors")
    best = {"step": 1234, "heldout_top1": 0.41, "heldout_top5": 0.6, "probes_right": 25}
    path.with_suffix(".json").write_text(json.dumps({"best": best}))
    return path


@pytest.fixture
def use_made_weights(made_weights, monkeypatch):
    monkeypatch.setenv(WEIGHTS_ENV, str(made_weights))
    return made_weights


def reference_model(path, mask_id: int):
    """BertForMaskedLM built by hand from the embedded folder and the file's tensors (upcast)."""
    model = new_mlm_model("eager").eval()
    state = {k: v.float() for k, v in load_file(str(path)).items()}
    mask_row = state.pop(MASK_ROW_KEY)
    model.load_state_dict(state, strict=False)
    with torch.no_grad():
        model.bert.embeddings.word_embeddings.weight[mask_id] = mask_row
    return model


def test_tuned_model_is_the_embedded_encoder_plus_the_file(use_made_weights):
    loaded = load_model(MLM_MODEL, device="cpu", head="mlm")
    tokenizer = loaded.tokenizer
    reference = reference_model(use_made_weights, tokenizer.mask_token_id)
    inputs = tokenizer(SENTENCE, return_tensors="pt")
    with torch.no_grad():
        ours, theirs = loaded.model(**inputs).logits, reference(**inputs).logits
        untrained = new_mlm_model("eager").eval()(**inputs).logits
    torch.testing.assert_close(ours, theirs, atol=1e-4, rtol=1e-4)
    assert (ours - untrained).abs().max() > 1.0  # the file's tensors were applied
    assert not any(p.requires_grad for p in loaded.model.parameters())


def test_attention_pages_can_use_its_encoder_too(use_made_weights):
    base = load_model(MLM_MODEL, device="cpu", head="base")
    expected = load_file(str(use_made_weights))["bert.encoder.layer.5.output.dense.bias"].float()
    torch.testing.assert_close(base.model.encoder.layer[5].output.dense.bias, expected)
    assert base.num_layers == 6 and base.num_heads == 12


def test_summary_reports_the_measured_numbers(use_made_weights):
    line = summary_line()
    assert "60.00% top-5" in line and "41.00% top-1" in line and "1,234 steps" in line and "25 of 40" in line


def test_unreadable_or_foreign_weights_are_refused(tmp_path, monkeypatch):
    broken = tmp_path / "broken.safetensors"
    broken.write_bytes(b"not a safetensors file")
    monkeypatch.setenv(WEIGHTS_ENV, str(broken))
    with pytest.raises(VizError, match="could not be read"):
        load_model(MLM_MODEL, device="cpu", head="mlm")
    foreign = tmp_path / "foreign.safetensors"
    save_file({"other.weight": torch.zeros(2), MASK_ROW_KEY: torch.zeros(384)}, str(foreign))
    monkeypatch.setenv(WEIGHTS_ENV, str(foreign))
    with pytest.raises(VizError, match="do not fit"):
        load_model(MLM_MODEL, device="cpu", head="mlm")


# ---- the real shipped weights ------------------------------------------------------------------

needs_shipped = pytest.mark.skipif(
    not DEFAULT_WEIGHTS.is_file(),
    reason=f"{DEFAULT_WEIGHTS.name} is not committed yet (made by python -m tools.mlm_training export)")


@pytest.fixture(scope="module")
def shipped():
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(WEIGHTS_ENV, raising=False)
        yield load_model(MLM_MODEL, device="cpu", head="mlm")


@needs_shipped
@pytest.mark.parametrize("probe", [0, 1, 2], ids=["paris", "cat-surface", "cup-drink"])
def test_shipped_model_answers_everyday_probes_in_its_top_5(shipped, probe):
    sentence, answers = PROBES[probe]
    top5 = [p.token for p in fill_mask(shipped, sentence, top_k=5).masks[0].predictions]
    assert set(top5) & set(answers), f"{sentence} -> {top5}"


@needs_shipped
def test_model_card_probes_are_what_the_shipped_model_answers(shipped):
    """The card (and the page's summary) must describe the shipped fp16 file, probe by probe."""
    metrics = json.loads(DEFAULT_WEIGHTS.with_suffix(".json").read_text())
    recorded = metrics["best"]["probes"]
    assert [row["text"] for row in recorded] == [sentence for sentence, _ in PROBES]
    for row, (sentence, answers) in zip(recorded, PROBES):
        top5 = [p.token for p in fill_mask(shipped, sentence, top_k=5).masks[0].predictions]
        assert top5 == row["top5"], sentence
        assert row["hit"] == bool(set(top5) & set(answers)), sentence
    assert metrics["best"]["probes_right"] == sum(row["hit"] for row in recorded)
    card = (DEFAULT_WEIGHTS.parent / "MODEL_CARD.md").read_text()
    assert f"**{metrics['best']['probes_right']} of 40**" in card
    assert f"top-5 {100 * metrics['best']['heldout_top5']:.1f}%" in card


@needs_shipped
def test_the_shipped_tuned_lens_fits_the_shipped_model_and_its_card_holds(shipped, monkeypatch):
    """The tuned lens is trained for these weights; on everyday probes it reads layers 1 to 5 closer to the output
    than the logit lens does (mean KL), and its card's held-out numbers say so at every translated layer."""
    from vizcore.mlm import tuned_lens as tl

    monkeypatch.delenv(tl.WEIGHTS_ENV, raising=False)
    metrics = tl.card_metrics()
    if metrics is None:
        pytest.skip(f"{tl.DEFAULT_WEIGHTS.name} is not committed yet (python -m tools.tuned_lens_training export)")
    logit_kl, tuned_kl = [], []
    for sentence, _ in PROBES[:8]:
        result = fill_mask(shipped, sentence)
        assert result.tuned_lens is not None, result.tuned_note
        assert result.tuned_lens.token_ids[-1].tolist() == result.lens.token_ids[-1].tolist()  # the output row
        logit_kl.append(result.lens.kl_to_final[:-1, 0])
        tuned_kl.append(result.tuned_lens.kl_to_final[:-1, 0])
    # layers 1 to 5; at the embeddings short sentences are off the translators' training windows (see the card)
    assert (torch.tensor(np.array(tuned_kl)).mean(0)[1:] < torch.tensor(np.array(logit_kl)).mean(0)[1:]).all()
    assert all(t < g for t, g in zip(metrics["tuned"]["kl"][:-1], metrics["logit"]["kl"][:-1]))
    card = (tl.DEFAULT_WEIGHTS.parent / "MODEL_CARD_TUNED_LENS.md").read_text()
    assert f"**{metrics['tuned']['kl'][0]:.3f}**" in card and f"{metrics['heldout']['positions']:,} positions" in card
