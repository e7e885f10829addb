"""The unit tier holds what its name says: tiny random models, no subprocess.

While a unit test's fixtures are set up and while it runs, loading weights from the embedded model's
folder (all-MiniLM-L6-v2, and the built-in masked-LM made from it) and starting a subprocess raise
``TierViolation``, which names the tier the test belongs in. Reading the embedded tokenizer is fine:
the tiny models share its vocabulary (tests/support/tiny.py).

Unit tests run torch on one thread (tests/support/threads.py says why).
"""

from __future__ import annotations

import subprocess
from contextlib import contextmanager
from functools import cache
from pathlib import Path

import pytest

from tests.support.threads import one_torch_thread

MOVE = "unit tests use tiny random models and start no process: this test belongs in tests/integration"


@cache
def _embedded() -> Path:
    """The embedded model's folder. Imported here, not at the top: xdist's controller loads this file too."""
    # captum imports matplotlib, whose first import on a machine builds a font cache by running fc-list: done
    # here, before the no-subprocess guard, so a fresh machine (CI) passes as one with the cache does.
    import matplotlib.font_manager  # noqa: F401

    from vizcore.model.loading import BUILTIN_MODELS, DEFAULT_MODEL

    return Path(BUILTIN_MODELS[DEFAULT_MODEL].source()).resolve()


class TierViolation(BaseException):
    """A BaseException, so that no ``except Exception`` in the code under test can turn it into a message."""


@contextmanager
def unit_tier_guard():
    from transformers import PreTrainedModel

    embedded = _embedded()
    load_weights = PreTrainedModel.from_pretrained.__func__

    def from_pretrained(cls, source, *args, **kwargs):
        path = Path(str(source)).resolve()
        if path == embedded or embedded in path.parents:
            raise TierViolation(f"{cls.__name__}.from_pretrained('{source}') loads the embedded model: {MOVE}")
        return load_weights(cls, source, *args, **kwargs)

    def no_process(self, args, *rest, **kwargs):
        raise TierViolation(f"subprocess {args!r}: {MOVE}")

    with one_torch_thread(), pytest.MonkeyPatch.context() as patch:
        patch.setattr(PreTrainedModel, "from_pretrained", classmethod(from_pretrained))
        patch.setattr(subprocess.Popen, "__init__", no_process)
        yield


# Setup as well as the call: a module- or session-scoped fixture is built in the setup of its first test.
@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    with unit_tier_guard():
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    with unit_tier_guard():
        return (yield)
