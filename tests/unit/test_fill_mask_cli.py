"""``python -m vizcore fill-mask``: JSON equal to transformers' pipeline, and one-line errors with exit 2."""

from __future__ import annotations

import json

import numpy as np
import pytest
from transformers import pipeline

from vizcore.cli import build_parser, main
from vizcore.mlm.weights import MLM_MODEL, WEIGHTS_ENV


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("kind", "text"), [
    ("bert", "The capital of France is [MASK]."),
    ("roberta", "The capital of France is [MASK]. The cat sat on the [MASK]."),
])
def test_json_lists_each_mask_with_decoded_words_and_probabilities(capsys, tiny_mlm_dir, kind, text):
    folder = str(tiny_mlm_dir(kind))
    code, out, err = run_cli(capsys, "fill-mask", "--text", text, "--model", folder, "--top-k", "3",
                             "--device", "cpu", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    expected = pipeline("fill-mask", model=folder, device="cpu")(text.replace("[MASK]", "<mask>")
                                                                 if kind == "roberta" else text, top_k=3)
    expected = [expected] if isinstance(expected[0], dict) else expected
    assert data["model"] == folder and len(data["masks"]) == len(expected)
    for mask, rows in zip(data["masks"], expected):
        assert data["tokens"][mask["index"]] in ("[MASK]", "<mask>")
        assert [p["token"] for p in mask["predictions"]] == [r["token_str"].strip() for r in rows]
        np.testing.assert_allclose([p["score"] for p in mask["predictions"]], [r["score"] for r in rows], rtol=1e-4)


def test_iterative_option_fills_every_mask_once(capsys, tiny_mlm_dir):
    code, out, _ = run_cli(capsys, "fill-mask", "--text", "A [MASK] and a [MASK].", "--model",
                           str(tiny_mlm_dir("bert")), "--iterative")
    data = json.loads(out)
    assert code == 0
    assert sorted(step["index"] for step in data["iterative"]) == [m["index"] for m in data["masks"]]
    assert "[MASK]" in data["iterative"][0]["text"] and "[MASK]" not in data["iterative"][-1]["text"]


def test_default_model_is_the_offline_masked_lm(capsys, tmp_path, monkeypatch):
    assert build_parser().parse_args(["fill-mask", "--text", "a [MASK]"]).model == MLM_MODEL
    monkeypatch.setenv(WEIGHTS_ENV, str(tmp_path / "absent.safetensors"))
    code, out, err = run_cli(capsys, "fill-mask", "--text", "The capital of France is [MASK].")
    assert code == 2 and out == ""
    assert "masked-LM weights" in err and "export" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(("argv", "message"), [
    (["--text", "The cat sat on the mat."], "no mask"),
    (["--text", ""], "empty"),
    (["--text", "The [MASK].", "--top-k", "0"], "top-k must be between 1 and 100"),
    (["--text", "The [MASK].", "--top-k", "many"], "invalid int value"),
    ([], "required: --text"),
])
def test_bad_arguments_give_one_line_and_exit_2(capsys, tiny_mlm_dir, argv, message):
    code, out, err = run_cli(capsys, "fill-mask", "--model", str(tiny_mlm_dir("bert")), *argv)
    assert code == 2 and out == "" and message in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(("model", "message"), [
    ("gpt2-folder", "cannot be loaded with a mlm head"),  # the embedded encoder: tests/integration
])
def test_models_without_a_masked_lm_head_are_refused(capsys, tiny_model_dir, model, message):
    name = str(tiny_model_dir("gpt2")) if model == "gpt2-folder" else model
    code, out, err = run_cli(capsys, "fill-mask", "--text", "The [MASK].", "--model", name)
    assert code == 2 and out == "" and message in err
