"""Which results store a server uses: ``VIZCORE_RESULTS`` (and ``VIZCORE_RESULTS_DAYS``, how long answers are kept).

- unset or "": the SQLite file ``results.sqlite3`` in the app's cache folder (``$XDG_CACHE_HOME/vizcore``, that is
  ``~/.cache/vizcore``), created on first use;
- ``sqlite:///path/to/results.sqlite3`` (or a plain path ending in .sqlite3, .sqlite or .db): that file; replicas on
  one machine (deploy/replicas.py) share it;
- ``postgresql://user:password@host:port/database`` (or ``postgres://``): that PostgreSQL database, shared by replicas
  on several machines (vizcore/results/store_postgres.py);
- anything else is refused at the server's start, in one line (``vizcore.serve.settings.check_environment``), and so
  is a database the server cannot open (ui/launch.py opens the store before Streamlit starts).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Mapping

from vizcore.errors import VizError
from vizcore.results.store import SqliteResults, SqlResults

RESULTS_ENV = "VIZCORE_RESULTS"
DAYS_ENV = "VIZCORE_RESULTS_DAYS"
DEFAULT_DAYS = 30
FILE_NAME = "results.sqlite3"
SQLITE_SUFFIXES = (".sqlite3", ".sqlite", ".db")
POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def default_path() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "vizcore" / FILE_NAME


def results_place(value: str | None) -> Path | str:
    """The SQLite file or the PostgreSQL address ``value`` names (see the module's doc), or a VizError naming the
    variable (and never a password)."""
    value = (value or "").strip()
    if value.startswith(POSTGRES_SCHEMES):
        from vizcore.results.store_postgres import EXAMPLE, address_problem, shown_address

        problem = address_problem(value)
        if problem:
            raise VizError(f"{RESULTS_ENV}={shown_address(value)!r} is not a valid setting ({problem}): give "
                           f"{EXAMPLE}.")
        return value
    return results_path(value)


def results_path(value: str | None) -> Path:
    """The SQLite file ``value`` names (see the module's doc), or a VizError naming the variable."""
    value = (value or "").strip()
    if not value:
        return default_path()
    if value.startswith("sqlite:///"):
        path = value.removeprefix("sqlite://")
        if path.strip("/"):
            return Path(path).expanduser()
    elif "://" not in value and value.lower().endswith(SQLITE_SUFFIXES):
        return Path(value).expanduser()
    raise VizError(f"{RESULTS_ENV}={value!r} is not a valid setting: give sqlite:///path/to/results.sqlite3 (or a "
                   f"file ending in {', '.join(SQLITE_SUFFIXES)}), a postgresql://user:password@host:port/database "
                   f"address, or leave it unset for {default_path()}.")


def retention_days(environ: Mapping[str, str] | None = None) -> float:
    """``VIZCORE_RESULTS_DAYS``: days above 0 (worded as vizcore.serve.settings words its numbers, which checks this
    one at the server's start: it imports this module, so this one parses its own number)."""
    text = (os.environ if environ is None else environ).get(DAYS_ENV, "").strip()
    if not text:
        return float(DEFAULT_DAYS)
    try:
        days = float(text)
    except ValueError:
        days = float("nan")
    if not 0 < days < float("inf"):
        raise VizError(f"{DAYS_ENV}={text!r} is not a valid setting: give a number above 0.")
    return days


def check_results(environ: Mapping[str, str] | None = None) -> None:
    """VizError when ``VIZCORE_RESULTS`` or ``VIZCORE_RESULTS_DAYS`` is not a valid value (nothing is opened)."""
    environ = os.environ if environ is None else environ
    results_place(environ.get(RESULTS_ENV))
    retention_days(environ)


def open_results(value: str | None = None, days: float | None = None) -> SqlResults:
    """The store ``value`` names, opened: created and migrated if need be (a ResultsError when it cannot be)."""
    place = results_place(value)
    days = DEFAULT_DAYS if days is None else days
    if isinstance(place, str):
        from vizcore.results.store_postgres import PostgresResults

        return PostgresResults(place, days)
    return SqliteResults(place, days)


_server: SqlResults | None = None
_server_lock = threading.Lock()


def server_results() -> SqlResults:
    """This server process's store, opened on first use (every session shares it; the store has its own lock)."""
    global _server
    with _server_lock:
        if _server is None:
            _server = open_results(os.environ.get(RESULTS_ENV), retention_days())
        return _server
