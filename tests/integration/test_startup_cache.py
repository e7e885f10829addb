"""The disk cache of the opening heatmaps: it must give exactly what the model computes, or nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from vizcore.attention.examples import DEFAULT_TEXT, startup_inputs
from vizcore.attention.extract import extract_attention
from vizcore.model import catalog, startup_cache
from vizcore.model.loading import DEFAULT_MODEL, load_model

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def loaded():
    return load_model(DEFAULT_MODEL, device="cpu")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(startup_cache.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(catalog, "accelerator_possible", lambda: False)  # as on this CPU-only machine
    return tmp_path


def test_prepare_writes_then_verifies_and_load_equals_the_model_bit_for_bit(cache, loaded):
    first = startup_cache.prepare(loaded)
    assert [e["status"] for e in first["entries"]] == ["written"] * len(startup_inputs())
    assert len(list(cache.glob("*.npz"))) == len(startup_inputs())
    second = startup_cache.prepare(loaded)
    assert [e["status"] for e in second["entries"]] == ["verified"] * len(startup_inputs())
    for text, pair in startup_inputs():
        fresh = extract_attention(loaded, text, pair)
        cached = startup_cache.load(DEFAULT_MODEL, "auto", text, pair)
        assert cached is not None and startup_cache.same_result(cached, fresh)
        assert cached.attention.dtype == np.float32 and np.array_equal(cached.attention, fresh.attention)
        assert cached.tokens == fresh.tokens and cached.offsets == fresh.offsets
        assert cached.to_dict() == fresh.to_dict()


def test_a_changed_stored_entry_is_replaced_by_the_fresh_computation(cache, loaded):
    result = extract_attention(loaded, DEFAULT_TEXT)
    assert startup_cache.store(result, "cpu") == "written"
    wrong = extract_attention(loaded, DEFAULT_TEXT)
    wrong.attention[0, 0, 0, 0] += 1e-7  # one value off in the last digits
    assert startup_cache.store(wrong, "cpu") == "replaced"
    assert startup_cache.store(result, "cpu") == "replaced"
    assert startup_cache.same_result(startup_cache.load(DEFAULT_MODEL, "cpu", DEFAULT_TEXT, None), result)


def test_misses_other_text_pair_model_device_and_gpu_machines(cache, loaded, monkeypatch):
    startup_cache.store(extract_attention(loaded, DEFAULT_TEXT), "cpu")
    assert startup_cache.load(DEFAULT_MODEL, "auto", DEFAULT_TEXT, None) is not None
    assert startup_cache.load(DEFAULT_MODEL, "auto", DEFAULT_TEXT, "   ") is not None  # a blank pair is no pair
    assert startup_cache.load(DEFAULT_MODEL, "auto", DEFAULT_TEXT + " ", None) is None
    assert startup_cache.load(DEFAULT_MODEL, "auto", DEFAULT_TEXT, "A pair.") is None
    assert startup_cache.load("bert-base-uncased", "auto", DEFAULT_TEXT, None) is None
    assert startup_cache.load(DEFAULT_MODEL, "cuda", DEFAULT_TEXT, None) is None
    # A machine with GPU device nodes: torch decides what "auto" means.
    gpu = [False]
    fake_torch = SimpleNamespace(cuda=SimpleNamespace(is_available=lambda: gpu[0]),
                                 backends=SimpleNamespace(mps=SimpleNamespace(is_available=lambda: False)))
    monkeypatch.setattr(catalog, "accelerator_possible", lambda: True)
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    assert startup_cache.load(DEFAULT_MODEL, "auto", DEFAULT_TEXT, None) is not None  # torch sees no GPU
    gpu[0] = True
    assert startup_cache.load(DEFAULT_MODEL, "auto", DEFAULT_TEXT, None) is None  # auto would mean cuda
    assert startup_cache.load(DEFAULT_MODEL, "cpu", DEFAULT_TEXT, None) is not None


@pytest.mark.parametrize("change", ["versions", "files", "code", "threads"])
def test_anything_the_numbers_depend_on_changes_the_key(cache, loaded, monkeypatch, change):
    startup_cache.store(extract_attention(loaded, DEFAULT_TEXT), "cpu")
    original = startup_cache.fingerprint

    def changed() -> dict:
        prints = original()
        if change == "versions":
            prints["versions"]["torch"] += ".other"
        elif change == "files":
            prints["files"][0] = (prints["files"][0][0], prints["files"][0][1] + 1, prints["files"][0][2])
        elif change == "code":
            prints["code"] = "0" * 64
        else:
            current = prints["threads"]["OMP_NUM_THREADS"]  # set by make test; another count either way
            prints["threads"]["OMP_NUM_THREADS"] = "3" if current == "1" else "1"
        return prints

    monkeypatch.setattr(startup_cache, "fingerprint", changed)
    assert startup_cache.load(DEFAULT_MODEL, "auto", DEFAULT_TEXT, None) is None


def test_a_damaged_entry_is_a_miss_never_an_error(cache, loaded):
    startup_cache.store(extract_attention(loaded, DEFAULT_TEXT), "cpu")
    (entry,) = cache.glob("*.npz")
    entry.write_bytes(entry.read_bytes()[:1000])
    assert startup_cache.load(DEFAULT_MODEL, "auto", DEFAULT_TEXT, None) is None
    entry.write_text("not an npz")
    assert startup_cache.load(DEFAULT_MODEL, "auto", DEFAULT_TEXT, None) is None
    assert startup_cache.store(extract_attention(loaded, DEFAULT_TEXT), "cpu") == "written"
    assert startup_cache.load(DEFAULT_MODEL, "auto", DEFAULT_TEXT, None) is not None


def test_only_the_default_model_on_the_cpu_is_stored(cache, loaded, tiny_bert_dir):
    tiny = extract_attention(load_model(str(tiny_bert_dir), device="cpu"), DEFAULT_TEXT)
    assert startup_cache.store(tiny, "cpu") == "skipped"
    assert startup_cache.store(extract_attention(loaded, DEFAULT_TEXT), "cuda") == "skipped"
    assert not list(cache.glob("*.npz"))


def test_the_first_page_modules_do_not_import_torch(cache, loaded):
    """What the Home page needs to show a cached heatmap must not wait for torch's seconds of import."""
    startup_cache.prepare(loaded)
    code = (
        "import sys\n"
        "import ui.state, ui.attention_component\n"
        "from vizcore.model import startup_cache\n"
        "from vizcore.attention.examples import DEFAULT_TEXT\n"
        "from vizcore.attention.payload import attention_payload\n"
        "result = startup_cache.load('all-MiniLM-L6-v2', 'auto', DEFAULT_TEXT, None)\n"
        "assert attention_payload(result, 2)['n'] == len(result.tokens)\n"  # what Home's view is sent
        "print(sorted(m for m in ('torch', 'transformers', 'tokenizers') if m in sys.modules))\n"
    )
    if any(Path(node).exists() for node in catalog._ACCELERATOR_NODES):
        pytest.skip("a GPU may be present: the device list then rightly asks torch")
    # The thread settings are part of the cache's key: the child reads them as this process does.
    threads = {name: os.environ[name] for name in startup_cache._THREAD_ENV if name in os.environ}
    env = {"PATH": "/usr/bin:/bin", startup_cache.CACHE_ENV: str(cache), "PYTHONPATH": str(ROOT), **threads}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_cli_prepare_writes_the_cache_and_reports_each_entry(cache):
    env = {"PATH": "/usr/bin:/bin", startup_cache.CACHE_ENV: str(cache), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-m", "vizcore", "prepare", "--format", "json"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["model"] == DEFAULT_MODEL and report["cache_dir"] == str(cache)
    assert [(e["text"], e["pair"]) for e in report["entries"]] == startup_inputs()
    assert {e["status"] for e in report["entries"]} == {"written"}
    assert len(list(cache.glob("*.npz"))) == len(startup_inputs())


def test_an_unwritable_cache_folder_is_reported_not_raised(cache, loaded, monkeypatch):
    blocker = cache / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(startup_cache.CACHE_ENV, str(blocker / "startup"))  # a folder inside a file
    assert startup_cache.store(extract_attention(loaded, DEFAULT_TEXT), "cpu") == "unwritable"
    assert startup_cache.load(DEFAULT_MODEL, "auto", DEFAULT_TEXT, None) is None


def test_a_students_own_sentence_is_a_miss_without_fingerprinting_and_is_never_stored(cache, loaded, monkeypatch):
    """Every page run of a sentence that is not an opening one asks the cache first: 4 ms of fingerprint each."""
    own = "Anna read a book in the quiet library before lunch."
    assert (own, None) not in startup_inputs()
    assert startup_cache.store(extract_attention(loaded, own), "cpu") == "skipped"
    assert list(cache.glob("*.npz")) == []
    calls = []
    original = startup_cache.fingerprint
    monkeypatch.setattr(startup_cache, "fingerprint", lambda: calls.append(1) or original())
    assert startup_cache.load(DEFAULT_MODEL, "cpu", own, None) is None and calls == []
    startup_cache.store(extract_attention(loaded, DEFAULT_TEXT), "cpu")
    assert startup_cache.load(DEFAULT_MODEL, "cpu", DEFAULT_TEXT, None) is not None and calls
