"""Test helpers: read and edit the rows of a run directory's ``store.sqlite`` directly,
bypassing fedsim's verification (to simulate damage and edits)."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

COLS = ("task_id", "fn", "status", "reason", "payload_hash", "value", "payload", "checksum")


@contextlib.contextmanager
def _db(run_dir: Path) -> Iterator[sqlite3.Connection]:
    db = sqlite3.connect(Path(run_dir) / "store.sqlite", isolation_level=None)
    try:
        yield db
    finally:
        db.close()


def raw_record(run_dir: Path, task_id: str) -> dict[str, Any]:
    """The stored row of ``task_id`` as a record dict (value and payload decoded)."""
    with _db(run_dir) as db:
        row = db.execute(f"SELECT {','.join(COLS)} FROM records WHERE task_id = ?",
                         (task_id,)).fetchone()
    rec = dict(zip(COLS, row, strict=True))
    rec["value"] = None if rec["value"] is None else json.loads(rec["value"])
    rec["payload"] = json.loads(rec["payload"])
    return rec


def edit_record(run_dir: Path, task_id: str, fn) -> None:
    """Apply ``fn`` to the stored record of ``task_id`` (in place) and store it back as is."""
    rec = raw_record(run_dir, task_id)
    fn(rec)
    vals = [rec.get(c) for c in COLS]
    vals[5] = None if vals[5] is None else json.dumps(vals[5])
    vals[6] = json.dumps(vals[6])
    with _db(run_dir) as db:
        db.execute("DELETE FROM records WHERE task_id = ?", (task_id,))
        db.execute(f"INSERT INTO records VALUES ({','.join('?' * len(COLS))})", vals)


def set_column(run_dir: Path, task_id: str, column: str, value: Any) -> None:
    """Overwrite one column of a stored record with raw text or bytes."""
    assert column in COLS
    with _db(run_dir) as db:
        db.execute(f"UPDATE records SET {column} = ? WHERE task_id = ?", (value, task_id))


def task_ids(run_dir: Path) -> list[str]:
    with _db(run_dir) as db:
        return [r[0] for r in db.execute("SELECT task_id FROM records ORDER BY task_id")]


def dump(run_dir: Path) -> list[tuple]:
    """Every record row, sorted by task_id (to compare two stores)."""
    with _db(run_dir) as db:
        return db.execute(f"SELECT {','.join(COLS)} FROM records ORDER BY task_id").fetchall()


def points(run_dir: Path) -> list[tuple]:
    with _db(run_dir) as db:
        return db.execute("SELECT point, body, checksum FROM points ORDER BY point").fetchall()


def set_point_body(run_dir: Path, point: str, body: str) -> None:
    with _db(run_dir) as db:
        db.execute("UPDATE points SET body = ? WHERE point = ?", (body, point))
