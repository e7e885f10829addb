"""The MLM training recipe on the embedded encoder: what is shipped, and continuing from shipped weights (the loop's
resume, cadence and best checkpoint on tiny models: tests/unit/test_training_loop.py)."""

import json

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from tools import mlm_training
from tools.mlm_training import (
    MASK_ROW_KEY,
    TrainConfig,
    apply_changed_state,
    changed_state,
    load_tokenizer,
    new_mlm_model,
)
from vizcore.errors import VizError


@pytest.fixture(scope="module")
def tuned():
    """The embedded encoder with a new MLM head, nudged as training would nudge it."""
    tokenizer = load_tokenizer()
    model = new_mlm_model(attn="eager")
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "layer.3" in name or "cls.predictions" in name:
                parameter.add_(0.01 * torch.randn(parameter.shape, generator=generator))
        model.bert.embeddings.word_embeddings.weight[tokenizer.mask_token_id] = 0.5
    return tokenizer, model


def test_changed_state_ships_what_training_changes_and_not_the_frozen_vocabulary(tuned):
    tokenizer, model = tuned
    state = changed_state(model, tokenizer.mask_token_id)
    assert "bert.embeddings.word_embeddings.weight" not in state
    assert "cls.predictions.decoder.weight" not in state
    assert "bert.encoder.layer.3.attention.self.query.weight" in state
    assert torch.all(state[MASK_ROW_KEY] == 0.5)
    size = sum(t.numel() for t in state.values()) * 2  # fp16 bytes
    assert size < 50e6


def test_shipped_state_applied_to_a_fresh_model_gives_the_same_predictions(tuned):
    tokenizer, model = tuned
    state = {k: v.half() for k, v in changed_state(model, tokenizer.mask_token_id).items()}
    fresh = new_mlm_model(attn="eager")
    apply_changed_state(fresh, {k: v.float() for k, v in state.items()}, tokenizer.mask_token_id)
    ids = tokenizer("The cat sat on the [MASK].", return_tensors="pt")["input_ids"]
    model.eval(), fresh.eval()
    with torch.no_grad():
        expected, got = model(input_ids=ids).logits, fresh(input_ids=ids).logits
    assert (expected - got).abs().max() < 0.05  # fp16 storage, nothing else
    assert torch.equal(expected[0, 6].topk(5).indices, got[0, 6].topk(5).indices)


def test_a_warm_start_measures_the_shipped_weights_again_on_this_runs_held_out_set(tuned, tmp_path):
    """The shipped top-5 may come from another held-out set; it must not be the bar a checkpoint beats."""
    tokenizer, model = tuned
    weights = tmp_path / "minilm-mlm.safetensors"
    save_file({k: v.half().contiguous() for k, v in changed_state(model, tokenizer.mask_token_id).items()},
              str(weights))
    shipped = {"step": 500, "heldout_top5": 0.99}  # measured elsewhere: no checkpoint could beat it
    weights.with_suffix(".json").write_text(json.dumps({"best": shipped, "curve": [shipped]}))
    work = tmp_path / "work"
    work.mkdir()
    text = "The cat sat on the mat and the dog slept by the door of the old house. " * 20
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    windows = np.array([[tokenizer.cls_token_id, *ids[i * 62:(i + 1) * 62], tokenizer.sep_token_id]
                        for i in range(4)], dtype=np.int32)
    np.save(work / "train-64.npy", windows)
    np.save(work / "heldout-64.npy", windows)
    config = TrainConfig(steps=500, init_from=str(weights), eval_sequences=0)
    best = mlm_training.train_command(work, config)
    logged = [json.loads(line) for line in (work / "log.jsonl").read_text().splitlines()]
    assert logged[0] == shipped and len(logged) == 2
    again = logged[1]
    assert again["step"] == 500 and again["heldout_set"].startswith("4 of 4 windows")
    assert again["heldout_top5"] < 0.99
    assert best["step"] == 500 and best["heldout_top5"] == again["heldout_top5"]  # the start is the bar
    assert (work / "resume.pt").exists()
    started = load_file(work / "best.safetensors")  # the shipped weights were loaded: their [MASK] row
    assert torch.all(started[MASK_ROW_KEY] == 0.5)

    mlm_training.train_command(work, config)  # resuming does not measure the start again
    assert len((work / "log.jsonl").read_text().splitlines()) == 2
    np.save(work / "heldout-64.npy", windows[:3])  # a rebuilt corpus: another held-out set
    with pytest.raises(VizError, match="evaluated on another held-out set"):
        mlm_training.train_command(work, config)
