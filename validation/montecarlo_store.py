"""The Monte-Carlo record store: the run directory's SQLite database, read on resume.

Layout (see :mod:`fedsim.validation.montecarlo` for the record fields and resume policy)::

    run_dir/store.sqlite     the records, one row per task (fedsim.validation.montecarlo_db)
    run_dir/.lock            held (flock) by the process writing run_dir

A record depends only on the task's ``(fn, payload)``, identified by
:func:`payload_hash` (sha256 of their canonical JSON).  :func:`write_records` stores the
records of a chunk as one transaction, so an interrupted run never leaves a partial
record and loses at most the chunks in flight.

Verification (issue 14 item 3): :func:`write_records` stamps each record with the
checksum of its canonical content, and :func:`read_record` returns a record only if it
passes :func:`fedsim.validation.montecarlo_schema.check_record` (checksum, envelope types, the
value schema of its task function); anything else reads as missing and is recomputed.
:func:`audit_records` says, before a run, which stored records will be recomputed and
why, so that the summary can count them.  The checksum detects damage, not an editor.

Lock: :func:`lock_run_dir` takes an exclusive ``fcntl.flock`` on ``run_dir/.lock`` for the
whole run; a second process that tries to write the same run directory is refused at
once with :class:`RunDirBusy` naming the holder's pid (it does not wait: a suite can run
for hours, and a silent wait looks like a hang).  The kernel drops the lock when its
process ends, even by ``kill -9``, so a left-over ``.lock`` file never blocks anything.
The lock file is opened with ``O_NOFOLLOW`` (:func:`fedsim.safefile.open_lock`): a symlink
planted there is refused and its target never touched.  Taking the lock removes the
temporary files a killed writer left (:func:`fedsim.safefile.remove_stale_temporaries`);
releasing it closes the database.  The lock is re-entrant within one process
(``run_suite`` holds it and ``run_tasks`` takes it again).  Where ``fcntl`` does not exist
(Windows) no lock is taken.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fedsim.validation.montecarlo_db import STORE_FILE, close_store, open_store
from fedsim.validation.montecarlo_schema import (
    STATUSES,
    canonical_json,
    jsonable,
    record_checksum,
)

from fedsim.errors import FedsimError, require
from fedsim.faults import fault_point
from fedsim.safefile import atomic_write_json_file, open_lock, remove_stale_temporaries

__all__ = ["Task", "STATUSES", "canonical_json", "payload_hash",
           "atomic_write_json", "write_record", "write_records", "read_record",
           "verify_record", "load_records", "records_frame", "audit_records", "new_audit",
           "audit_add", "lock_run_dir",
           "RunDirBusy", "run_dir_holder", "has_store"]


@dataclass(frozen=True)
class Task:
    """One unit of work: ``fn`` is ``"module:function"``, called as ``fn(payload) -> dict``."""

    task_id: str
    fn: str
    payload: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        require(isinstance(self.task_id, str) and self.task_id != "", "task_id", self.task_id,
                "must be a non-empty string")
        require(isinstance(self.fn, str) and self.fn.count(":") == 1
                and all(self.fn.split(":")), "fn", self.fn,
                "must be a dotted path 'module:function'")
        require(isinstance(self.payload, dict), "payload", type(self.payload).__name__,
                "must be a dict")


def payload_hash(task: Task) -> str:
    """sha256 of the canonical JSON of ``(fn, payload)``: what a record was computed from."""
    text = canonical_json({"fn": task.fn, "payload": task.payload})
    return hashlib.sha256(text.encode()).hexdigest()


def atomic_write_json(path: str | os.PathLike, obj: Any) -> None:
    """Write ``obj`` as JSON to ``path`` atomically (tmp file in the same dir, fsync, replace).

    Either the old content (or no file) or the complete new content is visible at
    ``path``, never a partial file; the temporary file is removed on failure.
    """
    atomic_write_json_file(path, obj, default=jsonable)


def write_records(run_dir: str | os.PathLike, recs: list[dict]) -> list[dict]:
    """Stamp every record of ``recs`` with its checksum (in place) and store them as one
    transaction; return them."""
    for rec in recs:
        rec.pop("checksum", None)
        rec["checksum"] = record_checksum(rec)
    open_store(run_dir).put_records(recs)
    return recs


def write_record(run_dir: str | os.PathLike, rec: dict) -> dict:
    """:func:`write_records` of one record."""
    return write_records(run_dir, [rec])[0]


def has_store(run_dir: str | os.PathLike) -> bool:
    """Whether ``run_dir`` holds records (a database, or the JSON layout of an older fedsim)."""
    run_dir = Path(run_dir)
    return (run_dir / STORE_FILE).exists() or (run_dir / "results").is_dir()


def verify_record(run_dir: str | os.PathLike, task_id: str) -> tuple[dict | None, str | None]:
    """``(record, None)`` if the record of ``task_id`` is trustworthy; ``(None, None)`` if
    there is none; ``(None, reason)`` if it is damaged (then it is recomputed)."""
    return open_store(run_dir).get_record(task_id)


def read_record(run_dir: str | os.PathLike, task_id: str) -> dict | None:
    """The record of ``task_id`` if it passes verification, else None (it is recomputed)."""
    return verify_record(run_dir, task_id)[0]


def load_records(run_dir: str | os.PathLike) -> dict[str, dict]:
    """Every readable record of ``run_dir`` as ``task_id -> record``."""
    if not has_store(run_dir):
        return {}
    return {tid: rec for tid, rec, _ in open_store(run_dir).records() if rec is not None}


def new_audit() -> dict[str, Any]:
    """An empty audit (:func:`audit_records`' counts), filled by :func:`audit_add`."""
    return {"tasks": 0, "reused": 0, "missing": 0, "errors_retried": 0,
            "stale_payload": 0, "damaged": 0, "damaged_reasons": {},
            "damaged_examples": []}


def audit_add(audit: dict[str, Any], task: Task, rec: dict | None, problem: str | None,
              phash: str) -> str:
    """Count one task's stored record (``verify_record``'s ``(rec, problem)``; ``phash`` the
    task's :func:`payload_hash`) in ``audit``; return its class: ``"damaged"``,
    ``"missing"``, ``"stale_payload"``, ``"errors_retried"`` or ``"reused"`` (only a
    ``reused`` record is kept, every other task is computed)."""
    audit["tasks"] += 1
    if problem is not None:
        kind = "damaged"
        audit["damaged_reasons"][problem] = audit["damaged_reasons"].get(problem, 0) + 1
        if len(audit["damaged_examples"]) < 5:
            audit["damaged_examples"].append(task.task_id)
    elif rec is None or rec["task_id"] != task.task_id:
        kind = "missing"
    elif rec["payload_hash"] != phash:
        kind = "stale_payload"
    elif rec["status"] == "error":
        kind = "errors_retried"
    else:
        kind = "reused"
    audit[kind] += 1
    return kind


def audit_records(run_dir: str | os.PathLike, tasks: Iterable[Task]) -> dict[str, Any]:
    """What a run over ``tasks`` will find in ``run_dir``, before it starts.

    Returns ``{"tasks", "reused", "missing", "errors_retried", "stale_payload",
    "damaged", "damaged_reasons": {reason: count}, "damaged_examples": [task_id, ...]}``:
    ``reused`` records are kept, every other task is computed; ``damaged`` counts the
    records that exist but fail verification (legacy records without a checksum included,
    under their own reason).  :func:`fedsim.validation.montecarlo.run_tasks` makes the same
    count in its own (single) read of the records (its ``stats``).
    """
    out = new_audit()
    for t in tasks:
        rec, problem = verify_record(run_dir, t.task_id)
        audit_add(out, t, rec, problem, payload_hash(t))
    return out


class RunDirBusy(FedsimError):
    """Another process holds the lock of the run directory."""


_HELD: dict[Path, list] = {}   # run dir -> [open lock file, depth] held by this process


@contextlib.contextmanager
def lock_run_dir(run_dir: str | os.PathLike) -> Iterator[Path]:
    """Hold the exclusive lock of ``run_dir`` (re-entrant in one process; see module doc).

    Raises :class:`RunDirBusy` at once if another process holds it.
    """
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    key = run_dir.resolve()
    try:
        import fcntl
    except ImportError:  # pragma: no cover - no flock on this platform
        yield run_dir
        return
    if key in _HELD:
        _HELD[key][1] += 1
        try:
            yield run_dir
        finally:
            _HELD[key][1] -= 1
        return
    path = run_dir / ".lock"
    fh = open_lock(path)  # O_NOFOLLOW: a symlink planted there is refused, never followed
    try:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "unknown"
            raise RunDirBusy(
                f"run directory {run_dir} is in use by another fedsim process (pid "
                f"{holder}); wait for it to finish, or use another --out directory") from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        _HELD[key] = [fh, 1]
        remove_stale_temporaries(run_dir, depth=2)  # left by a killed writer; none is live
        fault_point("setup")  # the kill -9 tests (fedsim.faults)
        try:
            yield run_dir
        finally:
            del _HELD[key]
            close_store(run_dir)
            fh.seek(0)
            fh.truncate()
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    finally:
        fh.close()


def run_dir_holder(run_dir: str | os.PathLike) -> str | None:
    """The pid (as text) of another process holding ``run_dir``'s lock, else None."""
    path = Path(run_dir) / ".lock"
    if not path.is_file() or Path(run_dir).resolve() in _HELD:
        return None
    try:
        import fcntl
    except ImportError:  # pragma: no cover
        return None
    if os.path.islink(path):
        return None
    with open_lock(path) as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return fh.read().strip() or "unknown"
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    return None


def records_frame(records: dict[str, dict] | Iterable[dict]) -> Any:
    """A pandas DataFrame with one row per record: task_id, status, reason and every
    top-level entry of ``value`` as a column (lists stay Python lists)."""
    import pandas as pd

    recs = list(records.values()) if isinstance(records, dict) else list(records)
    rows = []
    for rec in recs:
        row = {"task_id": rec["task_id"], "status": rec["status"], "reason": rec["reason"]}
        for k, v in (rec.get("value") or {}).items():
            if k not in row:
                row[k] = v
        rows.append(row)
    return pd.DataFrame(rows, columns=None if rows else ["task_id", "status", "reason"])
