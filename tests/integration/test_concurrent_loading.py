"""Two model loads at once in one process (the server's warm-up thread and a page opened by a direct
link) must both succeed: transformers' loading switches process-wide state, so loads take turns."""

from __future__ import annotations

import threading

import torch

from vizcore.model.catalog import CAUSAL_MODEL, DEFAULT_MODEL, NSP_MODEL
from vizcore.model.loading import load_model


def test_loads_in_parallel_threads_all_succeed_and_equal_a_load_alone():
    wanted = [(DEFAULT_MODEL, "base"), (CAUSAL_MODEL, "causal-lm"), (NSP_MODEL, "nsp"), (DEFAULT_MODEL, "base")]
    results: dict[int, object] = {}

    def load(index: int, name: str, head: str) -> None:
        try:
            results[index] = load_model(name, device="cpu", head=head)
        except Exception as error:  # noqa: BLE001 - the test reports whatever a racing load raised
            results[index] = error

    threads = [threading.Thread(target=load, args=(i, *w)) for i, w in enumerate(wanted)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    errors = [r for r in results.values() if isinstance(r, Exception)]
    assert not errors, errors
    alone = load_model(CAUSAL_MODEL, device="cpu", head="causal-lm")
    ids = torch.tensor([[101, 2016, 2441, 1996]])
    with torch.no_grad():
        torch.testing.assert_close(results[1].model(input_ids=ids).logits, alone.model(input_ids=ids).logits,
                                   rtol=0, atol=0)
