"""The manifest of a run directory (``suite.json``) and the check ``fedsim report`` makes.

Issue 14 item 3.  :func:`fedsim.validation.suites.run_suite` writes ``suite.json`` after
``verdicts.csv`` and ``meta/*.json`` and before the PDF::

    {"suite", "replicates", "seed", "tasks",
     "verdict_rows", "verdict_columns", "verdicts_sha256", "meta_sha256": {name: sha256}}

:func:`check_run_dir` runs before every report is built and raises :class:`FedsimError`
(one line; the CLI exits 2) on the first problem it finds:

* ``verdicts.csv`` missing, empty, not UTF-8, not a CSV, without the
  :data:`~validation.compare.VERDICT_COLUMNS`, without rows, not ending in a newline
  (a cut file), with an empty key cell, a verdict outside
  :data:`~validation.compare.VERDICTS`, a horizon that is not an integer of at most 18
  digits or a number column (mean, bounds, ...) holding something else than a number;
* a ``meta/*.json`` that is not UTF-8 JSON holding an object with ``theorem`` and
  ``scenario`` strings, or whose other fields the report reads are of another type;
* any of these files not a regular file (a link to ``/dev/zero``, a FIFO) or larger than
  :data:`MAX_FILE_BYTES`, refused before it is opened;
* ``suite.json`` not a JSON object;
* against the manifest: other columns, another row count (a truncated file), another
  sha256 (an edited file), meta files missing, extra or changed;
* another process holding the run directory's lock (a run in progress).

A run directory written before manifests existed (``suite.json`` without
``verdict_rows``) or built by hand (no ``suite.json``, no records) gets the
structural checks only.  A directory with records (``store.sqlite``, or ``results/`` of an
older fedsim) but no ``suite.json`` is an unfinished run and is refused.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from pathlib import Path
from typing import Any

import pandas as pd
from fedsim.validation.compare import VERDICT_COLUMNS, VERDICTS

from fedsim.errors import FedsimError

__all__ = ["manifest", "write_manifest", "check_run_dir", "MAX_FILE_BYTES"]

_KEYS = ("theorem", "scenario", "horizon", "verdict")
#: the number columns of verdicts.csv (empty, nan and inf allowed)
_NUMBERS = ("mean", "ci_low", "ci_high", "bound", "tightness", "slope", "exact")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def manifest(run_dir: str | os.PathLike, **fields: Any) -> dict[str, Any]:
    """``fields`` plus the row count, columns and sha256 of verdicts.csv and meta/*.json."""
    run_dir = Path(run_dir)
    v = run_dir / "verdicts.csv"
    df = pd.read_csv(v, dtype=str, keep_default_na=False)
    return dict(fields, verdict_rows=int(len(df)), verdict_columns=list(df.columns),
                verdicts_sha256=_sha(v),
                meta_sha256={p.name: _sha(p) for p in sorted((run_dir / "meta").glob("*.json"))})


def write_manifest(run_dir: str | os.PathLike, **fields: Any) -> dict[str, Any]:
    """Write ``run_dir/suite.json`` (atomically) and return it."""
    from fedsim.validation.montecarlo_store import atomic_write_json

    m = manifest(run_dir, **fields)
    atomic_write_json(Path(run_dir) / "suite.json", m)
    return m


def _fail(run_dir: Path, what: str) -> None:
    raise FedsimError(f"run directory {run_dir} is damaged: {what}; re-run `fedsim validate` "
                      "with the same options to repair it")


def _read_verdicts(run_dir: Path) -> tuple[pd.DataFrame, bytes]:
    path = run_dir / "verdicts.csv"
    if not path.exists():
        raise FedsimError(f"no verdicts.csv in run directory {run_dir}")
    raw = _read_file(run_dir, path)
    if not raw.strip():
        _fail(run_dir, "verdicts.csv is empty")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        _fail(run_dir, "verdicts.csv is not UTF-8 text")
    try:
        df = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
        _fail(run_dir, f"verdicts.csv is not a valid CSV ({str(exc).splitlines()[0]})")
    missing = [c for c in VERDICT_COLUMNS if c not in df.columns]
    if missing:
        _fail(run_dir, f"verdicts.csv lacks the columns {missing[:4]}")
    if df.empty:
        _fail(run_dir, "verdicts.csv has no rows")
    if not raw.endswith(b"\n"):
        _fail(run_dir, "verdicts.csv does not end with a newline (the file was cut)")
    for k in _KEYS:
        if (df[k] == "").any():
            row = int((df[k] == "").to_numpy().argmax()) + 2
            _fail(run_dir, f"verdicts.csv line {row} has an empty {k}")
    bad = ~df["verdict"].isin(VERDICTS)
    if bad.any():
        _fail(run_dir, f"verdicts.csv has the verdict {df['verdict'][bad].iloc[0]!r}, "
                       f"not one of {list(VERDICTS)}")
    if not df["horizon"].str.fullmatch(r"\d{1,18}").all():
        _fail(run_dir, "verdicts.csv has a horizon that is not a positive integer of at most "
                       "18 digits")
    for col in _NUMBERS:
        vals = pd.to_numeric(df[col].replace("", "nan"), errors="coerce")
        bad = vals.isna() & ~df[col].str.strip().str.lower().isin(("", "nan"))
        if bad.any():
            row = int(bad.to_numpy().argmax()) + 2
            _fail(run_dir, f"verdicts.csv line {row} has {col} = {df[col][bad].iloc[0][:20]!r}, "
                           "not a number")
    return df, raw


#: the largest file of a run directory read (verdicts.csv, meta/*.json, suite.json)
MAX_FILE_BYTES = 256 * 2**20

#: the optional fields of a meta/*.json file the report reads, and their JSON types
_META_FIELDS: dict[str, tuple[type, ...]] = {
    "mode": (str,), "title": (str,), "description": (str,), "x_label": (str,),
    "bound_status": (str, type(None)), "quantity": (str,), "failure": (str, type(None)),
    "expected_slope": (int, float, type(None)), "hypotheses": (list,), "constants": (list,),
    "notes": (list,), "step_sizes": (dict,), "representative": (dict, type(None))}
#: the items of a meta list field
_META_ITEMS = {"hypotheses": dict, "constants": dict, "notes": str}


def _read_file(run_dir: Path, path: Path) -> bytes:
    """The bytes of a regular file of at most :data:`MAX_FILE_BYTES` (after symlinks): a
    link to /dev/zero, a FIFO or a huge file is refused before it is opened."""
    import stat

    try:
        st = os.stat(path)
    except OSError as exc:
        _fail(run_dir, f"{path.relative_to(run_dir)} cannot be read ({exc.strerror})")
    if not stat.S_ISREG(st.st_mode):
        _fail(run_dir, f"{path.relative_to(run_dir)} is not a regular file")
    if st.st_size > MAX_FILE_BYTES:
        _fail(run_dir, f"{path.relative_to(run_dir)} has {st.st_size} bytes, more than a run "
                       f"directory's file ({MAX_FILE_BYTES})")
    return path.read_bytes()


def _meta_problem(m: Any) -> str | None:
    if not (isinstance(m, dict) and isinstance(m.get("theorem"), str)
            and isinstance(m.get("scenario"), str)):
        return "is not an object with theorem and scenario"
    for key, types in _META_FIELDS.items():
        if key in m and (not isinstance(m[key], types) or isinstance(m[key], bool)):
            return f"has {key} of type {type(m[key]).__name__}"
        item = _META_ITEMS.get(key)
        if item is not None and key in m and not all(isinstance(x, item) for x in m[key]):
            return f"has a {key} entry that is not a {item.__name__}"
    return None


def _check_meta(run_dir: Path) -> dict[str, str]:
    out = {}
    for p in sorted((run_dir / "meta").glob("*.json")):
        raw = _read_file(run_dir, p)
        try:
            m = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            _fail(run_dir, f"meta/{p.name} is not valid JSON")
        problem = _meta_problem(m)
        if problem is not None:
            _fail(run_dir, f"meta/{p.name} {problem}")
        out[p.name] = hashlib.sha256(raw).hexdigest()
    return out


def _read_manifest(run_dir: Path) -> dict | None:
    path = run_dir / "suite.json"
    if not path.is_file():
        if (run_dir / "results").is_dir() or (run_dir / "store.sqlite").exists():
            _fail(run_dir, "suite.json is missing (the run did not finish)")
        return None
    try:
        m = json.loads(_read_file(run_dir, path).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        _fail(run_dir, "suite.json is not valid JSON")
    if not isinstance(m, dict):
        _fail(run_dir, "suite.json is not a JSON object")
    return m


def check_run_dir(run_dir: str | os.PathLike) -> None:
    """Raise :class:`FedsimError` (one line) unless ``run_dir`` is sound (module doc)."""
    from fedsim.validation.montecarlo_store import run_dir_holder

    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise FedsimError(f"run directory {run_dir} does not exist")
    holder = run_dir_holder(run_dir)
    if holder is not None:
        raise FedsimError(f"run directory {run_dir} is being written by another fedsim "
                          f"process (pid {holder}); wait for it to finish")
    m = _read_manifest(run_dir)
    df, raw = _read_verdicts(run_dir)
    metas = _check_meta(run_dir)
    if m is None or "verdict_rows" not in m:
        return  # hand-built or pre-manifest run directory: structural checks only
    if list(df.columns) != m.get("verdict_columns"):
        _fail(run_dir, "verdicts.csv has other columns than suite.json lists")
    if len(df) != m["verdict_rows"]:
        _fail(run_dir, f"verdicts.csv has {len(df)} rows, suite.json says "
                       f"{m['verdict_rows']} (truncated?)")
    if hashlib.sha256(raw).hexdigest() != m.get("verdicts_sha256"):
        _fail(run_dir, "verdicts.csv is not the file the run wrote (sha256 differs from "
                       "suite.json)")
    expected = m.get("meta_sha256")
    if not isinstance(expected, dict):
        _fail(run_dir, "suite.json has no meta_sha256 table")
    for name in sorted(set(expected) | set(metas)):
        if name not in metas:
            _fail(run_dir, f"meta/{name} is missing")
        if name not in expected:
            _fail(run_dir, f"meta/{name} is not part of the run")
        if metas[name] != expected[name]:
            _fail(run_dir, f"meta/{name} is not the file the run wrote (sha256 differs)")
