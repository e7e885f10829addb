"""``python -m vizcore fill-mask`` with the embedded encoder (tiny masked-LMs: tests/unit/test_fill_mask_cli.py)."""

import pytest

from tests.unit.test_fill_mask_cli import run_cli


@pytest.mark.parametrize(("model", "message"), [
    ("all-MiniLM-L6-v2", "no trained masked-LM head"),
])
def test_models_without_a_masked_lm_head_are_refused(capsys, model, message):
    code, out, err = run_cli(capsys, "fill-mask", "--text", "The [MASK].", "--model", model)
    assert code == 2 and out == "" and message in err
