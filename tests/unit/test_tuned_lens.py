"""The tuned lens on a tiny random masked-LM: against the logit lens, a translator applied by hand, training,
resuming, loading and the command line's JSON."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForMaskedLM

from tools.training_loop import RESUME, read_curve, train
from tools.tuned_lens_training import LensRecipe, TrainConfig, measure
from vizcore.cli import main
from vizcore.errors import VizError
from vizcore.mlm import fill_mask as fm
from vizcore.mlm import tuned_lens as tl
from vizcore.mlm.fill_mask import fill_mask
from vizcore.mlm.tuned_lens import LensTally, TunedLens, load_tuned_lens, save_tuned_lens, tuned_lens_for
from vizcore.model.catalog import MLM_MODEL
from vizcore.model.loading import load_model

TEXT = "The cat [MASK] on the mat and the dog [MASK] by the door."
LAYERS, HIDDEN = 3, 32  # tests/support/tiny.py SIZE
SEQ = 16


@pytest.fixture(scope="module")
def tiny(tiny_mlm_dir):
    folder = tiny_mlm_dir("bert")
    direct = AutoModelForMaskedLM.from_pretrained(str(folder), attn_implementation="eager").eval()
    return load_model(str(folder), device="cpu", head="mlm"), direct


def random_lens(seed: int = 3, scale: float = 0.2) -> TunedLens:
    lens = TunedLens(LAYERS, HIDDEN)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        lens.weight.copy_(torch.randn(lens.weight.shape, generator=generator) * scale)
        lens.bias.copy_(torch.randn(lens.bias.shape, generator=generator))
    return lens.eval()


def test_an_untrained_translator_is_exactly_the_logit_lens(tiny):
    result = fill_mask(tiny[0], TEXT, lens=TunedLens(LAYERS, HIDDEN))
    logit, tuned = result.lens, result.tuned_lens
    assert tuned is not None and tuned.probs.shape == logit.probs.shape == (LAYERS + 1, 2, 5)
    np.testing.assert_array_equal(tuned.token_ids, logit.token_ids)
    np.testing.assert_array_equal(tuned.probs, logit.probs)
    np.testing.assert_array_equal(tuned.kl_to_final, logit.kl_to_final)


def test_the_tuned_lens_is_the_head_on_a_hand_translated_hidden_state(tiny):
    loaded, direct = tiny
    lens = random_lens()
    result = fill_mask(loaded, TEXT, lens=lens, lens_top_k=4)
    inputs = loaded.tokenizer(TEXT, return_tensors="pt")
    with torch.no_grad():
        states = direct(**inputs, output_hidden_states=True).hidden_states
        masks = result.mask_indices
        final = direct.cls(states[-1][0, masks]).softmax(-1)  # (M, V)
        for row, state in enumerate(states):
            h = state[0, masks]  # (M, D)
            if row < LAYERS:
                a, b = lens.weight[row], lens.bias[row]
                h = h + h @ a.T + b  # h + A h + b, one position per row
            p = direct.cls(h).softmax(-1)  # (M, V)
            top = p.topk(4, dim=-1)
            np.testing.assert_array_equal(result.tuned_lens.token_ids[row], top.indices.numpy())
            np.testing.assert_allclose(result.tuned_lens.probs[row], top.values.numpy(), rtol=1e-4, atol=1e-6)
            kl = (final * (final.log() - p.log())).sum(-1)
            np.testing.assert_allclose(result.tuned_lens.kl_to_final[row], kl.numpy(), rtol=1e-3, atol=1e-5)
    assert not np.allclose(result.tuned_lens.probs[0], result.lens.probs[0])  # the translator changed row 0
    np.testing.assert_allclose(result.tuned_lens.probs[-1], result.lens.probs[-1])  # the output is not translated
    assert result.tuned_lens.kl_to_final[-1] == pytest.approx([0, 0], abs=1e-5)


def test_agreement_and_kl_tallies_equal_a_loop_over_positions():
    logits = torch.randn(4, 9, 50, generator=torch.Generator().manual_seed(0)) * 3  # (L1, N, V)
    tally = LensTally.empty(4)
    tally.add(logits[:, :5])
    tally.add(logits[:, 5:])
    logp = torch.log_softmax(logits.double(), -1).numpy()
    final = np.exp(logp[-1])
    for row in range(4):
        kl = [float((final[n] * (logp[-1, n] - logp[row, n])).sum()) for n in range(9)]
        top1 = [logp[row, n].argmax() == logp[-1, n].argmax() for n in range(9)]
        top5 = [logp[-1, n].argmax() in np.argsort(-logp[row, n])[:5] for n in range(9)]
        means = tally.means()
        assert means["kl"][row] == pytest.approx(np.mean(kl), rel=1e-4)
        assert means["top1"][row] == pytest.approx(np.mean(top1))
        assert means["top5"][row] == pytest.approx(np.mean(top5))
    assert tally.means()["kl"][-1] == pytest.approx(0, abs=1e-6) and tally.means()["top1"][-1] == 1.0


# ---- training -------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def corpus(tmp_path_factory, tiny):
    """Windows of random ordinary tokens, [CLS] ... [SEP], as build-corpus writes them (seq_len 16)."""
    tokenizer = tiny[0].tokenizer
    folder = tmp_path_factory.mktemp("lens-corpus")
    rng = np.random.default_rng(0)
    for split, rows in (("train", 64), ("heldout", 8)):
        body = rng.integers(2000, 8000, size=(rows, SEQ - 2))
        windows = np.concatenate([np.full((rows, 1), tokenizer.cls_token_id), body,
                                  np.full((rows, 1), tokenizer.sep_token_id)], axis=1).astype(np.int32)
        np.save(folder / f"{split}-{SEQ}.npy", windows)
    return folder


def lens_config(**changes) -> TrainConfig:
    return TrainConfig(**{"steps": 4, "batch_size": 8, "eval_every": 2, "eval_sequences": 0, "seq_len": SEQ,
                          "lr": 0.5, **changes})


def run(work, corpus, tiny, config: TrainConfig) -> dict:
    return train(config, work, lambda config: LensRecipe(config, corpus, loaded=tiny[0]))


def test_a_few_training_steps_lower_the_kl_below_the_logit_lens(tmp_path, corpus, tiny):
    run(tmp_path, corpus, tiny, lens_config())
    curve = read_curve(tmp_path)
    assert [record["step"] for record in curve] == [0, 2, 4]
    assert curve[0]["tuned"]["kl"] == pytest.approx(curve[0]["logit"]["kl"])  # step 0: the logit lens
    # measured again here, independently of the recipe's own evaluation
    state = load_file(str(tmp_path / "best.safetensors"))
    trained = TunedLens(LAYERS, HIDDEN)
    trained.load_state_dict(state)
    recipe = LensRecipe(lens_config(), corpus, loaded=tiny[0])
    measured = measure(recipe, trained, recipe.heldout)
    logit_kl, tuned_kl = measured["logit"]["kl"], measured["tuned"]["kl"]
    assert all(t < l for t, l in zip(tuned_kl[:-1], logit_kl[:-1])), (tuned_kl, logit_kl)
    assert tuned_kl[-1] == pytest.approx(0, abs=1e-5)


class Stopped(Exception):
    """A sitting killed in the middle of its run."""


def test_a_resumed_run_ends_where_an_unbroken_one_does(tmp_path, corpus, tiny):
    unbroken, broken = tmp_path / "unbroken", tmp_path / "broken"
    run(unbroken, corpus, tiny, lens_config())

    class Killed(LensRecipe):
        calls = 0

        def loss(self, rows, generator):
            Killed.calls += 1
            if Killed.calls == 4:  # after step 2's evaluation and resume.pt, in the middle of step 4
                raise Stopped
            return super().loss(rows, generator)

    with pytest.raises(Stopped):
        train(lens_config(), broken, lambda config: Killed(config, corpus, loaded=tiny[0]))
    assert torch.load(broken / RESUME, weights_only=False)["step"] == 2
    run(broken, corpus, tiny, lens_config())  # the next sitting continues from resume.pt
    one, two = (torch.load(path / RESUME, weights_only=False) for path in (unbroken, broken))
    assert one["step"] == two["step"] == 4
    for key in ("weight", "bias"):
        assert torch.equal(one["model"][key], two["model"][key])
    strip = [{k: v for k, v in r.items() if k not in ("time", "eval_seconds")} for r in read_curve(unbroken)]
    assert strip == [{k: v for k, v in r.items() if k not in ("time", "eval_seconds")} for r in read_curve(broken)]


# ---- loading --------------------------------------------------------------------------------------------

def test_loading_refuses_a_lens_of_another_shape_with_a_clear_message(tmp_path):
    path = tmp_path / "lens.safetensors"
    save_tuned_lens(TunedLens(2, 16), path, model=MLM_MODEL, model_weights="0" * 16)
    with pytest.raises(VizError, match="2 layers of width 16; this model has 3 layers of width 32"):
        load_tuned_lens(path, LAYERS, HIDDEN)
    with pytest.raises(VizError, match="is missing: make it with python -m tools.tuned_lens_training"):
        load_tuned_lens(tmp_path / "none.safetensors", LAYERS, HIDDEN)
    (tmp_path / "broken.safetensors").write_bytes(b"not a file")
    with pytest.raises(VizError, match="could not be read"):
        load_tuned_lens(tmp_path / "broken.safetensors", LAYERS, HIDDEN)


def test_a_saved_lens_loads_back_in_fp16(tmp_path):
    lens = random_lens()
    path = tmp_path / "lens.safetensors"
    save_tuned_lens(lens, path, model=MLM_MODEL, model_weights="ab" * 8)
    loaded, metadata = load_tuned_lens(path, LAYERS, HIDDEN)
    assert metadata == {"model": MLM_MODEL, "model_weights": "ab" * 8}
    np.testing.assert_array_equal(loaded.weight.numpy(), lens.weight.detach().half().float().numpy())
    assert path.stat().st_size < 2 * tl.translator_parameters(LAYERS, HIDDEN) + 1000


def test_only_the_offline_masked_lm_has_a_tuned_lens_and_the_page_is_told_why(tiny):
    result = fill_mask(tiny[0], TEXT)
    assert result.lens is not None and result.tuned_lens is None
    assert f"trained for one model only, the offline masked-LM `{MLM_MODEL}`" in result.tuned_note


def test_without_lenses_the_predictions_and_attention_are_the_same_and_no_lens_is_read(tiny, monkeypatch):
    """``lenses=False``, for a caller that draws no layer-by-layer view (the lessons' fill-mask step, the CLI's
    fill-mask): the same words, scores and attention rows, and the MLM head is not read at any layer."""
    loaded = tiny[0]
    full = fill_mask(loaded, TEXT, top_k=7, lens=random_lens())
    assert full.lens is not None and full.tuned_lens is not None

    def read_lens(*args, **kwargs):
        raise AssertionError("a lens was read")

    monkeypatch.setattr(fm, "read_lens", read_lens)
    skipped = fill_mask(loaded, TEXT, top_k=7, lens=random_lens(), lenses=False)
    assert [len(m.predictions) for m in skipped.masks] == [7, 7]
    assert skipped.masks == full.masks and skipped.tokens == full.tokens
    np.testing.assert_array_equal(skipped.mask_attention, full.mask_attention)
    assert skipped.lens is None and skipped.tuned_lens is None
    assert skipped.lens_note == skipped.tuned_note == fm.NOT_ASKED


def test_the_shipped_lens_belongs_to_the_masked_lm_weights_it_was_trained_on(tmp_path, monkeypatch):
    mlm_weights = tmp_path / "mlm.safetensors"
    mlm_weights.write_bytes(b"weights of the masked-LM")
    monkeypatch.setenv("VIZCORE_MLM_WEIGHTS", str(mlm_weights))
    for name, fingerprint in (("other", "0" * 16), ("same", tl.file_fingerprint(mlm_weights))):
        path = tmp_path / f"{name}.safetensors"
        save_tuned_lens(random_lens(), path, model=MLM_MODEL, model_weights=fingerprint)
        monkeypatch.setenv(tl.WEIGHTS_ENV, str(path))
        lens, note = tuned_lens_for(MLM_MODEL, LAYERS, HIDDEN)
        if name == "other":
            assert lens is None and "was trained on other" in note and "train it again" in note
        else:
            assert lens is not None and note == ""
    lens, note = tuned_lens_for(MLM_MODEL, 6, 384)
    assert lens is None and "this model has 6 layers of width 384" in note


# ---- command line ---------------------------------------------------------------------------------------

def test_cli_json_has_both_lenses_row_by_row(capsys, tiny, tiny_mlm_dir):
    folder = str(tiny_mlm_dir("bert"))
    code = main(["tuned-lens", "--text", TEXT, "--model", folder, "--top-k", "3", "--device", "cpu",
                 "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    expected = fill_mask(tiny[0], TEXT, lens_top_k=3).lens
    assert [m["index"] for m in data["masks"]] == [i for i, t in enumerate(data["tokens"]) if t == "[MASK]"]
    for m, mask in enumerate(data["masks"]):
        assert [row["layer"] for row in mask["logit"]] == list(range(LAYERS + 1))
        assert [[p["token_id"] for p in row["top"]] for row in mask["logit"]] == expected.token_ids[:, m].tolist()
        np.testing.assert_allclose([row["kl_to_final"] for row in mask["logit"]], expected.kl_to_final[:, m],
                                   rtol=1e-5)
        assert mask["tuned"] is None
    assert MLM_MODEL in data["tuned_note"]


def test_cli_refuses_a_bad_top_k_in_one_line(capsys, tiny_mlm_dir):
    code = main(["tuned-lens", "--text", TEXT, "--model", str(tiny_mlm_dir("bert")), "--top-k", "0"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "top-k must be between 1 and 100" in err[0]


# ---- the card -------------------------------------------------------------------------------------------

def test_the_card_shows_the_measured_numbers_per_layer(tmp_path):
    from tools.tuned_lens_card import card_text

    config = {**TrainConfig().__dict__, "steps": 170}
    record = {"step": 170, "time": "2026-11-27T08:40:00", "lr": 0.0,
              "tuned": {"kl": [2.5, 1.25, 0.0]}, "config": config}
    metrics = {"best": record, "parameters": 2 * (384 * 384 + 384), "bytes": 591_000,
               "heldout": {"set": "1024 of 4111 windows, abcd1234", "positions": 7654, "where": "[MASK] positions",
                           "seconds": 61.0, "load": "3.00, 2.00, 1.00"},
               "logit": {"kl": [4.25, 1.0, 0.0], "top1": [0.01, 0.3, 1.0], "top5": [0.05, 0.5, 1.0]},
               "tuned": {"kl": [2.5, 1.25, 0.0], "top1": [0.1, 0.35, 1.0], "top5": [0.2, 0.55, 1.0]},
               "curve": [{**record, "step": 0, "time": "2026-11-27T07:40:00", "lr": 1.0,
                          "tuned": {"kl": [4.25, 1.0, 0.0]}}, record]}
    text = card_text(metrics, ["stopped once"])
    assert "| embeddings | 4.250 | **2.500** | 1.0% | 10.0% | 5.0% | **20.0%** |" in text
    assert "| layer 2 (the output) | 0.000 | **0.000** |" in text
    assert "below the logit lens's at **1 of 2** translated layers" in text  # layer 1: 1.25 > 1.0
    assert "7,654 positions" in text and "1024 of 4111 windows, abcd1234" in text
    assert "60 minutes" in text and "- stopped once" in text and "0.6 MB" in text
