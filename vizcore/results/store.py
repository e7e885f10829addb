"""The results store: every answer a student saw accepted, kept across restarts (issue 50 B). No streamlit here.

One row per answer (``Row``): the class (its code, "" for a learner alone), the lesson, the phase (``pre`` and
``post``: the quizzes before and after the lesson; ``step``: a lesson step's question in a class), the question's
id, the student (the random id of their browser session), the nickname they typed (or ""), their answer, whether
it was right, the right answer and the question as they were shown it (computed from the model on their screen),
the model, and when (ISO 8601, UTC). A student's last answer to a question of a phase counts: a second one replaces
the first. A class also keeps its row (``classes``): when it opened and ended, and the hash of the teacher's report
key, the only thing that opens its report.

Two stores, one behaviour: ``SqlResults`` holds every method and the SQL, which reads the same on both, and each
store gives its connection. SQLite (``SqliteResults``, the default: one file under the app's cache folder, created on
first use): WAL journal and ``synchronous=FULL``, so ``record`` returns only once the answers are on disk, and a
server killed with SIGKILL the moment after loses none of them; several processes (the replicas of deploy/replicas.py
on one machine) share the file, each write taking SQLite's lock in turn (``busy_timeout``). PostgreSQL
(``PostgresResults`` in store_postgres.py): one database for replicas on several machines. The schema is versioned:
``MIGRATIONS`` is the list of changes, applied in order at open and recorded in ``schema_migrations``; a store made by
a newer version of the app is refused with a message, never changed.

Privacy: answers older than ``retention_days`` (``VIZCORE_RESULTS_DAYS``, default 30) are deleted at open and then at
most once an hour on writing; a class with no answers left goes with them. Nothing stores a name unless the student
typed a nickname.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from dataclasses import astuple, dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

from vizcore.errors import VizError

T = TypeVar("T")
PHASES = ("pre", "post", "step")
MAX_NICKNAME_CHARS = 40
MAX_ANSWER_CHARS = 200
PURGE_EVERY_S = 3600.0
BUSY_TIMEOUT_MS = 15000  # a write waits this long for another process's (100 students at once on 2 replicas)

MIGRATIONS: tuple[str, ...] = (
    # 1: answers and classes
    """
    CREATE TABLE answers (
        class TEXT NOT NULL, lesson TEXT NOT NULL, phase TEXT NOT NULL CHECK (phase IN ('pre', 'post', 'step')),
        question TEXT NOT NULL, student TEXT NOT NULL, nickname TEXT NOT NULL DEFAULT '', answer TEXT NOT NULL,
        correct INTEGER NOT NULL CHECK (correct IN (0, 1)), answered_at TEXT NOT NULL,
        right_answer TEXT NOT NULL DEFAULT '', question_text TEXT NOT NULL DEFAULT '', model TEXT NOT NULL DEFAULT '',
        PRIMARY KEY (class, lesson, phase, question, student));
    CREATE INDEX answers_when ON answers (answered_at);
    CREATE TABLE classes (
        code TEXT PRIMARY KEY, report_key_hash TEXT NOT NULL, opened_at TEXT NOT NULL, ended_at TEXT);
    """,
    # 2: a student's own answers found by an index (their result page read the whole table: 30 days of classes)
    """
    CREATE INDEX answers_student ON answers (student, class);
    """,
)
COLUMNS = ("class", "lesson", "phase", "question", "student", "nickname", "answer", "correct", "answered_at",
           "right_answer", "question_text", "model")


class ResultsError(VizError):
    """The results store cannot be used; the message says why and what to do."""


@dataclass(frozen=True)
class Row:
    """One stored answer; the fields in ``COLUMNS``' order (``class`` is ``class_code`` here)."""

    class_code: str
    lesson: str
    phase: str
    question: str
    student: str
    nickname: str
    answer: str
    correct: bool
    answered_at: str
    right_answer: str = ""
    question_text: str = ""
    model: str = ""

    def record(self) -> dict[str, object]:
        """As the exports write it: the columns' names, ``correct`` a bool."""
        return dict(zip(COLUMNS, astuple(self)))


@dataclass(frozen=True)
class ClassRecord:
    code: str
    report_key_hash: str
    opened_at: str
    ended_at: str | None


REPORT_KEY_GROUPS, REPORT_KEY_GROUP = 3, 4
REPORT_KEY_ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZ"  # as the class codes: nothing reads as 0/O or 1/I


def new_report_key() -> str:
    """What opens a class's report, also after the class and a restart: 12 symbols of 32 (60 bits), as
    "K7P3-QX9A-M2TB"; the store keeps its hash only (``report_key_hash``)."""
    import secrets

    return "-".join("".join(secrets.choice(REPORT_KEY_ALPHABET) for _ in range(REPORT_KEY_GROUP))
                    for _ in range(REPORT_KEY_GROUPS))


def report_key_hash(typed: str) -> str:
    """The hash of a report key as a person types it (any case, with or without the dashes and spaces)."""
    import hashlib

    key = "".join(ch for ch in str(typed).upper() if ch not in " -\t")
    return hashlib.sha256(f"report:{key}".encode()).hexdigest()


def now_iso(clock: Callable[[], float] = time.time) -> str:
    """UTC, ISO 8601 with microseconds and a Z: sorts as text in time order (the retention's comparison)."""
    return datetime.fromtimestamp(clock(), timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def check_row(row: Row) -> Row:
    if row.phase not in PHASES:
        raise ResultsError(f"A phase is one of {', '.join(PHASES)}; got {row.phase!r}.")
    if len(row.nickname) > MAX_NICKNAME_CHARS:
        raise ResultsError(f"A nickname has at most {MAX_NICKNAME_CHARS} characters.")
    if not str(row.answer).strip() or len(row.answer) > MAX_ANSWER_CHARS:
        raise ResultsError(f"An answer is one of the question's choices (at most {MAX_ANSWER_CHARS} characters).")
    if not row.student or not row.lesson or not row.question:
        raise ResultsError("An answer needs its student, lesson and question.")
    if any("\x00" in str(value) for value in astuple(row)):  # PostgreSQL's text cannot hold it: refused on both
        raise ResultsError("An answer, a nickname or a question cannot hold the character NUL.")
    return row


class SqlResults:
    """What every store does, written once, so that they behave alike (tests/support/results_contract.py checks it).

    The SQL reads the same on SQLite and PostgreSQL (``?`` parameters, which the PostgreSQL store passes as ``%s``).
    A store gives the connection: ``_read`` (one query), ``_write`` (work done in one transaction, all or none,
    durable when it returns) and ``_migrating`` (as ``_write``, holding the lock that every process opening the same
    store takes for its migrations), each under ``self._lock``: Streamlit runs each session in its own thread.
    ``named`` is what the messages call the store ("results file /path").
    """

    named: str

    def __init__(self, retention_days: float, clock: Callable[[], float]) -> None:
        self.retention_days, self._clock = float(retention_days), clock
        self._lock = threading.Lock()
        self._purged = 0.0

    def describe(self) -> str:
        raise NotImplementedError

    def _read(self, sql: str, args: Sequence[object] = ()) -> list[tuple]:
        raise NotImplementedError

    def _write(self, work: Callable[[Any], T]) -> T:
        raise NotImplementedError

    def _migrating(self, work: Callable[[Any], None]) -> None:
        raise NotImplementedError

    def _statements(self, number: int, sql: str) -> list[str]:
        """Migration ``number``'s statements on this store's database."""
        return [statement for statement in sql.split(";") if statement.strip()]

    def close(self) -> None:
        raise NotImplementedError

    # ---- the schema ----

    def schema_version(self) -> int:
        return int(self._read("SELECT COALESCE(MAX(version), 0) FROM schema_migrations")[0][0])

    def _migrate(self) -> None:
        """Every migration not yet applied, in order, in one transaction under the migrations' lock, so two replicas
        starting at once apply each migration once."""

        def work(db) -> None:
            db.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
                       "applied_at TEXT NOT NULL)")
            version = int(db.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()[0])
            if version > len(MIGRATIONS):
                raise ResultsError(f"The {self.named} has schema version {version}, made by a newer version of this "
                                   f"app (this one knows {len(MIGRATIONS)}): update the app.")
            for number, sql in enumerate(MIGRATIONS[version:], version + 1):
                for statement in self._statements(number, sql):
                    db.execute(statement)
                db.execute("INSERT INTO schema_migrations VALUES (?, ?)", (number, now_iso(self._clock)))

        self._migrating(work)

    # ---- answers ----

    def record(self, rows: Sequence[Row]) -> None:
        """Store ``rows`` (a quiz's answers) all or none; when this returns they are on disk. A student's new answer
        to a question replaces their last one."""
        rows = [check_row(row) for row in rows]
        if not rows:
            return
        self._maybe_purge()
        names = ", ".join(f'"{name}"' for name in COLUMNS)
        values = ", ".join("?" * len(COLUMNS))
        updates = ", ".join(f'"{name}" = excluded."{name}"' for name in COLUMNS[5:])
        sql = (f"INSERT INTO answers ({names}) VALUES ({values}) ON CONFLICT (class, lesson, phase, question, student) "
               f"DO UPDATE SET {updates}")
        self._write(lambda db: db.executemany(sql, [(*astuple(row)[:7], int(bool(row.correct)), *astuple(row)[8:])
                                                    for row in rows]))

    def answers(self, class_code: str | None = None, lesson: str | None = None) -> list[Row]:
        """Every stored answer (of one class, one lesson), in the order they were given."""
        where, args = [], []
        if class_code is not None:
            where.append('"class" = ?')
            args.append(class_code)
        if lesson is not None:
            where.append("lesson = ?")
            args.append(lesson)
        return self._rows(" AND ".join(where), args)

    def student_answers(self, student: str) -> list[Row]:
        return self._rows("student = ?", [student])

    def _rows(self, where: str, args: Sequence[object]) -> list[Row]:
        """In the order given: by time, then as stored (``rowid``: the answers of one quiz share their time)."""
        sql = (f"SELECT {', '.join(chr(34) + c + chr(34) for c in COLUMNS)} FROM answers"
               + (f" WHERE {where}" if where else "") + " ORDER BY answered_at, rowid")
        return [Row(*values[:7], bool(values[7]), *values[8:]) for values in self._read(sql, args)]

    # ---- classes ----

    def open_class(self, code: str, report_key_hash: str) -> None:
        self._write(lambda db: db.execute(
            "INSERT INTO classes VALUES (?, ?, ?, NULL) ON CONFLICT (code) DO UPDATE SET "
            "report_key_hash = excluded.report_key_hash, opened_at = excluded.opened_at, ended_at = NULL",
            (code, report_key_hash, now_iso(self._clock))))

    def end_class(self, code: str) -> None:
        self._write(lambda db: db.execute("UPDATE classes SET ended_at = ? WHERE code = ? AND ended_at IS NULL",
                                          (now_iso(self._clock), code)))

    def class_record(self, code: str) -> ClassRecord | None:
        found = self._read("SELECT code, report_key_hash, opened_at, ended_at FROM classes WHERE code = ?", (code,))
        return ClassRecord(*found[0]) if found else None

    # ---- retention ----

    def purge(self) -> int:
        """Delete the answers older than the retention, and the classes left with none that are as old; returns how
        many answers went."""
        cutoff = (datetime.fromtimestamp(self._clock(), timezone.utc) - timedelta(days=self.retention_days)
                  ).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

        def work(db) -> int:
            gone = db.execute("DELETE FROM answers WHERE answered_at < ?", (cutoff,)).rowcount
            db.execute('DELETE FROM classes WHERE opened_at < ? AND code NOT IN (SELECT "class" FROM answers)',
                       (cutoff,))
            return gone

        gone = self._write(work)
        self._purged = self._clock()
        return gone

    def _maybe_purge(self) -> None:
        if self._clock() - self._purged > PURGE_EVERY_S:
            self.purge()


class SqliteResults(SqlResults):
    """The store in one SQLite file. One connection per process behind the lock (a write is a few milliseconds),
    WAL so that readers never wait for a writer."""

    def __init__(self, path: Path | str, retention_days: float = 30.0, clock: Callable[[], float] = time.time) -> None:
        super().__init__(retention_days, clock)
        self.path = Path(path).expanduser()
        self.named = f"results file {self.path}"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                                       check_same_thread=False)
            self._db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = FULL")
            self._migrate()
            self.purge()
        except sqlite3.DatabaseError as error:
            raise ResultsError(f"The results file {self.path} cannot be used ({error}). Move it away or set "
                               "VIZCORE_RESULTS to another file.") from error
        except OSError as error:
            raise ResultsError(f"The results file {self.path} cannot be created ({error.strerror or error}). Set "
                               "VIZCORE_RESULTS to a file in a folder this server can write.") from error

    def describe(self) -> str:
        return f"SQLite file {self.path}"

    def _read(self, sql: str, args: Sequence[object] = ()) -> list[tuple]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def _write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock, _Transaction(self._db):
            return work(self._db)

    def _migrating(self, work: Callable[[sqlite3.Connection], None]) -> None:
        """BEGIN IMMEDIATE takes the file's write lock first: the migrations' lock too."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                work(self._db)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def close(self) -> None:
        with self._lock:
            self._db.close()


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on an error): the write lock first, so a busy file waits, then fails
    whole."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:  # another process held the write lock past the busy timeout
            raise ResultsError(f"The results could not be saved ({error}). Try again in a moment.") from error

    def __exit__(self, kind, error, trace) -> None:
        if kind is None:
            self.db.execute("COMMIT")
        else:
            self.db.execute("ROLLBACK")
            if isinstance(error, sqlite3.OperationalError):
                raise ResultsError(f"The results could not be saved ({error}). Try again in a moment.") from error
