"""The unit tier keeps to tiny models and no subprocess: its guard (conftest.py) fires, and no unit module
even names what belongs in tests/integration (so a skipped test cannot hide there either)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.conftest import TierViolation
from vizcore.mlm.weights import MLM_MODEL
from vizcore.model.loading import DEFAULT_MODEL, load_model

UNIT = Path(__file__).resolve().parent
GUARD_FILES = {"conftest.py", Path(__file__).name}
FORBIDDEN = {
    r"\bsubprocess\b|\bPopen\b|os\.system": "starts a process",
    r"load_model\(\s*DEFAULT_MODEL\b": "loads the embedded model",
    r"def minilm\b|\bminilm\)": "uses an embedded-model fixture",
    r"\bnew_mlm_model\b|\bmake_mlm_weights\b|tests\.support\.mlm_weights": "builds the full-size masked-LM",
}


@pytest.mark.parametrize(("name", "head"), [(DEFAULT_MODEL, "base"), (MLM_MODEL, "mlm")])
def test_loading_the_embedded_model_in_a_unit_test_is_refused(name, head):
    with pytest.raises(TierViolation, match="embedded model: .* belongs in tests/integration"):
        load_model(name, device="cpu", head=head)


def test_a_subprocess_in_a_unit_test_is_refused():
    with pytest.raises(TierViolation, match="belongs in tests/integration"):
        subprocess.run([sys.executable, "-c", "pass"], check=False)


def test_tiny_models_and_the_embedded_tokenizer_still_load(tiny_bert_dir):
    loaded = load_model(str(tiny_bert_dir), device="cpu")
    assert (loaded.num_layers, loaded.tokenizer.vocab_size) == (2, 30522)


def test_no_unit_module_names_what_belongs_in_integration():
    found = []
    for path in sorted(UNIT.glob("*.py")):
        if path.name in GUARD_FILES:
            continue
        source = path.read_text(encoding="utf-8")
        found += [f"{path.name}: {why} ({match.group(0)!r})" for pattern, why in FORBIDDEN.items()
                  for match in re.finditer(pattern, source)]
    assert not found, "move these to tests/integration: " + "; ".join(found)
