"""The results store in PostgreSQL: one database for replicas on several machines (issue 50 B). No streamlit here.

``PostgresResults`` behaves as ``SqliteResults`` does, with the same messages: both are ``SqlResults`` (the same SQL
and the same methods; tests/support/results_contract.py checks both stores). What is PostgreSQL's own:

- **Migrations under a lock.** The same ``MIGRATIONS``, in one transaction that first takes a transaction-level
  advisory lock (``pg_advisory_xact_lock``, released at COMMIT): two replicas starting at once wait for each other,
  and the second finds the migrations applied. One addition to the first: SQLite numbers every row itself (``rowid``,
  the order in which answers stored at the same time are listed); PostgreSQL has no such column, so it gets one of
  that name (an identity column), and the SQL that orders by it reads the same on both.
- **Durable at COMMIT.** ``record`` is one transaction, and PostgreSQL answers COMMIT once its WAL is flushed to disk
  (``synchronous_commit=on``, the default, set again on each connection in case a database turned it off): an
  answer acknowledged outlives the app and the database server killed with SIGKILL.
- **One connection per process, behind the store's lock**, as SQLite's: each call is a round trip of a few
  milliseconds, and a pool would add a package and its connections per replica against the server's
  ``max_connections`` (100 by default) for nothing a class waits on. A connection found lost (the server restarted)
  is opened again and the call tried once more; every write may be repeated (an upsert, or a change to the value it
  already has).
- **Failures in sentences.** Not reached, refused, or lost: a ``ResultsError`` that names the database (its address
  without the password) and says what to do; never a traceback, never the password. A statement waits at most
  ``BUSY_TIMEOUT_MS`` (15 s), as a SQLite write waits for the file's lock.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Sequence
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg.conninfo import conninfo_to_dict

from vizcore.results.store import BUSY_TIMEOUT_MS, ResultsError, SqlResults, T

SCHEMES = ("postgresql://", "postgres://")
EXAMPLE = "postgresql://user:password@host:5432/database"
MIGRATIONS_LOCK = 0x76697A636F7265  # "vizcore" as a number: the advisory lock every replica takes to migrate
# What PostgreSQL adds to a migration (the module's doc says why): migration number -> statements after its own.
ADDED = {1: ("ALTER TABLE answers ADD COLUMN rowid BIGINT GENERATED ALWAYS AS IDENTITY",)}
# libpq's settings this store uses unless the address sets them: a server that is down or gone from the network is
# said within seconds (connecting) or 30 s (a connection whose packets go unanswered), not after TCP's own timeouts
# (minutes), while every session of the replica waits behind the store's lock.
CONNECTION = {"connect_timeout": "5", "application_name": "vizcore", "keepalives": "1", "keepalives_idle": "10",
              "keepalives_interval": "5", "keepalives_count": "3", "tcp_user_timeout": "30000"}


def shown_address(url: str) -> str:
    """``url`` as a message may show it: without its password (in the user part or as ``?password=``)."""
    parts = urlsplit(url)
    users, at, hosts = parts.netloc.rpartition("@")
    netloc = f"{users.partition(':')[0]}{at}{hosts}"
    query = "&".join(item for item in parts.query.split("&") if item and not item.lower().startswith("password="))
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def address_problem(url: str) -> str | None:
    """What is wrong with a ``postgresql://`` address (nothing is connected to), or None."""
    try:
        params = conninfo_to_dict(url)
    except psycopg.Error as error:
        return " ".join(str(error).split())
    for port in filter(None, str(params.get("port", "")).split(",")):
        if not port.isdigit() or not 0 < int(port) < 65536:
            return f"the port {port!r} is not a number from 1 to 65535"
    if not params.get("dbname"):
        return "it names no database"
    return None


class PostgresResults(SqlResults):
    """The store in the PostgreSQL database at ``url`` (``postgresql://user:password@host:port/database``), shared by
    every process that opens the same address; the database must exist (docs/RESULTS.md says how to make it)."""

    def __init__(self, url: str, retention_days: float = 30.0, clock: Callable[[], float] = time.time) -> None:
        super().__init__(retention_days, clock)
        self.url, self.where = url, shown_address(url)
        self.named = f"results database {self.where}"
        problem = address_problem(url)
        if problem:
            raise ResultsError(f"The results database address {self.where} cannot be used ({problem}): give "
                               f"{EXAMPLE}.")
        self._params = conninfo_to_dict(url)
        self._db: psycopg.Connection | None = None
        self._opened = False
        try:
            self._migrate()
            self.purge()
        except ResultsError:
            self.close()
            raise
        self._opened = True

    def describe(self) -> str:
        return f"PostgreSQL database {self.where}"

    def _connection(self) -> psycopg.Connection:
        if self._db is None or self._db.closed:
            settings = {key: value for key, value in CONNECTION.items() if key not in self._params}
            db = psycopg.connect(self.url, autocommit=True, **settings)
            db.execute("SET synchronous_commit = on")
            db.execute(f"SET statement_timeout = {BUSY_TIMEOUT_MS}")
            self._db = db
        return self._db

    def _call(self, work: Callable[[psycopg.Connection], T], saving: bool) -> T:
        """``work`` on the connection under the lock; a lost connection is opened again and ``work`` tried once
        more. A failure is a ResultsError (``saving``: with the write's words)."""
        with self._lock:
            for attempt in range(2):
                try:
                    return work(self._connection())
                except psycopg.OperationalError as error:
                    failure = error
                    if attempt == 0 and self._db is not None and self._db.broken:
                        continue
                except psycopg.Error as error:
                    failure = error
                break
        raise self._failure(failure, saving) from None

    def _failure(self, error: psycopg.Error, saving: bool) -> ResultsError:
        said = " ".join(str(error).split())  # libpq's messages run over lines: the server's start says one
        password = str(self._params.get("password") or "")
        if password:
            said = said.replace(password, "***")
        if not self._opened:
            return ResultsError(f"The {self.named} cannot be used ({said}). Check that PostgreSQL runs there and "
                                f"that VIZCORE_RESULTS ({EXAMPLE}) names a database it has, with a user and password "
                                "it accepts (docs/RESULTS.md, \"PostgreSQL\").")
        if saving:
            return ResultsError(f"The results could not be saved ({self.named}: {said}). Try again in a moment.")
        return ResultsError(f"The {self.named} cannot be read ({said}). Try again in a moment.")

    def _read(self, sql: str, args: Sequence[object] = ()) -> list[tuple]:
        return self._call(lambda db: _Cursor(db).execute(sql, args).fetchall(), saving=False)

    def _write(self, work: Callable[[Any], T]) -> T:
        def transaction(db: psycopg.Connection) -> T:
            with db.transaction():
                return work(_Cursor(db))

        return self._call(transaction, saving=True)

    def _migrating(self, work: Callable[[Any], None]) -> None:
        def transaction(db: psycopg.Connection) -> None:
            with db.transaction():
                db.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATIONS_LOCK,))
                db.execute("SET LOCAL statement_timeout = 0")  # a migration of a large table takes what it takes
                work(_Cursor(db))

        self._call(transaction, saving=True)

    def _statements(self, number: int, sql: str) -> list[str]:
        return [*super()._statements(number, sql), *ADDED.get(number, ())]

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()


class _Cursor:
    """A psycopg cursor that takes the stores' SQL: its ``?`` parameters become psycopg's ``%s`` (that SQL holds no
    ``?`` or ``%`` of its own)."""

    def __init__(self, db: psycopg.Connection) -> None:
        self.cursor = db.cursor()

    def execute(self, sql: str, args: Sequence[object] = ()) -> psycopg.Cursor:
        return self.cursor.execute(sql.replace("?", "%s"), tuple(args) or None)

    def executemany(self, sql: str, rows: Sequence[Sequence[object]]) -> psycopg.Cursor:
        self.cursor.executemany(sql.replace("?", "%s"), rows)
        return self.cursor
