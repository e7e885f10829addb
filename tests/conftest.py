"""Shared fixtures: tiny random-config models saved to disk (no download), built once per run (see tests/support).

The conftest files import torch and transformers inside their fixtures and hooks, not at the top: pytest-xdist's
controller process loads them too, before it starts the workers, and ran nothing of them but imports (about 5 s
of each tier's start on 2 cores)."""

from __future__ import annotations

from pathlib import Path

import pytest


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
        from tests.support.tiny import save_tiny

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
        from tests.support.tiny import build_tiny_mlm

        if kind not in made:
            made[kind] = build_tiny_mlm(kind, tmp_path_factory.mktemp(f"tiny-mlm-{kind}"))
        return made[kind]

    return make
