"""Shared fixtures: tiny random-config models saved to disk (no download), built once per run (see tests/support)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.tiny import build_tiny_mlm, save_tiny


@pytest.fixture(scope="session", autouse=True)
def isolated_startup_cache(tmp_path_factory):
    """Tests (and the servers they start) use their own startup cache, never the user's."""
    from vizcore.model.startup_cache import CACHE_ENV

    patch = pytest.MonkeyPatch()
    patch.setenv(CACHE_ENV, str(tmp_path_factory.mktemp("startup-cache")))
    yield
    patch.undo()


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """``tiny_model_dir("bert" | "distilbert" | "gpt2")`` -> a saved Hugging Face folder (with LM head)."""
    made: dict[str, Path] = {}

    def make(kind: str = "bert") -> Path:
        if kind not in made:
            made[kind] = save_tiny(kind, tmp_path_factory.mktemp(f"tiny-{kind}"))
        return made[kind]

    return make


@pytest.fixture(scope="session")
def tiny_bert_dir(tiny_model_dir) -> Path:
    return tiny_model_dir("bert")


@pytest.fixture(scope="session")
def tiny_mlm_dir(tmp_path_factory):
    """``tiny_mlm_dir("bert" | "distilbert" | "roberta" | "electra")`` -> a saved masked-LM folder, built once."""
    made: dict[str, Path] = {}

    def make(kind: str) -> Path:
        if kind not in made:
            made[kind] = build_tiny_mlm(kind, tmp_path_factory.mktemp(f"tiny-mlm-{kind}"))
        return made[kind]

    return make
