"""The run directory's database: one SQLite file, ``run_dir/store.sqlite`` (issue 21 item 2).

Every run directory -- ``fedsim validate`` (theorem suites and the paper suite) and
``fedsim search`` -- keeps its records in one SQLite database (Python's standard
``sqlite3``), written only by the process that holds the run directory's lock
(:func:`fedsim.validation.montecarlo_store.lock_run_dir`).  Tables::

    records(task_id TEXT PRIMARY KEY, fn, status, reason, payload_hash,
            value TEXT  -- JSON (NaN/Infinity in Python's dialect) or NULL,
            payload TEXT -- JSON, checksum)
    points(point TEXT PRIMARY KEY, body TEXT -- JSON {"key", "row"}, checksum)
    oracle(key TEXT PRIMARY KEY, tag, args, value TEXT -- JSON, checksum)  -- exact values
    info(name TEXT PRIMARY KEY, value TEXT)   -- schema version, migration counts

* **Transactions.**  :meth:`RunStore.put_records` writes a chunk of records as one
  transaction (``BEGIN IMMEDIATE`` ... ``COMMIT``) with a rollback journal and
  ``synchronous=FULL``, so a committed chunk survives ``kill -9`` and a power cut, and a
  kill loses at most the chunks in flight.  The journal file (``store.sqlite-journal``)
  exists only while a transaction is being written; one left by a kill is rolled back and
  removed by the next open.
* **Damage.**  Each record keeps the sha256 of its canonical content
  (:func:`fedsim.validation.montecarlo_schema.record_checksum`; a point: the sha256 of its
  canonical JSON).  A row that does not decode, does not match its checksum or its schema,
  or cannot be read at all (a damaged page) is reported with a reason and recomputed by the
  caller, which counts it.  The hash detects damage, not an editor: whoever can write the
  file can recompute a checksum.
* **A bad day.**  An SQLite error on open or on a write is one line
  (:func:`store_error`): a full disk, a quota, a file-size limit, too many open files or a
  read-only file system names the file and the cause (the committed records are intact;
  re-running resumes); anything else -- and tables with other columns, or triggers and
  views fedsim never makes, found when the store is opened -- is a damaged store:
  "move it away and re-run" (:data:`MOVE_AWAY`).
* **Oracle cache.**  The exact oracle values a suite computes while it builds its cases
  (:func:`fedsim.validation.cases.cached`) are rows of ``oracle``, verified on read like
  records (their checksum and type are checked there; a damaged one is recomputed and
  counted).
* **Old layout.**  A run directory written by an older fedsim (one JSON file per record
  under ``results/``, per search point under ``points/``, per oracle value under
  ``oracle-cache/``) is migrated the first time it is opened: every record that passes
  verification is copied in one transaction, the old files are then removed, and one line
  on stderr says how many were moved and how many were damaged (those are recomputed).
* **Reading.**  ``pandas.read_sql("SELECT task_id, status, value FROM records",
  sqlite3.connect("runs/quick/store.sqlite"))``; ``value`` is JSON text (README).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sqlite3
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from fedsim.validation.montecarlo_schema import canonical_json, check_record

from fedsim.errors import FedsimError
from fedsim.faults import fault_point
from fedsim.safefile import kind_of

__all__ = ["STORE_FILE", "SCHEMA_VERSION", "RunStore", "open_store", "close_store",
           "point_checksum", "store_error", "MOVE_AWAY"]

#: the database file of a run directory
STORE_FILE = "store.sqlite"
SCHEMA_VERSION = 1

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS records (task_id TEXT PRIMARY KEY, fn TEXT NOT NULL, "
    "status TEXT NOT NULL, reason TEXT, payload_hash TEXT NOT NULL, value TEXT, "
    "payload TEXT NOT NULL, checksum TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS points (point TEXT PRIMARY KEY, body TEXT NOT NULL, "
    "checksum TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS info (name TEXT PRIMARY KEY, value TEXT)",
    "CREATE TABLE IF NOT EXISTS oracle (key TEXT PRIMARY KEY, tag TEXT NOT NULL, "
    "args TEXT NOT NULL, value TEXT NOT NULL, checksum TEXT NOT NULL)",
)
_ORACLE_KEYS = ("tag", "args", "value", "checksum")
_COLS = ("task_id", "fn", "status", "reason", "payload_hash", "value", "payload", "checksum")


def point_checksum(body: Any) -> str:
    """sha256 of the canonical JSON of a search point's ``{"key", "row"}``."""
    return hashlib.sha256(canonical_json(json.loads(canonical_json(body))).encode()).hexdigest()


#: the end of every message about a damaged store
MOVE_AWAY = "move it away and re-run to recompute its records"

#: the cause of an SQLite error that is the disk's or the system's, not the file's, by the
#: prefix of its ``sqlite_errorname``
_SYSTEM_CAUSES = (
    ("SQLITE_FULL", "the disk is full (or a quota is reached); free some space"),
    ("SQLITE_IOERR", "a disk I/O error: a full disk, a quota, a file-size limit (ulimit -f) "
                     "or a failing device; free space or raise the limit"),
    ("SQLITE_CANTOPEN", "the file cannot be opened: too many open files (ulimit -n), no "
                        "permission or no space for it; raise the limit or free space"),
    ("SQLITE_READONLY", "the file or its file system is read-only; use another --out"),
    ("SQLITE_NOMEM", "out of memory"),
    ("SQLITE_BUSY", "another process holds the database; wait for it"),
    ("SQLITE_LOCKED", "another process holds the database; wait for it"),
)


def store_error(path: Path, exc: BaseException) -> FedsimError:
    """One line for an SQLite error on the store ``path``: the disk's or the system's cause
    (the records committed so far stay intact; re-running resumes), else a damaged file
    (:data:`MOVE_AWAY`)."""
    name = str(getattr(exc, "sqlite_errorname", "") or "")
    for prefix, cause in _SYSTEM_CAUSES:
        if name.startswith(prefix):
            return FedsimError(f"cannot write {path}: {cause}, then re-run to resume (the "
                               f"records stored so far are intact; sqlite: {exc})")
    return FedsimError(f"{path} is not a readable fedsim database ({exc}); {MOVE_AWAY}")


def _schema_problem(db: sqlite3.Connection) -> str | None:
    """Why the tables are not fedsim's (other columns, a trigger), else None."""
    want = {"records": list(_COLS), "points": ["point", "body", "checksum"],
            "info": ["name", "value"], "oracle": ["key", *_ORACLE_KEYS]}
    for table, cols in want.items():
        have = [r[1] for r in db.execute(f"PRAGMA table_info({table})")]
        if have != cols:
            return f"table {table} has columns {have}, not {cols}"
    extra = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type IN "
                                      "('trigger', 'view')")]
    if extra:
        return f"it holds triggers or views fedsim never makes ({', '.join(extra)})"
    return None


def _row_to_record(row: tuple) -> tuple[dict | None, str | None]:
    d = dict(zip(_COLS, row, strict=True))
    try:
        d["value"] = None if d["value"] is None else json.loads(d["value"])
        d["payload"] = json.loads(d["payload"])
    except (TypeError, ValueError, RecursionError):
        return None, "not valid JSON (truncated or garbled)"
    problem = check_record(d)
    return (None, problem) if problem is not None else (d, None)


def _record_to_row(rec: dict) -> tuple:
    value = None if rec["value"] is None else canonical_json(rec["value"])
    return (rec["task_id"], rec["fn"], rec["status"], rec["reason"], rec["payload_hash"],
            value, canonical_json(rec["payload"]), rec["checksum"])


class RunStore:
    """The database of one run directory (module doc).  Open it with :func:`open_store`."""

    def __init__(self, run_dir: str | os.PathLike) -> None:
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / STORE_FILE
        k = kind_of(self.path)
        if k not in (None, "file"):
            raise FedsimError(f"{self.path} is a {k}, not a database file; remove it")
        self.run_dir.mkdir(parents=True, exist_ok=True)
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None, timeout=30.0,
                                      check_same_thread=False)
            self.db.execute("PRAGMA journal_mode=DELETE")
            self.db.execute("PRAGMA synchronous=FULL")
            for stmt in _SCHEMA:
                self.db.execute(stmt)
            self.db.execute("INSERT OR IGNORE INTO info VALUES ('schema_version', ?)",
                            (str(SCHEMA_VERSION),))
            version = self.db.execute(
                "SELECT value FROM info WHERE name = 'schema_version'").fetchone()[0]
            problem = _schema_problem(self.db)
        except sqlite3.Error as exc:
            raise store_error(self.path, exc) from None
        if problem is not None:
            raise FedsimError(f"{self.path} is not a readable fedsim database ({problem}); "
                              f"{MOVE_AWAY}")
        if version != str(SCHEMA_VERSION):
            raise FedsimError(f"{self.path} has schema version {version}, this fedsim reads "
                              f"{SCHEMA_VERSION}; use a new --out directory")
        self.migrated = self._migrate_json_layout()

    # -- records ---------------------------------------------------------------------
    def put_records(self, recs: Iterable[dict]) -> None:
        """Insert or replace ``recs`` (already checksummed) in one transaction."""
        rows = [_record_to_row(r) for r in recs]
        if not rows:
            return
        with self._transaction():
            self.db.executemany(f"INSERT OR REPLACE INTO records VALUES "
                                f"({','.join('?' * len(_COLS))})", rows)

    def get_record(self, task_id: str) -> tuple[dict | None, str | None]:
        """``(record, None)`` if stored and trustworthy, ``(None, None)`` if absent,
        ``(None, reason)`` if damaged or unreadable."""
        try:
            row = self.db.execute(f"SELECT {','.join(_COLS)} FROM records WHERE task_id = ?",
                                  (task_id,)).fetchone()
        except sqlite3.DatabaseError as exc:
            return None, f"unreadable ({exc})"
        if row is None:
            return None, None
        rec, problem = _row_to_record(row)
        if rec is not None and rec["task_id"] != task_id:
            return None, "stored under the key of another task"
        return rec, problem

    def records(self) -> Iterator[tuple[str, dict | None, str | None]]:
        """``(task_id, record, problem)`` of every stored row (rows read one at a time, so a
        damaged page costs only its rows)."""
        try:
            ids = [r[0] for r in self.db.execute("SELECT task_id FROM records ORDER BY task_id")]
        except sqlite3.DatabaseError:
            ids = []
        for tid in ids:
            rec, problem = self.get_record(tid)
            yield tid, rec, problem

    # -- search points -----------------------------------------------------------------
    def put_point(self, point: str, body: dict) -> None:
        """Store a search point ``{"key", "row"}`` under its digest (one transaction)."""
        text = canonical_json(body)
        with self._transaction():
            self.db.execute("INSERT OR REPLACE INTO points VALUES (?, ?, ?)",
                            (point, text, point_checksum(body)))
        fault_point("point")  # the kill -9 tests (fedsim.faults)

    def get_point(self, point: str) -> tuple[dict | None, str | None]:
        """``(body, None)``, ``(None, None)`` if absent, ``(None, reason)`` if damaged."""
        try:
            row = self.db.execute("SELECT body, checksum FROM points WHERE point = ?",
                                  (point,)).fetchone()
        except sqlite3.DatabaseError as exc:
            return None, f"unreadable ({exc})"
        if row is None:
            return None, None
        try:
            body = json.loads(row[0])
        except (TypeError, ValueError, RecursionError):
            return None, "not valid JSON (truncated or garbled)"
        if not isinstance(body, dict) or set(body) != {"key", "row"} \
                or not isinstance(body["row"], dict):
            return None, "not a point (an object with key and row)"
        if row[1] != point_checksum(body):
            return None, "checksum mismatch (the point was edited or damaged)"
        return body, None

    # -- oracle cache ----------------------------------------------------------------------
    def put_oracle(self, key: str, entry: dict[str, Any]) -> None:
        """Store an oracle cache entry ``{"tag", "args", "value", "checksum"}`` under
        ``key`` (one transaction; the caller computed the checksum)."""
        with self._transaction():
            self.db.execute("INSERT OR REPLACE INTO oracle VALUES (?, ?, ?, ?, ?)",
                            (key, entry["tag"], entry["args"], canonical_json(entry["value"]),
                             entry["checksum"]))

    def get_oracle(self, key: str) -> tuple[dict | None, str | None]:
        """``(entry, None)`` with the value decoded (not yet verified: the caller checks
        it against its arguments and checksum), ``(None, None)`` if absent,
        ``(None, reason)`` if the row cannot be read or decoded."""
        try:
            row = self.db.execute("SELECT tag, args, value, checksum FROM oracle "
                                  "WHERE key = ?", (key,)).fetchone()
        except sqlite3.DatabaseError as exc:
            return None, f"unreadable ({exc})"
        if row is None:
            return None, None
        entry = dict(zip(_ORACLE_KEYS, row, strict=True))
        try:
            entry["value"] = json.loads(entry["value"])
        except (TypeError, ValueError, RecursionError):
            return None, "not valid JSON (truncated or garbled)"
        return entry, None

    # -- plumbing ------------------------------------------------------------------------
    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """One write transaction; an SQLite error becomes :func:`store_error`'s one line
        (a full disk, a limit, a damaged file), the store left as it was committed."""
        try:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                with contextlib.suppress(sqlite3.Error):  # sqlite may have rolled back
                    self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")
        except sqlite3.Error as exc:
            with contextlib.suppress(sqlite3.Error):
                self.db.execute("ROLLBACK")
            raise store_error(self.path, exc) from None

    def info(self, name: str) -> str | None:
        row = self.db.execute("SELECT value FROM info WHERE name = ?", (name,)).fetchone()
        return None if row is None else row[0]

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self.db.close()

    def _migrate_json_layout(self) -> dict[str, int]:
        """Copy ``results/**.json`` and ``points/*.json`` of an older fedsim (module doc)."""
        moved = {"records": 0, "points": 0, "oracle": 0, "damaged": 0}
        old_results, old_points = self.run_dir / "results", self.run_dir / "points"
        old_oracle = self.run_dir / "oracle-cache"
        if kind_of(old_results) == "directory":
            recs = []
            for p in sorted(old_results.glob("*/*.json")):
                rec, problem = _read_json_record(p)
                if rec is None:
                    moved["damaged"] += problem is not None
                    continue
                recs.append(rec)
            with self._transaction():
                self.db.executemany(f"INSERT OR IGNORE INTO records VALUES "
                                    f"({','.join('?' * len(_COLS))})",
                                    [_record_to_row(r) for r in recs])
            moved["records"] = len(recs)
            shutil.rmtree(old_results)
        if kind_of(old_points) == "directory":
            rows = []
            for p in sorted(old_points.glob("*.json")):
                try:
                    body = json.loads(p.read_text(encoding="utf-8"))
                except (OSError, UnicodeDecodeError, ValueError, RecursionError):
                    moved["damaged"] += 1
                    continue
                if not (isinstance(body, dict) and set(body) == {"key", "row"}
                        and isinstance(body["row"], dict)):
                    moved["damaged"] += 1
                    continue
                rows.append((p.stem, canonical_json(body), point_checksum(body)))
            with self._transaction():
                self.db.executemany("INSERT OR IGNORE INTO points VALUES (?, ?, ?)", rows)
            moved["points"] = len(rows)
            shutil.rmtree(old_points)
        if kind_of(old_oracle) == "directory":
            rows = []
            for p in sorted(old_oracle.glob("*.json")):
                try:
                    entry = json.loads(p.read_text(encoding="utf-8"))
                except (OSError, UnicodeDecodeError, ValueError, RecursionError):
                    entry = None
                if not (isinstance(entry, dict) and set(entry) == set(_ORACLE_KEYS)
                        and all(isinstance(entry[k], str) for k in ("tag", "args",
                                                                    "checksum"))):
                    moved["damaged"] += 1  # verified again on read: checksum, arguments
                    continue
                rows.append((p.stem, entry["tag"], entry["args"],
                             canonical_json(entry["value"]), entry["checksum"]))
            with self._transaction():
                self.db.executemany("INSERT OR IGNORE INTO oracle VALUES (?, ?, ?, ?, ?)",
                                    rows)
            moved["oracle"] = len(rows)
            shutil.rmtree(old_oracle)
        if any(moved.values()):
            sys.stderr.write(f"fedsim: moved {moved['records']} records, {moved['points']} "
                             f"search points and {moved['oracle']} oracle values of "
                             f"{self.run_dir} from the old JSON layout into {STORE_FILE} "
                             f"({moved['damaged']} damaged, to be recomputed)\n")
        return moved


def _read_json_record(path: Path) -> tuple[dict | None, str | None]:
    """A record file of the old layout, verified (checksum and schema) as before."""
    try:
        rec = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None, "unreadable"
    problem = check_record(rec)
    if problem is None:
        h = hashlib.sha256(rec["task_id"].encode()).hexdigest()
        if path.stem != h:
            problem = "stored under the path of another task"
    return (None, problem) if problem is not None else (rec, None)


_OPEN: dict[tuple[int, Path], RunStore] = {}


def open_store(run_dir: str | os.PathLike) -> RunStore:
    """The :class:`RunStore` of ``run_dir`` (one per process and directory; opening it the
    first time creates the database and migrates an old JSON layout)."""
    key = (os.getpid(), Path(run_dir).resolve())
    st = _OPEN.get(key)
    if st is None:
        st = _OPEN[key] = RunStore(run_dir)
    return st


def close_store(run_dir: str | os.PathLike) -> None:
    """Close ``run_dir``'s database if this process opened it."""
    st = _OPEN.pop((os.getpid(), Path(run_dir).resolve()), None)
    if st is not None:
        st.close()
