"""The static catalogue (every built-in listed, its references resolve) and export-model on a tiny
built-in added to it the way a new model would be; the real built-ins' export is in tests/integration."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForMaskedLM, AutoTokenizer

from vizcore.cli import main
from vizcore.errors import VizError
from vizcore.model import catalog
from vizcore.model.catalog import BUILTIN_MODELS, MLM_MODEL, BuiltinModel
from vizcore.model.export import export_model, weights_sha256
from vizcore.model.loading import load_model

TINY = "tiny-catalog-test"
FOLDER_ENV = "VIZCORE_TEST_TINY_FOLDER"
SENTENCES = ["The cat sat on the [MASK].", "Zoë’s café serves crème brûlée 🍮!"]


def tiny_folder() -> Path:
    """The tiny entry's ``folder`` function (named by reference, as the catalogue's are)."""
    return Path(os.environ[FOLDER_ENV])


def shift_mlm_bias(model, head: str) -> None:
    """The tiny entry's ``patch``: a visible change, so an export without the patch would differ."""
    if head != "mlm":
        return
    with torch.no_grad():
        model.cls.predictions.bias += torch.linspace(-3, 3, model.cls.predictions.bias.numel())


@pytest.fixture
def tiny_builtin(tiny_mlm_dir, monkeypatch):
    monkeypatch.setenv(FOLDER_ENV, str(tiny_mlm_dir("bert")))
    entry = BuiltinModel(name=TINY, label="tiny", description="a tiny test model", heads=("base", "mlm"),
                         folder=f"{__name__}:tiny_folder", patch=f"{__name__}:shift_mlm_bias")
    monkeypatch.setitem(BUILTIN_MODELS, TINY, entry)
    return entry


def test_every_builtin_is_listed_with_references_that_resolve():
    rows = {row["name"]: row for row in catalog.available_models()}
    assert list(BUILTIN_MODELS) == [catalog.DEFAULT_MODEL, MLM_MODEL, catalog.NSP_MODEL, catalog.CAUSAL_MODEL,
                                    catalog.BASE_MODEL, catalog.BASE_MLM_MODEL]
    assert rows[MLM_MODEL]["offline"] and rows[MLM_MODEL]["heads"] == ["base", "mlm"]
    assert rows[catalog.NSP_MODEL]["heads"] == ["base", "mlm", "nsp"]
    causal = rows[catalog.CAUSAL_MODEL]
    assert causal["heads"] == ["base", "causal-lm"] and causal["kind"] == "decoder"
    assert BUILTIN_MODELS[catalog.CAUSAL_MODEL].config == (("is_decoder", True),)
    for model in BUILTIN_MODELS.values():
        assert rows[model.name]["label"] == model.label
        assert callable(catalog.resolve(model.folder))
        assert model.patch is None or callable(model.patcher())
    assert BUILTIN_MODELS[MLM_MODEL].patch == "vizcore.mlm.weights:apply_trained_weights"


def test_export_writes_the_patched_model_that_plain_transformers_reproduces(tiny_builtin, tmp_path):
    out = tmp_path / "export"
    report = export_model(TINY, out)
    assert report["architecture"] == "BertForMaskedLM" and report["auto_class"] == "AutoModelForMaskedLM"
    assert report["dtype"] == "float32" and report["path"] == str(out.resolve())
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} <= set(report["files"])
    assert report["files"] == {p.name: p.stat().st_size for p in out.iterdir()}  # no staging left behind
    assert report["weights_sha256"] == weights_sha256(out)
    config = json.loads((out / "config.json").read_text())
    assert config["architectures"] == ["BertForMaskedLM"] and "_attn_implementation" not in config
    ours = load_model(TINY, device="cpu", head="mlm")
    theirs = AutoModelForMaskedLM.from_pretrained(out, attn_implementation="eager").eval()
    unpatched = AutoModelForMaskedLM.from_pretrained(tiny_folder(), attn_implementation="eager").eval()
    tokenizer = AutoTokenizer.from_pretrained(out)
    for text in SENTENCES:
        inputs = tokenizer(text, return_tensors="pt")
        assert inputs["input_ids"].tolist() == ours.tokenizer(text, return_tensors="pt")["input_ids"].tolist()
        with torch.no_grad():
            expected = ours.model(**inputs).logits
            assert torch.equal(theirs(**inputs).logits, expected)
            assert not torch.allclose(unpatched(**inputs).logits, expected)


def test_force_replaces_an_earlier_export_with_the_same_bytes(tiny_builtin, tmp_path):
    first = export_model(TINY, tmp_path / "a")
    (tmp_path / "a" / "notes.txt").write_text("mine")
    with pytest.raises(VizError, match="not empty.*--force"):
        export_model(TINY, tmp_path / "a")
    again = export_model(TINY, tmp_path / "a", force=True)
    assert again["weights_sha256"] == first["weights_sha256"]
    assert (tmp_path / "a" / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize(
    ("name", "out", "message"),
    [
        ("no-such-model", "new", "Unknown built-in model 'no-such-model': choose one of all-MiniLM-L6-v2"),
        ("bert-base-uncased", "new", "Unknown built-in model"),
        (MLM_MODEL, "a-file", "is a file"),
        (MLM_MODEL, "full", "is not empty"),
        (MLM_MODEL, "a-file/below", "Cannot write to"),
    ],
)
def test_bad_requests_get_one_clear_line_before_any_loading(capsys, tmp_path, monkeypatch, name, out, message):
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    monkeypatch.setattr("vizcore.model.export.load_model", lambda *a, **k: pytest.fail("loaded a model"))
    code = main(["export-model", name, "--out", str(tmp_path / out)])
    _, err = capsys.readouterr()
    assert code == 2 and err.startswith("error: ") and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "new").exists()


def test_a_failed_export_leaves_no_folder_behind(tmp_path, monkeypatch):
    monkeypatch.setenv("VIZCORE_MLM_WEIGHTS", str(tmp_path / "missing.safetensors"))
    with pytest.raises(VizError, match="weights .* are missing"):
        export_model(MLM_MODEL, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_export_of_a_bare_mpnet_builtin_reloads_with_plain_transformers(tiny_model_dir, monkeypatch, tmp_path):
    """MPNet's config has no is_decoder (transformers 5): the export's reload check must not ask for it."""
    from transformers import AutoModel

    folder = tiny_model_dir("mpnet")
    monkeypatch.setenv(FOLDER_ENV, str(folder))
    monkeypatch.setitem(BUILTIN_MODELS, TINY, BuiltinModel(name=TINY, label="tiny", description="a tiny MPNet",
                                                           folder=f"{__name__}:tiny_folder"))
    report = export_model(TINY, tmp_path / "out")
    assert report["architecture"] == "MPNetModel" and report["auto_class"] == "AutoModel"
    theirs = AutoModel.from_pretrained(tmp_path / "out", attn_implementation="eager").eval()
    original = AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
    inputs = AutoTokenizer.from_pretrained(tmp_path / "out")(SENTENCES[0], return_tensors="pt")
    with torch.no_grad():
        assert torch.equal(theirs(**inputs).last_hidden_state, original(**inputs).last_hidden_state)
