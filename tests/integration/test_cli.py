"""The CLI against a direct transformers computation on the embedded model, and ``python -m vizcore`` as a program."""

import json
import subprocess
import sys

import numpy as np
import pytest
import torch
from transformers import AutoModel, AutoTokenizer

from vizcore.cli import main
from vizcore.model.loading import BUILTIN_MODELS, DEFAULT_MODEL


@pytest.fixture(scope="module")
def direct():
    folder = str(BUILTIN_MODELS[DEFAULT_MODEL].source())
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModel.from_pretrained(folder, attn_implementation="eager").eval()

    def run(text, pair=None):
        inputs = tokenizer(text, pair, truncation=True, max_length=512, return_tensors="pt")
        with torch.no_grad():
            attentions = model(**inputs, output_attentions=True).attentions
        tokens = tokenizer.convert_ids_to_tokens(inputs["input_ids"][0])
        return tokens, torch.stack([a[0] for a in attentions]).numpy()

    return run


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("text", "pair"),
    [
        ("The animal didn't cross the street because it was too tired.", None),
        ("The cat sat on the mat.", "The dog lay on the rug."),
        ("Zoë’s café in 東京 serves crème brûlée 🍮 — «très bon»!", None),
    ],
)
def test_cli_attention_equals_transformers(capsys, direct, text, pair):
    argv = ["attention", "--text", text, "--format", "json"] + (["--pair", pair] if pair else [])
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    data = json.loads(out)
    tokens, expected = direct(text, pair)
    assert data["tokens"] == tokens
    assert (data["num_layers"], data["num_heads"], data["truncated"]) == (6, 12, False)
    np.testing.assert_allclose(np.asarray(data["attention"]), expected, atol=1e-5)


def test_cli_long_input_is_truncated_to_512_and_still_exact(capsys, direct):
    text = " ".join(f"word{i % 50} is here." for i in range(200))  # about 1,000 tokens
    # The last layer (where any difference in the truncated input would have compounded), not all six: the JSON
    # of every head at 512 tokens is 19 M numbers, 20 s of writing and parsing that test the encoder, not the cut.
    code, out, _ = run_cli(capsys, "attention", "--text", text, "--layer", "6")
    data = json.loads(out)
    tokens, expected = direct(text)
    assert code == 0 and data["truncated"] is True and data["num_input_tokens"] > 512 and data["layers"] == [5]
    assert len(data["tokens"]) == 512 == len(tokens)
    np.testing.assert_allclose(np.asarray(data["attention"], dtype=np.float32), expected[5:], atol=1e-5)


def test_python_dash_m_vizcore_runs_as_a_program():
    done = subprocess.run([sys.executable, "-m", "vizcore", "attention", "--text", "  "],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == "error: python -m vizcore attention: The text is empty: type a sentence."



HELP_SCRIPT = """
import contextlib, io, json, runpy, sys
sys.argv = ["vizcore", "--help"]
top = io.StringIO()
with contextlib.redirect_stdout(top), contextlib.suppress(SystemExit):
    runpy.run_module("vizcore", run_name="__main__")
from vizcore.cli import build_parser
parser = build_parser()
helps = {"": top.getvalue()}
for command in parser._subparsers._group_actions[0].choices:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        parser.parse_args([command, "--help"])
    helps[command] = out.getvalue()
heavy_after_help = sorted(m for m in ("torch", "transformers") if m in sys.modules)
from vizcore.cli import main
BAD_TEXT = [["attention", "--text", " "], ["attention", "--text", "ok", "--layer", "0"], ["nsp", "--text", "A."],
            ["generate", "--prompt", ""], ["fill-mask", "--text", "\u200b"],
            ["similarity", "--text", "a", "--pair", ""]]
errors = {}
for argv in BAD_TEXT:
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(argv)
    errors[" ".join(argv)] = [code, err.getvalue()]
print(json.dumps({"heavy": heavy_after_help, "helps": helps, "errors": errors,
                  "heavy_after_errors": sorted(m for m in ("torch", "transformers") if m in sys.modules)}))
"""


def test_every_help_and_bad_text_in_a_fresh_interpreter_imports_neither_torch_nor_transformers():
    """``python -m vizcore --help`` and each command's ``--help`` in one new interpreter, as a user starts it; then
    empty or invalid text for each command that reads one, refused in a fraction of a second (no torch)."""
    done = subprocess.run([sys.executable, "-c", HELP_SCRIPT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["heavy"] == [], f"--help imported {result['heavy']}"
    helps = result["helps"]
    assert len(helps) >= 19 and {"finetune", "attribute", "corpus"} <= set(helps)
    assert all(text.startswith(f"usage: python -m vizcore {command}".rstrip()) for command, text in helps.items())
    for argv, (code, stderr) in result["errors"].items():
        assert code == 2 and stderr.startswith(f"error: python -m vizcore {argv.split()[0]}: "), (argv, stderr)
    assert result["heavy_after_errors"] == [], f"refusing bad text imported {result['heavy_after_errors']}"
