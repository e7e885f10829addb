"""Integration tier: the embedded all-MiniLM-L6-v2, the shipped masked-LM, CLI subprocesses, training runs."""

import pytest


@pytest.fixture(scope="session")
def minilm():
    """The embedded model (a ``LoadedModel``), loaded once for the tier (read-only, as the app's shared model is)."""
    from vizcore.model.loading import DEFAULT_MODEL, load_model  # here: xdist's controller loads this file too

    return load_model(DEFAULT_MODEL, device="cpu")
