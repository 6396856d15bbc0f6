"""The Monte-Carlo record store: one JSON file per task, written atomically, read on resume.

Layout (see :mod:`validation.montecarlo` for the record fields and resume policy)::

    run_dir/results/<h[:2]>/<h>.json      h = sha256(task_id) (hex)

A record depends only on the task's ``(fn, payload)``, identified by
:func:`payload_hash` (sha256 of their canonical JSON).  :func:`atomic_write_json` writes
through a temporary file in the same directory, ``fsync`` and ``os.replace``, so an
interrupted run never leaves a partial record.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fedsim.errors import require

__all__ = ["Task", "STATUSES", "canonical_json", "payload_hash", "record_path",
           "atomic_write_json", "read_record", "load_records", "records_frame"]

#: the three outcomes a record can hold
STATUSES = ("ok", "diverged", "error")


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


def _jsonable(obj: Any) -> Any:
    """``json.dumps`` default hook: numpy scalars/arrays -> Python numbers/lists."""
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


def canonical_json(obj: Any) -> str:
    """Sorted-key, compact JSON (numpy values converted): the form every hash is taken of."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=_jsonable)


def payload_hash(task: Task) -> str:
    """sha256 of the canonical JSON of ``(fn, payload)``: what a record was computed from."""
    text = canonical_json({"fn": task.fn, "payload": task.payload})
    return hashlib.sha256(text.encode()).hexdigest()


def record_path(run_dir: str | os.PathLike, task_id: str) -> Path:
    """Where the record of ``task_id`` lives: ``results/<h[:2]>/<h>.json``, h = sha256(task_id)."""
    h = hashlib.sha256(task_id.encode()).hexdigest()
    return Path(run_dir) / "results" / h[:2] / f"{h}.json"


def atomic_write_json(path: str | os.PathLike, obj: Any) -> None:
    """Write ``obj`` as JSON to ``path`` atomically (tmp file in the same dir, fsync, replace).

    Either the old content (or no file) or the complete new content is visible at
    ``path``, never a partial file; the temporary file is removed on failure.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(obj, fh, sort_keys=True, indent=1, default=_jsonable)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    try:  # make the rename durable; not supported everywhere
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


def read_record(path: Path) -> dict | None:
    """The record at ``path``, or None if missing or unreadable (then it is recomputed)."""
    try:
        with open(path, encoding="utf-8") as fh:
            rec = json.load(fh)
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(rec, dict) or rec.get("status") not in STATUSES:
        return None
    return rec


def load_records(run_dir: str | os.PathLike) -> dict[str, dict]:
    """Every readable record under ``run_dir/results`` as ``task_id -> record``."""
    out: dict[str, dict] = {}
    root = Path(run_dir) / "results"
    if not root.is_dir():
        return out
    for p in sorted(root.glob("*/*.json")):
        if p.name.startswith(".tmp-"):
            continue
        rec = read_record(p)
        if rec is not None:
            out[rec["task_id"]] = rec
    return out


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
