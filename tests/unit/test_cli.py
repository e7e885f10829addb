"""The CLI's error paths and model list: nothing here loads a model (see tests/integration/test_cli.py)."""

import json

import pytest

from vizcore.cli import main
from vizcore.model.loading import DEFAULT_MODEL


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_models_lists_the_embedded_default(capsys):
    code, out, _ = run_cli(capsys, "models", "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["default"] == DEFAULT_MODEL
    assert data["models"][0]["offline"] is True


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["attention", "--text", ""], "empty"),
        (["attention", "--text", "hi", "--model", "/no/such/model"], "does not exist"),
        (["attention", "--text", "hi", "--model", "not a model"], "neither a built-in"),
        (["attention"], "required: --text"),
        (["attention", "--text", "hi", "--device", "tpu"], "invalid choice"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_cli_bad_input_gives_one_clear_line_and_nonzero_exit(capsys, argv, message):
    code, out, err = run_cli(capsys, *argv)
    assert code != 0 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize(("argv", "said"), [
    (["attention", "--text", "hi", "--bogus", "1"], "python -m vizcore attention: unrecognized arguments: --bogus 1"),
    (["attention", "--text", "hi", "--layer", "0"], "python -m vizcore attention: --layer counts from 1"),
    (["attention", "--text", " "], "python -m vizcore attention: The text is empty"),
    (["generate", "--prompt", "hi", "--temperature", "2.5"], "python -m vizcore generate: The temperature must be"),
    (["fill-mask", "--text", "a [MASK].", "--top-k", "x"], "python -m vizcore fill-mask: argument --top-k"),
])
def test_every_error_names_its_command(capsys, argv, said):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and out == "" and err.startswith(f"error: {said}") and err.count("\n") == 1, err


def _range_cases():
    from vizcore.decoder.ranges import SEED, TEMPERATURE, TOP_K, TOP_P

    for flag, bounds, what in (("--temperature", TEMPERATURE, "temperature"), ("--top-k", TOP_K, "top-k"),
                               ("--top-p", TOP_P, "top-p"), ("--seed", SEED, "seed")):
        for outside in (bounds.low - bounds.step, bounds.high + bounds.step):
            yield flag, f"{outside:g}" if flag in ("--temperature", "--top-p") else str(int(outside)), what


@pytest.mark.parametrize(("flag", "value", "what"), list(_range_cases()))
def test_generate_refuses_what_the_page_cannot_set(capsys, flag, value, what):
    code, out, err = run_cli(capsys, "generate", "--prompt", "hi", flag, value)
    assert code == 2 and out == "" and what in err and err.startswith("error: python -m vizcore generate: "), err


def test_generate_accepts_both_ends_of_every_range_the_page_offers(capsys, tiny_model_dir):
    from vizcore.decoder.ranges import SEED, TEMPERATURE, TOP_K, TOP_P

    folder = str(tiny_model_dir("gpt2"))
    for end in ("low", "high"):
        argv = ["generate", "--prompt", "The cat", "--model", folder, "--max-new-tokens", "1",
                "--temperature", f"{getattr(TEMPERATURE, end):g}", "--top-k", str(int(getattr(TOP_K, end))),
                "--top-p", f"{getattr(TOP_P, end):g}", "--seed", str(int(getattr(SEED, end)))]
        code, out, err = run_cli(capsys, *argv)
        assert code == 0, err
        settings = json.loads(out)["settings"]
        assert settings["temperature"] == getattr(TEMPERATURE, end) and settings["seed"] == getattr(SEED, end)
