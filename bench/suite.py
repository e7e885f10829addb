"""The test suite as CI runs it: a clean clone of the committed HEAD, then ``bash .ci/run``, timed per phase.

    python -m bench.suite            # one run
    python -m bench.suite --runs 3   # three in a row (the "never flaky" check), each timed

Each phase starts where ``make`` echoes its command: the install (venv, uv, one resolve of
requirements-test.txt, Chromium), ruff, then the tests: the four tiers in one pytest session, which ends
with a line per tier (tests/conftest.py: its tests, its summed test time, and when it began and ended).
A run's clone is removed afterwards; its artifacts/*.tsv (each test file's time) and *.log (the browser tests'
servers) are kept in artifacts/suite-run-<n>/.
Each run's install starts from an empty uv cache (``UV_CACHE_DIR`` in the run's folder), as on a machine
that has never downloaded the wheels: every package but a local torch wheel comes from PyPI again.
Writes the section "suite" of docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.report import markdown_table, write_section

ROOT = Path(__file__).resolve().parents[1]
PHASES = [("ruff", re.compile(r"-m ruff check")), ("base model", re.compile(r"-m vizcore install-model")),
          ("tests", re.compile(r"-m pytest "))]
TIER_NAMES = ("unit", "integration", "app", "e2e")
TIER_LINE = re.compile(r"^tier (\w+): (\d+) passed, (\d+) failed, ([\d.]+) s of test time, (\S+)")
SUMMARY = re.compile(r"^=*\s*(\d+) passed(?:, (\d+) \w+)*.* in ([\d.]+)s")
BUDGET_S = 12 * 60


def run_once(number: int, log_dir: Path) -> dict:
    """Clone HEAD, run ``bash .ci/run`` in the clone, return the phases' wall times and the tiers' counts."""
    clone = Path(tempfile.mkdtemp(prefix="suite-clone-"))
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    commit = subprocess.run(["git", "-C", str(clone), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, check=True).stdout.strip()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHONPATH"))}
    uv_cache = Path(tempfile.mkdtemp(prefix="suite-uv-cache-"))  # empty: every wheel is downloaded again
    starts, counts, tiers, load_start = {"install": time.monotonic()}, {}, {}, os.getloadavg()[0]
    log = log_dir / f"suite-run-{number}.log"
    with open(log, "w") as out:
        process = subprocess.Popen(["bash", ".ci/run"], cwd=clone,
                                   env={**env, "CI": "true", "UV_CACHE_DIR": str(uv_cache)}, text=True,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        phase = "install"
        for line in process.stdout:
            out.write(line)
            for name, pattern in PHASES:
                if pattern.search(line) and name not in starts:
                    starts[name], phase = time.monotonic(), name
            if (match := SUMMARY.search(line.strip())) and phase != "install":
                counts[phase] = int(match.group(1))
            if match := TIER_LINE.search(line.strip()):
                tiers[match.group(1)] = {"passed": int(match.group(2)), "failed": int(match.group(3)),
                                         "seconds": float(match.group(4)), "span": match.group(5)}
        rc = process.wait()
    end = time.monotonic()
    kept = log_dir / f"suite-run-{number}"  # where the minutes went and the servers' logs, kept past the clone
    shutil.rmtree(kept, ignore_errors=True)
    for found in (clone / "artifacts").glob("*"):
        if found.suffix in (".tsv", ".log"):
            kept.mkdir(parents=True, exist_ok=True)
            shutil.copy(found, kept / found.name)
    shutil.rmtree(clone, ignore_errors=True)
    shutil.rmtree(uv_cache, ignore_errors=True)
    names = list(starts)
    times = {name: (starts[names[i + 1]] if i + 1 < len(names) else end) - starts[name] for i, name in enumerate(names)}
    return {"commit": commit, "rc": rc, "times": times, "total": end - starts["install"], "counts": counts,
            "tiers": tiers, "load": (load_start, os.getloadavg()[0]), "log": log}


def minutes(seconds: float | None) -> str:
    return "-" if seconds is None else f"{int(seconds // 60)}:{seconds % 60:04.1f}"


def report(runs: list[dict]) -> str:
    header = ["run", "commit", "exit", "install", "ruff", "base model", "tests", "total", *TIER_NAMES,
              "load at start / end"]
    rows = []
    for number, result in enumerate(runs, 1):
        times = result["times"]
        cells = [minutes(times.get(name)) + (f" ({result['counts'][name]})" if name in result["counts"] else "")
                 for name in ("install", "ruff", "base model", "tests")]
        tiers = [f"{t['span']} ({t['passed']}, {t['seconds']:.0f} s)" if (t := result["tiers"].get(name)) else "-"
                 for name in TIER_NAMES]
        rows.append([number, result["commit"], result["rc"], *cells, minutes(result["total"]), *tiers,
                     "{:.1f} / {:.1f}".format(*result["load"])])
    within = sum(r["rc"] == 0 and r["total"] <= BUDGET_S for r in runs)
    return (
        "## Test suite: a clean clone's `bash .ci/run` (bench/suite.py)\n\n"
        f"{len(runs)} run(s) in a row, each a fresh `git clone` of the commit named, then `bash .ci/run` (= `make "
        f"test`), on {os.cpu_count()} cores. Phases by wall clock, m:ss (tests passed); the install creates the venv "
        "with uv from an empty cache (one resolve of requirements-test.txt, downloaded again) and checks Chromium; "
        "the base model is installed once per machine (its folder is found again in a second); "
        "the tests are one pytest session of the four tiers on three processes. Per tier: when its first test began "
        "and its last ended (m:ss into the session; the tiers' files are interleaved, tests/conftest.py), its tests "
        "passed, and its tests' summed time over the processes. "
        f"{within} of {len(runs)} passed within the {BUDGET_S // 60}-minute budget.\n\n"
        + markdown_table(header, rows))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1, help="clean-clone runs in a row (default 1)")
    parser.add_argument("--no-write", action="store_true", help="print the table, leave docs/BENCHMARKS.md alone")
    args = parser.parse_args()
    log_dir = ROOT / "artifacts"
    log_dir.mkdir(exist_ok=True)
    runs = []
    for number in range(1, args.runs + 1):
        runs.append(run_once(number, log_dir))
        print(f"run {number}: exit {runs[-1]['rc']}, {minutes(runs[-1]['total'])} (log {runs[-1]['log']})",
              file=sys.stderr)
    body = report(runs)
    print(body)
    if not args.no_write:
        write_section("suite", body)
    return max(r["rc"] for r in runs)


if __name__ == "__main__":
    sys.exit(main())
