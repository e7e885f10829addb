"""Integration tier: the embedded all-MiniLM-L6-v2, the shipped masked-LM, CLI subprocesses, training runs."""

import pytest

from vizcore.model.loading import DEFAULT_MODEL, LoadedModel, load_model


@pytest.fixture(scope="session")
def minilm() -> LoadedModel:
    """The embedded model, loaded once for the tier (read-only, as the app's shared model is)."""
    return load_model(DEFAULT_MODEL, device="cpu")
