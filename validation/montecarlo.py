"""Monte-Carlo runner: many independent tasks, a resumable on-disk result store.

Issue 6 item 2.  A *task* names a top-level function ``"module:function"`` and a
JSON-serialisable ``payload``; the function derives all of its randomness from the
payload (e.g. ``fedsim.rng.Streams(payload["seed"], payload["replicate"])``).  The
runner never touches a random generator, so a record depends only on
``(fn, payload)``: results are bit-identical whatever the backend (in-process,
process pool, Dask) and whatever the number of workers.

Store layout (one JSON file per task, written atomically)::

    run_dir/results/<h[:2]>/<h>.json      h = sha256(task_id) (hex)

A record is ``{"task_id", "status", "value", "reason", "payload_hash", "payload"}``
(``payload`` is the task's payload, JSON-normalised, kept so that a mismatch can say
which field changed) with ``status`` in ``"ok" | "diverged" | "error"``:

* ``ok``       -- ``value`` is the function's dict, normalised through JSON
  (numpy scalars and arrays become floats and lists; NaN/inf are kept, written in
  Python's ``NaN``/``Infinity`` JSON dialect);
* ``diverged`` -- the function returned a dict with ``"diverged": True``; the dict
  is kept in ``value`` and ``reason`` is its ``"reason"`` entry (or ``"diverged"``);
* ``error``    -- the function raised; ``reason`` is ``"ExcType: first line"`` and
  ``value`` is None.  A worker process that dies (segfault, ``os._exit``) gives
  ``"WorkerCrash: ..."``.

Resume policy: on a re-run with the same tasks, ``ok`` and ``diverged`` records are
kept (divergence is a deterministic outcome of the payload) and **error records are
retried** (an error may be transient: memory, a killed worker, a bug since fixed).
A record whose payload hash differs from the task's raises :class:`FedsimError`
(the run directory belongs to other arguments) unless ``overwrite=True``.
An interrupted run (Ctrl-C, a killed job) loses nothing that was written: every
record is written by the parent process as soon as its task finishes, through a
temporary file in the same directory, ``fsync`` and ``os.replace``.

Backends (:func:`run_tasks`):

* ``workers=1``                 -- in the calling process, no pool (debugging, tests);
* ``workers=None | N > 1``      -- ``concurrent.futures.ProcessPoolExecutor`` with
  N (default ``os.cpu_count()``) processes started by ``forkserver`` (``spawn``
  where unavailable); tasks are sent in chunks of ``ceil(n / (4 N))`` (at most 32)
  and a chunk's records are written when it returns, so a kill loses at most the
  chunks in flight;
* ``dask="local"``              -- a ``dask.distributed.LocalCluster`` with
  ``n_workers=workers or cpu_count``, one thread each, separate processes;
* ``dask="tcp://host:port"``    -- an existing Dask scheduler (every worker must be
  able to import fedsim and the task functions).

If a worker process crashes, the pool is rebuilt and the unfinished tasks are
re-submitted once; if the pool breaks again, the remaining tasks run one at a time
in a single worker process so that the task that kills its worker is identified and
recorded as an error, and the run goes on.
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import importlib
import json
import math
import multiprocessing as mp
import os
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fedsim.errors import FedsimError, require

__all__ = [
    "Task",
    "run_tasks",
    "payload_hash",
    "record_path",
    "load_records",
    "execute_task",
    "atomic_write_json",
    "records_frame",
    "RESUME_POLICY",
]

RESUME_POLICY = "ok and diverged records are kept; error records are retried"

_STATUSES = ("ok", "diverged", "error")


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


# ----------------------------------------------------------------------------- JSON helpers


def _jsonable(obj: Any) -> Any:
    """``json.dumps`` default hook: numpy scalars/arrays -> Python numbers/lists."""
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=_jsonable)


def payload_hash(task: Task) -> str:
    """sha256 of the canonical JSON of ``(fn, payload)``: what a record was computed from."""
    return hashlib.sha256(_canonical({"fn": task.fn, "payload": task.payload}).encode()).hexdigest()


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


def _read_record(path: Path) -> dict | None:
    """The record at ``path``, or None if missing or unreadable (then it is recomputed)."""
    try:
        with open(path, encoding="utf-8") as fh:
            rec = json.load(fh)
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(rec, dict) or rec.get("status") not in _STATUSES:
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
        rec = _read_record(p)
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


# ----------------------------------------------------------------------------- execution


def _resolve(fn: str) -> Callable[[dict], Any]:
    mod, name = fn.split(":")
    return getattr(importlib.import_module(mod), name)


def _reason(exc: BaseException) -> str:
    msg = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {msg[0]}" if msg else type(exc).__name__


def _record(task: Task, phash: str, status: str, reason: str | None) -> dict[str, Any]:
    """A record skeleton; the payload is stored (JSON-normalised) to explain mismatches."""
    return {"task_id": task.task_id, "status": status, "value": None, "reason": reason,
            "payload_hash": phash, "payload": json.loads(_canonical(task.payload))}


def _diff_paths(a: Any, b: Any, prefix: str = "") -> list[str]:
    """Dotted paths where two JSON values differ (for the mismatch message)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b:
                out.append(f"{prefix}{k}")
            else:
                out += _diff_paths(a[k], b[k], f"{prefix}{k}.")
        return out
    return [] if a == b else [prefix.rstrip(".") or "(payload)"]


def execute_task(task: Task, phash: str) -> dict:
    """Run one task and return its record (exceptions become ``error`` records).

    Only ``Exception`` is caught: ``KeyboardInterrupt``/``SystemExit`` propagate, so an
    interrupted run stops (and resumes later) instead of recording a bogus error.
    """
    rec = _record(task, phash, "ok", None)
    try:
        value = _resolve(task.fn)(task.payload)
        if not isinstance(value, dict):
            raise TypeError(f"task function {task.fn} must return a dict, "
                            f"got {type(value).__name__}")
        value = json.loads(_canonical(value))  # normalise: identical on every backend
    except Exception as exc:  # noqa: BLE001 -- every failure is recorded, the run goes on
        rec.update(status="error", reason=_reason(exc))
        return rec
    rec["value"] = value
    if value.get("diverged") is True:
        rec["status"] = "diverged"
        rec["reason"] = str(value.get("reason") or "diverged")
    return rec


def _run_chunk(chunk: Sequence[tuple[Task, str]]) -> list[dict]:
    """Worker entry point: run a chunk of tasks sequentially."""
    return [execute_task(t, h) for t, h in chunk]


def _chunks(items: list, size: int) -> list[list]:
    return [items[i:i + size] for i in range(0, len(items), size)]


def _mp_context() -> mp.context.BaseContext:
    methods = mp.get_all_start_methods()
    return mp.get_context("forkserver" if "forkserver" in methods else "spawn")


class _Sink:
    """Writes records as they arrive and advances the progress bar."""

    def __init__(self, run_dir: Path, out: dict[str, dict], bar: Any) -> None:
        self.run_dir, self.out, self.bar = run_dir, out, bar

    def __call__(self, rec: dict) -> None:
        atomic_write_json(record_path(self.run_dir, rec["task_id"]), rec)
        self.out[rec["task_id"]] = rec
        if self.bar is not None:
            self.bar.update(1)


def _run_inprocess(todo: list[tuple[Task, str]], sink: _Sink) -> None:
    for item in todo:
        sink(execute_task(*item))


def _pool_round(todo: list[tuple[Task, str]], workers: int, chunk: int,
                sink: _Sink) -> list[tuple[Task, str]]:
    """One pool lifetime; returns the tasks left unfinished if the pool broke."""
    done: set[str] = set()
    ex = cf.ProcessPoolExecutor(max_workers=workers, mp_context=_mp_context())
    try:
        futs = {ex.submit(_run_chunk, c): c for c in _chunks(todo, chunk)}
        for fut in cf.as_completed(futs):
            try:
                recs = fut.result()
            except BrokenProcessPool:
                break
            for rec in recs:
                sink(rec)
                done.add(rec["task_id"])
        for fut in futs:  # after a break: keep chunks that finished before it
            if fut.done() and not fut.cancelled() and fut.exception() is None:
                for rec in fut.result():
                    if rec["task_id"] not in done:
                        sink(rec)
                        done.add(rec["task_id"])
    finally:
        ex.shutdown(wait=True, cancel_futures=True)
    return [item for item in todo if item[0].task_id not in done]


def _run_isolated(todo: list[tuple[Task, str]], sink: _Sink) -> None:
    """One task at a time in a single worker: a crash identifies its task."""
    ex = cf.ProcessPoolExecutor(max_workers=1, mp_context=_mp_context())
    try:
        for item in todo:
            try:
                rec = ex.submit(_run_chunk, [item]).result()[0]
            except BrokenProcessPool:
                ex.shutdown(wait=True, cancel_futures=True)
                ex = cf.ProcessPoolExecutor(max_workers=1, mp_context=_mp_context())
                rec = _record(item[0], item[1], "error",
                              "WorkerCrash: the worker process died while running this task")
            sink(rec)
    finally:
        ex.shutdown(wait=True, cancel_futures=True)


def _run_pool(todo: list[tuple[Task, str]], workers: int, sink: _Sink) -> None:
    workers = max(1, min(workers, len(todo)))
    chunk = max(1, min(32, math.ceil(len(todo) / (4 * workers))))
    left = _pool_round(todo, workers, chunk, sink)
    if left:  # the pool broke: rebuild once with chunk 1, then isolate
        left = _pool_round(left, max(1, min(workers, len(left))), 1, sink)
    if left:
        _run_isolated(left, sink)


def _run_dask(todo: list[tuple[Task, str]], address: str, workers: int | None,
              sink: _Sink) -> None:
    try:
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise FedsimError("the Dask backend needs dask[distributed]: "
                          "pip install 'fedsim[dask]'") from exc
    cluster = None
    if address == "local":
        n = workers or os.cpu_count() or 1
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=40)
        client = Client(cluster)
    else:
        try:
            client = Client(address, timeout=30)
        except OSError as exc:
            raise FedsimError(f"cannot connect to the Dask scheduler at {address}: {exc}") from exc
    try:
        nworkers = max(1, len(client.scheduler_info().get("workers", {})))
        chunk = max(1, min(32, math.ceil(len(todo) / (4 * nworkers))))
        futs = {}
        for c in _chunks(todo, chunk):
            futs[client.submit(_run_chunk, c, pure=False)] = c
        for fut in as_completed(list(futs)):
            try:
                recs = fut.result()
            except Exception as exc:  # noqa: BLE001 -- e.g. KilledWorker: record, go on
                recs = [_record(t, h, "error", _reason(exc)) for t, h in futs[fut]]
            for rec in recs:
                sink(rec)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _make_bar(total: int, initial: int, desc: str, enabled: bool) -> Any:
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, desc=desc, unit="task", file=sys.stderr,
                dynamic_ncols=True, smoothing=0.1)


def run_tasks(tasks: Iterable[Task], run_dir: str | os.PathLike, *, workers: int | None = None,
              dask: str | None = None, progress: bool = True, desc: str = "replicates",
              overwrite: bool = False) -> dict[str, dict]:
    """Run every task not already finished under ``run_dir``; return ``task_id -> record``.

    ``workers``: None -> ``os.cpu_count()`` processes; 1 -> in-process; N -> N processes
    (or N Dask workers with ``dask="local"``).  ``dask``: None, ``"local"`` or a scheduler
    address ``"tcp://host:port"``.  ``overwrite=True`` recomputes tasks whose stored
    record was computed from a different payload instead of raising.
    Records are written as tasks finish (see the module docstring for layout and resume
    policy); the returned dict holds every task's record, in the order of ``tasks``.
    """
    tasks = list(tasks)
    require(workers is None or (isinstance(workers, int) and workers >= 1), "workers", workers,
            "must be None or an integer >= 1")
    require(dask is None or dask == "local" or (isinstance(dask, str) and "://" in dask),
            "dask", dask, "must be None, 'local' or a scheduler address like tcp://host:port")
    seen: set[str] = set()
    for t in tasks:
        require(isinstance(t, Task), "tasks", type(t).__name__, "must contain Task objects")
        require(t.task_id not in seen, "task_id", t.task_id, "must be unique within a run")
        seen.add(t.task_id)
    run_dir = Path(run_dir)
    (run_dir / "results").mkdir(parents=True, exist_ok=True)

    out: dict[str, dict] = {}
    todo: list[tuple[Task, str]] = []
    for t in tasks:
        h = payload_hash(t)
        rec = _read_record(record_path(run_dir, t.task_id))
        if rec is not None and rec.get("task_id") == t.task_id:
            if rec.get("payload_hash") != h and not overwrite:
                where = ""
                if isinstance(rec.get("payload"), dict):
                    diff = _diff_paths(rec["payload"], json.loads(_canonical(t.payload)))
                    more = ", ..." if len(diff) > 4 else ""
                    where = f" (differs in: {', '.join(diff[:4])}{more})"
                raise FedsimError(
                    f"run directory {run_dir} holds a result for task {t.task_id!r} computed "
                    f"from a different payload{where}: the arguments or the scenario "
                    "definitions changed; use a new --out directory or overwrite=True")
            if rec.get("payload_hash") == h and rec["status"] in ("ok", "diverged"):
                out[t.task_id] = rec
                continue
        todo.append((t, h))

    bar = _make_bar(len(tasks), len(tasks) - len(todo), desc, progress and len(tasks) > 0)
    sink = _Sink(run_dir, out, bar)
    try:
        if todo:
            if dask is not None:
                _run_dask(todo, dask, workers, sink)
            elif workers == 1:
                _run_inprocess(todo, sink)
            else:
                _run_pool(todo, workers or os.cpu_count() or 1, sink)
    finally:
        if bar is not None:
            bar.close()
    missing = [t.task_id for t in tasks if t.task_id not in out]
    if missing:  # cannot happen unless a backend lost a result; never return silently short
        raise FedsimError(f"{len(missing)} task(s) finished without a record, e.g. {missing[0]!r}")
    return {t.task_id: out[t.task_id] for t in tasks}
