"""A figure shared by sessions (a cached view's, ``st.cache_resource``) used by several threads at once: each thread
gets the figure whole. plotly's ``go.Figure(figure)`` is not safe so (it re-parents the shared traces); its
``to_dict`` (what ``st.plotly_chart`` reads), ``deepcopy`` and ``for_projector`` are; every copy a page makes of
a figure goes through ``own_copy``'s lock."""

from __future__ import annotations

import copy
import json
import sys
import threading

import numpy as np
import pytest

from ui.layout import fitted
from ui.lessons.step import _title_above
from vizcore.plot import for_projector, matrix_heatmap, own_copy

THREADS, TRIALS = 6, 8


def _shared():
    return matrix_heatmap(np.arange(64.0).reshape(8, 8), "T", row_labels=list("abcdefgh"))


def _at_once(use) -> list[str]:
    """``use(shared)`` in ``THREADS`` threads released together, switching every microsecond, ``TRIALS`` times:
    what went wrong (a raise, or a figure other than the one a single thread gets)."""
    failures = []
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for _ in range(TRIALS):
            shared = _shared()
            alone = json.dumps(use(_shared()), sort_keys=True, default=str)
            start = threading.Barrier(THREADS)

            def run(shared=shared, start=start, alone=alone):
                start.wait()
                try:
                    if json.dumps(use(shared), sort_keys=True, default=str) != alone:
                        failures.append("another figure")
                except Exception as error:  # noqa: BLE001 - every kind of failure counts
                    failures.append(repr(error)[:100])

            threads = [threading.Thread(target=run) for _ in range(THREADS)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
    finally:
        sys.setswitchinterval(interval)
    return failures


def test_threads_copying_one_shared_figure_at_once_each_get_it_whole():
    """Without the lock, plotly's copies came out as Scatters without their type ("Invalid property ... Scatter:
    'colorbar'") in 997 of 1,200 copies; a clean clone's class of six drawing one lesson step met it."""
    def mine(shared):
        figure = own_copy(shared)
        assert figure is not shared and [t.type for t in figure.data] == ["heatmap"]
        return figure.to_dict()

    assert _at_once(mine) == []


@pytest.mark.parametrize("use", [
    lambda shared: shared.to_dict(),  # st.plotly_chart's own copy
    lambda shared: for_projector(shared).to_dict(),  # ui.layout.for_screen in presenter mode
    lambda shared: copy.deepcopy(shared).to_dict(),  # the lessons' handout
    lambda shared: fitted(shared)[0].to_dict(),  # presenter mode's step
    lambda shared: _title_above(shared)[0].to_dict(),  # a lesson step
], ids=["to_dict", "for_projector", "deepcopy", "fitted", "title_above"])
def test_what_pages_do_with_a_shared_figure_is_safe_in_threads_at_once(use):
    assert _at_once(use) == []
