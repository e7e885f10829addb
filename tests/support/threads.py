"""Torch on one thread, for small models: they gain nothing from a second thread, and on shared cores
torch's waiting threads spin (on this 2-core machine the unit tier took 45 CPU-s with two threads, 19
with one; the tiny Transformer's reversal run 80-130 s with two, 9 s with one)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def one_torch_thread() -> Iterator[None]:
    import torch  # here: the unit tier's conftest (which xdist's controller loads) imports this module

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
