"""Token attribution on the shipped masked-LM: integrated gradients' completeness at the default steps on
every example sentence (how DEFAULT_STEPS was chosen), and ``python -m vizcore attribute`` (as a program: a bad
input)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from tests.unit.test_fill_mask_cli import run_cli
from vizcore.model.catalog import MLM_MODEL
from vizcore.model.loading import LoadedModel, load_model
from vizcore.why import attribution as attr


@pytest.fixture(scope="module")
def mlm() -> LoadedModel:
    return load_model(MLM_MODEL, device="cpu", head="mlm")


@pytest.mark.parametrize("text", attr.EXAMPLES)
def test_the_completeness_gap_is_under_one_percent_at_the_default_steps(mlm, text):
    result = attr.integrated_gradients(attr.answer_target(mlm, text))
    assert result.steps == attr.DEFAULT_STEPS and result.quadrature == "gausslegendre"
    assert abs(result.delta) > 1e-4  # the answer's probability really moves between baseline and input
    assert result.gap < 0.01, f"{text}: sum {result.total:.6f} vs f(x) - f(baseline) {result.delta:.6f}"


def test_fewer_steps_would_not_do(mlm):
    """The default is the fewest of the measured choices (16, 32, 50, ...) that passes on every example."""
    gaps = [attr.integrated_gradients(attr.answer_target(mlm, text), steps=32).gap for text in attr.EXAMPLES]
    assert max(gaps) > 0.01


def program(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vizcore", "attribute", *args], capture_output=True, text=True,
                          timeout=180)


def test_the_command_gives_the_fixed_fields_and_the_page_s_numbers(capsys, mlm):
    text = "The capital of France is [MASK]."
    code, out, err = run_cli(capsys, "attribute", "--text", text, "--method", "integrated-gradients", "--answer",
                             "paris", "--format", "json")
    assert code == 0, err
    record = json.loads(out)
    assert {"model", "tokens", "attributions", "target", "completeness"} <= set(record)
    assert record["model"] == MLM_MODEL and record["mask_index"] == 6
    assert record["tokens"] == ["[CLS]", "the", "capital", "of", "france", "is", "[MASK]", ".", "[SEP]"]
    expected = attr.attribute(attr.answer_target(mlm, text, "paris"), ["integrated-gradients"])
    assert record["target"] == {"token": "paris", "score": pytest.approx(expected.score, rel=1e-5)}
    np.testing.assert_allclose(record["attributions"], expected.scores["integrated-gradients"], atol=1e-6)
    completeness = record["completeness"]
    assert completeness["sum"] == pytest.approx(sum(record["attributions"]), abs=1e-6)
    assert abs(completeness["sum"] - completeness["delta"]) < 0.01 * abs(completeness["delta"])


def test_the_command_as_a_program_refuses_a_missing_method_in_one_line():
    """Refused before torch is imported; the numbers go through main() in this process (a process of its own on the
    model cost about 6 CPU-s more)."""
    done = program("--text", "The capital of France is [MASK].", "--format", "json")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "error: python -m vizcore attribute: the following arguments are required: --method (see --help)"]


def test_the_other_methods_have_no_completeness_and_bad_answers_are_one_line(capsys):
    code, out, _ = run_cli(capsys, "attribute", "--text", "Birds can [MASK] in the sky.", "--method", "rollout",
                           "--format", "json")
    record = json.loads(out)
    assert code == 0 and record["completeness"] is None and record["target"]["score"] > 0
    assert sum(record["attributions"]) == pytest.approx(1.0, abs=1e-4)  # rollout's row is a distribution
    code, out, err = run_cli(capsys, "attribute", "--text", "Birds can [MASK] in the sky.", "--method", "occlusion",
                             "--answer", "unbelievably", "--format", "json")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "'unbelievably' is not one token for minilm-mlm-tuned" in err
