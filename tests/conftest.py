"""Shared fixtures: tiny random-config models saved to disk (no download), built once per run (see tests/support).

The conftest files import torch and transformers inside their fixtures and hooks, not at the top: pytest-xdist's
controller process loads them too, before it starts the workers, and ran nothing of them but imports (about 5 s
of each tier's start on 2 cores)."""

from __future__ import annotations

import time
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


@pytest.fixture(scope="session", autouse=True)
def isolated_results(tmp_path_factory):
    """Tests (and the servers they start) keep their answers in a file of their own, never the user's results."""
    from vizcore.results.stores import RESULTS_ENV

    patch = pytest.MonkeyPatch()
    patch.setenv(RESULTS_ENV, str(tmp_path_factory.mktemp("results") / "results.sqlite3"))
    yield
    patch.undo()


@pytest.fixture(scope="session", autouse=True)
def small_fill_mask_model():
    """The suite fills blanks with the small ``minilm-mlm-tuned`` (and so do the servers it starts), even where the
    base-size model is installed, so a test's numbers and its time do not depend on the machine: the tests of the
    base-size masked-LM and of the app's choice unset it (tests/integration/test_mpnet_mlm.py)."""
    from vizcore.model.catalog import FILL_MASK_ENV, MLM_MODEL

    patch = pytest.MonkeyPatch()
    patch.setenv(FILL_MASK_ENV, MLM_MODEL)
    yield
    patch.undo()


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """``tiny_model_dir("bert" | "distilbert" | "gpt2" | "mpnet")`` -> a saved Hugging Face folder (with LM head)."""
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


# ---- the order the test processes take the files in (make test) ------------------------------------------

def pytest_collection_modifyitems(config, items):
    """Each browser file, then its share of the integration and AppTest files; the unit files last.

    pytest-xdist's loadfile hands a process the next file when its own is nearly done; the Makefile turns off
    its reordering (most tests first), which ran the browser files last, alone on both cores for the last
    1.5 minutes at 70 % CPU: a browser test waits for its page to settle between runs, its Chromium and
    server idle. Interleaved, browser files run beside files that compute (files of the two kinds take about
    the same time in all). The unit tier's short files end the processes together.
    """
    files: dict[str, list] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::")[0], []).append(item)
    by_tier: dict[str, list[str]] = {}
    for name in files:
        parts = name.split("/")
        by_tier.setdefault(parts[1] if len(parts) > 2 and parts[0] == "tests" else "", []).append(name)
    browser = by_tier.pop("e2e", [])
    units = by_tier.pop("unit", [])
    others = [name for tier in by_tier.values() for name in tier]
    for group in (browser, others):  # many tests first within each kind (xdist's own order)
        group.sort(key=lambda name: -len(files[name]))
    order: list[str] = []
    share = len(others) / max(len(browser), 1)
    for index, name in enumerate(browser):
        order.append(name)
        order += others[round(index * share):round((index + 1) * share)]
    # With browser files the slices above cover every other file; without any (make test-app, one file) none ran.
    order += others[round(len(browser) * share):] + units
    assert sorted(order) == sorted(files), "every file once"
    items[:] = [item for name in order for item in files[name]]


# ---- one line per tier at the end of a session (make test runs the four tiers in one) ----------------------

TIERS = ("unit", "integration", "app", "e2e")


def pytest_sessionstart(session):
    session.config._tier_clock = time.time()


def pytest_terminal_summary(terminalreporter, config):
    """``tier unit: 1361 passed, 0 failed, 71.3 s of test time, 0:02-1:05`` per tier that ran: its tests'
    setup, call and teardown summed over the processes, and when (m:ss from the session's start) its first
    test began and its last ended. The tiers' files are interleaved (pytest_collection_modifyitems), so
    their spans overlap."""
    begin = getattr(config, "_tier_clock", None)
    tiers: dict[str, dict] = {}
    per_file: dict[str, float] = {}
    per_test: dict[str, float] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            nodeid, when = getattr(report, "nodeid", ""), getattr(report, "when", None)
            parts = nodeid.split("/")
            if when is None or len(parts) < 3 or parts[0] != "tests" or parts[1] not in TIERS:
                continue
            tier = tiers.setdefault(parts[1], {"passed": 0, "failed": 0, "seconds": 0.0, "start": None, "stop": 0.0})
            duration = getattr(report, "duration", 0.0)  # a collection error's report has none
            tier["seconds"] += duration
            per_file[nodeid.split("::")[0]] = per_file.get(nodeid.split("::")[0], 0.0) + duration
            per_test[nodeid] = per_test.get(nodeid, 0.0) + duration
            if report.failed:
                tier["failed"] += 1
            elif report.passed and when == "call":
                tier["passed"] += 1
            start, stop = getattr(report, "start", 0) or None, getattr(report, "stop", 0) or 0.0
            if start is not None:
                tier["start"] = start if tier["start"] is None else min(tier["start"], start)
            tier["stop"] = max(tier["stop"], stop)
    if begin is None or not tiers:
        return
    _write_times(config, "test-times.tsv", "file", per_file)
    _write_times(config, "test-durations.tsv", "test", per_test)

    def clock(moment: float) -> str:
        seconds = max(moment - begin, 0)
        return f"{int(seconds // 60)}:{int(seconds % 60):02d}"

    for name in TIERS:
        if name in tiers:
            tier = tiers[name]
            span = f"{clock(tier['start'])}-{clock(tier['stop'])}" if tier["start"] is not None else "-"
            terminalreporter.write_line(f"tier {name}: {tier['passed']} passed, {tier['failed']} failed, "
                                        f"{tier['seconds']:.1f} s of test time, {span}")


def _write_times(config, file_name: str, what: str, times: dict[str, float]) -> None:
    """Each test file's (test-times.tsv) or test's (test-durations.tsv) time, setup, call and teardown summed,
    slowest first, in artifacts/: where the suite's minutes go (bench/suite.py keeps them per run)."""
    out = Path(config.rootpath) / "artifacts" / file_name
    try:
        out.parent.mkdir(exist_ok=True)
        lines = [f"{seconds:.1f}\t{name}" for name, seconds in sorted(times.items(), key=lambda kv: -kv[1])]
        out.write_text(f"seconds\t{what}\n" + "\n".join(lines) + "\n", encoding="utf-8")
    except OSError:  # a read-only checkout still gets the summary lines
        pass
