"""``python -m vizcore export-model``: the built-ins as standard Hugging Face folders, checked against the
app by plain transformers in a clean process (no vizcore importable, another working directory, offline).

Bit for bit with eager attention, the app's (it needs the attention weights). transformers' default,
SDPA, runs the same weights through a fused kernel that sums in another order: its logits differ by
float rounding (about 6e-6 here, on logits of size ~10), so there the check is a tolerance of 1e-4 and
the same top-5 words.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from vizcore.cli import main
from vizcore.decoder.vocabulary import banned_tokens
from vizcore.mlm.fill_mask import fill_mask
from vizcore.mlm.nsp import next_sentence
from vizcore.model.catalog import CAUSAL_MODEL, DEFAULT_MODEL, MLM_MODEL, NSP_MODEL
from vizcore.model.loading import load_model
from vizcore.model.run import Capture, run

ROOT = Path(__file__).resolve().parents[2]
PROBE = "The capital of France is [MASK]."
CASES = [
    (PROBE, None),
    ("The cat sat on the [MASK] and fell asleep.", None),
    ("Zoë’s café in 東京 serves crème brûlée 🍮 — «très [MASK]»!", None),
    ("The cat sat on the mat.", "The dog lay on the [MASK]."),
]
PLAIN = """
import importlib.util, json, sys
import numpy as np, torch
from transformers import AutoModel, AutoModelForMaskedLM, AutoTokenizer

assert importlib.util.find_spec("vizcore") is None, "vizcore is importable"
mlm_dir, base_dir, out = sys.argv[1:4]
cases, threads = json.loads(sys.argv[4]), int(sys.argv[5])
torch.set_num_threads(threads)  # the app's thread count: a matmul's summation order may depend on it
arrays, top5 = {}, {}
loads = {
    "mlm-eager": (AutoModelForMaskedLM, mlm_dir, "eager"),
    "mlm-default": (AutoModelForMaskedLM, mlm_dir, None),
    "mlm-as-base": (AutoModel, mlm_dir, "eager"),
    "base-eager": (AutoModel, base_dir, "eager"),
    "base-default": (AutoModel, base_dir, None),
}
for key, (auto, folder, attention) in loads.items():
    model = auto.from_pretrained(folder, **({"attn_implementation": attention} if attention else {})).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    for i, (text, pair) in enumerate(cases):
        inputs = tokenizer(text, pair, return_tensors="pt")
        with torch.no_grad():
            output = model(**inputs, output_hidden_states=True, output_attentions=attention == "eager")
        arrays[f"{key}/{i}/ids"] = inputs["input_ids"][0].numpy()
        arrays[f"{key}/{i}/hidden"] = torch.stack([h[0] for h in output.hidden_states]).numpy()
        if attention == "eager":
            arrays[f"{key}/{i}/attention"] = torch.stack([a[0] for a in output.attentions]).numpy()
        if hasattr(output, "logits"):
            arrays[f"{key}/{i}/logits"] = output.logits[0].numpy()
            if i == 0:
                mask = int((inputs["input_ids"][0] == tokenizer.mask_token_id).nonzero()[0, 0])
                probs = torch.softmax(output.logits[0, mask], dim=-1)
                best = probs.topk(5)
                top5[key] = {"tokens": tokenizer.convert_ids_to_tokens(best.indices.tolist()),
                             "scores": best.values.tolist(), "architecture": model.config.architectures}
np.savez(out, **arrays)
print(json.dumps({"top5": top5, "transformers": __import__("transformers").__version__}))
"""


def export(name: str, out: Path, *extra: str, process: bool = False) -> dict:
    """``vizcore export-model`` as a program of its own (``process``: the first export), else its main() here:
    the same code, without importing torch and transformers again (about 5 s a process on 2 cores)."""
    argv = ["export-model", name, "--out", str(out), *extra]
    if process:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
        done = subprocess.run([sys.executable, "-m", "vizcore", *argv], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)
    out_text, err_text = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out_text), contextlib.redirect_stderr(err_text):
        code = main(argv)
    assert code == 0, err_text.getvalue()
    return json.loads(out_text.getvalue())


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("exported")
    return {MLM_MODEL: export(MLM_MODEL, root / MLM_MODEL, process=True),
            DEFAULT_MODEL: export(DEFAULT_MODEL, root / DEFAULT_MODEL)}


@pytest.fixture(scope="module")
def plain(exported, tmp_path_factory):
    """What plain transformers computes from the two folders, in a process that cannot import vizcore."""
    work = tmp_path_factory.mktemp("plain-cwd")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(work), "HF_HUB_OFFLINE": "1",
           **{k: os.environ[k] for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS") if k in os.environ}}
    argv = [exported[MLM_MODEL]["path"], exported[DEFAULT_MODEL]["path"], str(work / "out.npz"),
            json.dumps(CASES), str(torch.get_num_threads())]
    done = subprocess.run([sys.executable, "-c", PLAIN, *argv], cwd=work, env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    with np.load(work / "out.npz") as arrays:
        return dict(arrays), json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def app_runs():
    """The app's record of each case: the MLM-tuned model with its head and bare, and the embedded encoder."""
    capture = Capture(hidden=True, logits=True)
    models = {"mlm": load_model(MLM_MODEL, device="cpu", head="mlm"),
              "mlm-as-base": load_model(MLM_MODEL, device="cpu"), "base": load_model(DEFAULT_MODEL, device="cpu")}
    return {key: [run(loaded, text, pair, capture) for text, pair in CASES] for key, loaded in models.items()}


def test_the_report_names_the_class_files_and_weights_hash(exported):
    for name, architecture, auto in ((MLM_MODEL, "BertForMaskedLM", "AutoModelForMaskedLM"),
                                     (DEFAULT_MODEL, "BertModel", "AutoModel")):
        report = exported[name]
        folder = Path(report["path"])
        assert (report["model"], report["architecture"], report["auto_class"], report["dtype"]) == (
            name, architecture, auto, "float32")
        assert report["files"] == {p.name: p.stat().st_size for p in folder.iterdir()}
        assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} <= set(report["files"])
        assert report["weights_sha256"] == hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()
        config = json.loads((folder / "config.json").read_text())
        assert config["architectures"] == [architecture] and config["dtype"] == "float32"
        assert not any("attn_implementation" in key for key in config)  # the loader chooses, not the folder
        assert report["files"]["model.safetensors"] > 4 * 22_000_000  # fp32, ~22.7 M parameters


@pytest.mark.parametrize(("plain_key", "app_key"), [("mlm-eager", "mlm"), ("mlm-as-base", "mlm-as-base"),
                                                    ("base-eager", "base")])
def test_plain_transformers_with_eager_attention_reproduces_the_app_bit_for_bit(plain, app_runs, plain_key, app_key):
    arrays, _ = plain
    for i, record in enumerate(app_runs[app_key]):
        assert arrays[f"{plain_key}/{i}/ids"].tolist() == record.input_ids.tolist()
        assert np.array_equal(arrays[f"{plain_key}/{i}/hidden"], record.hidden_states)
        assert np.array_equal(arrays[f"{plain_key}/{i}/attention"], record.attention)
        if app_key == "mlm":
            assert np.array_equal(arrays[f"{plain_key}/{i}/logits"], record.logits)


def test_the_default_sdpa_attention_differs_only_by_rounding(plain, app_runs):
    arrays, _ = plain
    for i, (tuned, base) in enumerate(zip(app_runs["mlm"], app_runs["base"])):
        np.testing.assert_allclose(arrays[f"mlm-default/{i}/logits"], tuned.logits, atol=1e-4, rtol=0)
        np.testing.assert_allclose(arrays[f"base-default/{i}/hidden"], base.hidden_states, atol=1e-4, rtol=0)


def test_the_france_probe_gives_the_apps_top5_with_paris(plain):
    _, report = plain
    app = fill_mask(load_model(MLM_MODEL, device="cpu", head="mlm"), PROBE).masks[0].predictions
    assert "paris" in [p.token for p in app]
    for key in ("mlm-eager", "mlm-default"):
        assert report["top5"][key]["architecture"] == ["BertForMaskedLM"]
        assert report["top5"][key]["tokens"] == [p.token for p in app]
        np.testing.assert_allclose(report["top5"][key]["scores"], [p.score for p in app], atol=1e-6, rtol=0)


def test_force_rewrites_the_same_bytes(exported, monkeypatch):
    """Here, not in a process, and without HF_HUB_OFFLINE (which the first export had): the bytes must not
    depend on it (transformers wrote "local_files_only" into tokenizer_config.json: 592 bytes, then 593)."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    report = exported[MLM_MODEL]
    again = export(MLM_MODEL, Path(report["path"]), "--force")
    assert again["weights_sha256"] == report["weights_sha256"] and again["files"] == report["files"]


# ---- the pre-training (MLM + NSP) and causal-LM built-ins --------------------------------------

PAIRS = [("The man went to the store.", "He bought a gallon of milk."),
         ("The man went to the store.", "Penguins are flightless birds."),
         ("She opened the", None)]
PLAIN_HEADS = """
import importlib.util, json, sys
import numpy as np, torch
from transformers import AutoModelForCausalLM, AutoModelForPreTraining, AutoTokenizer

assert importlib.util.find_spec("vizcore") is None, "vizcore is importable"
nsp_dir, causal_dir, out = sys.argv[1:4]
cases, threads = json.loads(sys.argv[4]), int(sys.argv[5])
torch.set_num_threads(threads)
arrays, configs = {}, {}
for key, auto, folder in (("nsp", AutoModelForPreTraining, nsp_dir), ("causal", AutoModelForCausalLM, causal_dir)):
    model = auto.from_pretrained(folder, attn_implementation="eager").eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    configs[key] = {"architectures": model.config.architectures, "is_decoder": model.config.is_decoder,
                    "class": type(model).__name__}
    for i, (text, pair) in enumerate(cases):
        inputs = tokenizer(text, pair, return_tensors="pt")
        with torch.no_grad():
            output = model(**inputs)
        for name in ("logits", "prediction_logits", "seq_relationship_logits"):
            if getattr(output, name, None) is not None:
                arrays[f"{key}/{i}/{name}"] = output[name][0].numpy()
    if key == "causal":  # a prompt as the app reads it: [CLS] and the words, no closing [SEP]
        ids = tokenizer("Once upon a", return_tensors="pt")["input_ids"][:, :-1]
        with torch.no_grad():
            arrays["causal/generated"] = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=12,
                                                        do_sample=False)[0, ids.shape[1]:].numpy()
        configs[key]["eos_token_id"] = model.generation_config.eos_token_id
        configs[key]["suppress_tokens"] = model.generation_config.suppress_tokens
np.savez(out, **arrays)
print(json.dumps(configs))
"""


@pytest.fixture(scope="module")
def exported_heads(tmp_path_factory):
    root = tmp_path_factory.mktemp("exported-heads")
    return {name: export(name, root / name) for name in (NSP_MODEL, CAUSAL_MODEL)}


@pytest.fixture(scope="module")
def plain_heads(exported_heads, tmp_path_factory):
    """Both folders loaded by plain transformers (AutoModelForPreTraining, AutoModelForCausalLM), no vizcore."""
    work = tmp_path_factory.mktemp("plain-heads-cwd")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(work), "HF_HUB_OFFLINE": "1",
           **{k: os.environ[k] for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS") if k in os.environ}}
    argv = [exported_heads[NSP_MODEL]["path"], exported_heads[CAUSAL_MODEL]["path"], str(work / "out.npz"),
            json.dumps(PAIRS), str(torch.get_num_threads())]
    done = subprocess.run([sys.executable, "-c", PLAIN_HEADS, *argv], cwd=work, env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    with np.load(work / "out.npz") as arrays:
        return dict(arrays), json.loads(done.stdout.strip().splitlines()[-1])


def test_the_new_builtins_report_their_pretraining_and_causal_classes(exported_heads, plain_heads):
    _, configs = plain_heads
    for name, key, architecture, auto, decoder in (
            (NSP_MODEL, "nsp", "BertForPreTraining", "AutoModelForPreTraining", False),
            (CAUSAL_MODEL, "causal", "BertLMHeadModel", "AutoModelForCausalLM", True)):
        report = exported_heads[name]
        assert (report["architecture"], report["auto_class"], report["dtype"]) == (architecture, auto, "float32")
        config = json.loads((Path(report["path"]) / "config.json").read_text())
        assert config["architectures"] == [architecture] and bool(config.get("is_decoder")) is decoder
        expected = {"architectures": [architecture], "is_decoder": decoder, "class": architecture}
        assert {k: configs[key][k] for k in expected} == expected


def test_plain_generate_on_the_exported_decoder_stops_and_continues_as_the_app(plain_heads):
    from vizcore.decoder.generation import generate
    from vizcore.decoder.sampling import Settings

    arrays, configs = plain_heads
    causal = load_model(CAUSAL_MODEL, device="cpu", head="causal-lm")
    assert configs["causal"]["eos_token_id"] == causal.tokenizer.sep_token_id  # generate() stops at [SEP]
    never = banned_tokens(causal).never  # and never draws a token training never taught, as the app
    assert configs["causal"]["suppress_tokens"] == never.nonzero().flatten().tolist() and never.sum() > 900
    ours = [s.token_id for s in generate(causal, "Once upon a", 12, Settings(temperature=0)).steps]
    assert arrays["causal/generated"].tolist() == ours


def test_plain_transformers_reproduces_both_pretraining_heads_and_the_causal_head(plain_heads):
    arrays, _ = plain_heads
    nsp = load_model(NSP_MODEL, device="cpu", head="nsp")
    causal = load_model(CAUSAL_MODEL, device="cpu", head="causal-lm")
    for i, (text, pair) in enumerate(PAIRS):
        with torch.no_grad():
            ours = nsp.model(**nsp.tokenizer(text, pair, return_tensors="pt"))
            theirs_causal = causal.model(**causal.tokenizer(text, pair, return_tensors="pt"), use_cache=False)
        assert np.array_equal(arrays[f"nsp/{i}/prediction_logits"], ours.prediction_logits[0].numpy())
        assert np.array_equal(arrays[f"nsp/{i}/seq_relationship_logits"], ours.seq_relationship_logits[0].numpy())
        assert np.array_equal(arrays[f"causal/{i}/logits"], theirs_causal.logits[0].numpy())
        if pair is not None:  # the app's P(IsNext) is the plain model's softmax, label 0
            expected = torch.from_numpy(arrays[f"nsp/{i}/seq_relationship_logits"]).double().softmax(-1)[0]
            assert next_sentence(nsp, text, pair).is_next == pytest.approx(float(expected), abs=1e-6)
