"""``python -m vizcore ablate`` and ``patch`` on the shipped masked-LM: the fixed JSON fields, the numbers
against the Fill-mask command and the patching identities, and one clear line for every bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from tests.unit.test_fill_mask_cli import run_cli

FRANCE, ITALY = "The capital of France is [MASK].", "The capital of Italy is [MASK]."


def cli_json(capsys, *argv) -> dict:
    code, out, err = run_cli(capsys, *argv, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def test_ablate_reports_zero_based_heads_and_the_plain_answer_as_fill_mask_gives_it(capsys):
    payload = cli_json(capsys, "ablate", "--text", FRANCE, "--heads", "6:4,6:6", "--top-k", "5")
    assert {"model", "heads", "masks"} <= payload.keys() and payload["model"] == "minilm-mlm-tuned"
    assert payload["heads"] == [[5, 3], [5, 5]]
    (mask,) = payload["masks"]
    assert mask["index"] == 6 and len(mask["baseline"]) == len(mask["ablated"]) == 5
    plain = cli_json(capsys, "fill-mask", "--text", FRANCE, "--top-k", "5")["masks"][0]["predictions"]
    assert [(p["token"], p["score"]) for p in plain] == [(p["token"], p["score"]) for p in mask["baseline"]]
    assert mask["ablated"] != mask["baseline"]  # two of the last layer's heads matter here
    assert all(set(p) == {"token", "score"} and 0 <= p["score"] <= 1 for p in mask["ablated"])


def test_mean_ablation_differs_from_zero_ablation(capsys):
    zero = cli_json(capsys, "ablate", "--text", FRANCE, "--heads", "1:1,2:2,3:3", "--mode", "zero")
    mean = cli_json(capsys, "ablate", "--text", FRANCE, "--heads", "1:1,2:2,3:3", "--mode", "mean")
    assert zero["masks"][0]["ablated"] != mean["masks"][0]["ablated"]


def test_patch_gives_one_row_per_state_and_the_identities_hold(capsys):
    payload = cli_json(capsys, "patch", "--clean", FRANCE, "--corrupt", ITALY, "--answer", "paris",
                       "--contrast", "rome")
    assert {"model", "tokens", "recovered"} <= payload.keys()
    recovered = np.asarray(payload["recovered"])
    tokens = payload["tokens"]
    assert tokens[4] == "italy" and recovered.shape == (6 + 1, len(tokens))
    mask, differing = tokens.index("[MASK]"), 4
    assert recovered[-1, mask] == pytest.approx(1.0, abs=1e-5)
    assert np.abs(np.delete(recovered[-1], mask)).max() < 1e-5
    assert recovered[0, differing] == pytest.approx(1.0, abs=1e-5)
    assert np.abs(np.delete(recovered[0], differing)).max() < 1e-5


def test_attention_attribution_is_complete_within_one_percent_per_layer_at_the_default_steps(capsys):
    payload = cli_json(capsys, "attention-attribution", "--text", FRANCE)
    attributions = np.asarray(payload["attributions"], dtype=np.float64)
    assert attributions.shape == (6, 12, 9, 9) and payload["steps"] == 20 and payload["mask_index"] == 6
    for layer, check in enumerate(payload["completeness"]):  # summed here, not read from the JSON's "sum"
        delta = payload["target"]["score"] - check["f_zero"]
        assert check["layer"] == layer and abs(attributions[layer].sum() - delta) <= 0.01 * abs(delta), check
    first = payload["heads_ranked"][0]
    assert first["score"] == pytest.approx(attributions.max(axis=(2, 3)).max(), rel=1e-6)
    assert all(edge["share"] >= 0.4 for edge in payload["tree"]["edges"])
    assert payload["tree"]["edges"][0]["query"] == 6  # the tree starts at the mask


def test_attribution_patching_ranks_the_exact_sweep_s_effects_alike(capsys):
    payload = cli_json(capsys, "attribution-patching", "--clean", FRANCE, "--corrupt", ITALY, "--answer", "paris",
                       "--contrast", "rome", "--compare")
    exact, estimate = (np.asarray(payload["exact"]["heads"]), np.asarray(payload["heads"]))
    ranks = [np.argsort(np.argsort(x.ravel(), kind="stable")) for x in (exact, estimate)]
    assert payload["agreement"]["spearman"]["heads"] == pytest.approx(np.corrcoef(*ranks)[0, 1])
    assert payload["agreement"]["spearman"]["heads"] > 0.9  # measured 0.996 (docs/WHY.md)
    assert payload["agreement"]["spearman"]["states"] > 0.9  # measured 0.999
    assert payload["logit_difference"] == pytest.approx(payload["exact"]["logit_difference"], abs=1e-4)


@pytest.mark.parametrize(("argv", "message"), [
    (["ablate", "--text", "No mask here.", "--heads", "1:1"], "no mask"),
    (["ablate", "--text", FRANCE, "--heads", "7:1"], "Layer 7, head 1 does not exist (7:1): the model has no layer 7"),
    (["ablate", "--text", FRANCE, "--heads", "0:1"], "does not exist"),
    (["ablate", "--text", FRANCE, "--heads", "a:b"], "is not a head"),
    (["ablate", "--text", FRANCE, "--heads", ","], "No heads to ablate"),
    (["ablate", "--text", FRANCE, "--heads", "1:1", "--top-k", "0"], "top-k must be between"),
    (["ablate", "--text", FRANCE, "--heads", "1:1", "--top-k", "16"], "between 1 and 15"),  # the page's slider
    (["attribute", "--text", FRANCE, "--method", "integrated-gradients", "--steps", "401"],
     "between 1 and 400"),  # the page's slider
    (["patch", "--clean", FRANCE, "--corrupt", "The capital of the United Kingdom is [MASK].", "--answer", "paris",
      "--contrast", "london"], "same number of tokens"),
    (["patch", "--clean", FRANCE, "--corrupt", ITALY, "--answer", "antidisestablishment", "--contrast", "rome"],
     "not one token"),
    (["patch", "--clean", FRANCE, "--corrupt", "The capital of Italy is Rome.", "--answer", "paris",
      "--contrast", "rome"], "no mask"),
    (["attention-attribution", "--text", FRANCE, "--layer", "7"], "--layer must be between 1 and 6"),
    (["attention-attribution", "--text", FRANCE, "--steps", "0"], "between 1 and 400"),
    (["attribution-patching", "--clean", FRANCE, "--corrupt", ITALY, "--answer", "paris", "--contrast", "paris"],
     "the same word"),
])
def test_bad_input_exits_2_with_one_line(capsys, argv, message):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err, err


def test_the_entry_point_prints_json(capsys):
    """The JSON through main() here; the command as a program of its own with an argument it lacks (refused before
    torch is imported: a run on the model in a process of its own cost about 6 CPU-s more)."""
    assert cli_json(capsys, "ablate", "--text", FRANCE, "--heads", "3:5,4:1")["heads"] == [[2, 4], [3, 0]]
    done = subprocess.run([sys.executable, "-m", "vizcore", "ablate", "--text", FRANCE, "--format", "json"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "error: python -m vizcore ablate: the following arguments are required: --heads (see --help)"]
