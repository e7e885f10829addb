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
