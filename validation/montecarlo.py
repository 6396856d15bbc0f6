"""Monte-Carlo runner: many independent tasks, a resumable on-disk result store.

Issue 6 item 2.  A *task* names a top-level function ``"module:function"`` and a
JSON-serialisable ``payload``; the function derives all of its randomness from the
payload (e.g. ``fedsim.rng.Streams(payload["seed"], payload["replicate"])``).  The
runner never touches a random generator, so a record depends only on
``(fn, payload)``: results are bit-identical whatever the backend (in-process,
process pool, Dask) and whatever the number of workers.

Store: one SQLite database per run directory, ``run_dir/store.sqlite``, one row per task
(:mod:`fedsim.validation.montecarlo_db`).  A record is ``{"task_id", "fn", "status",
"value", "reason", "payload_hash", "payload", "checksum"}`` (``payload`` is the task's
payload, JSON-normalised, kept so that a mismatch can say which field changed;
``checksum`` is the sha256 of the rest, see :mod:`fedsim.validation.montecarlo_schema`)
with ``status`` in ``"ok" | "diverged" | "error"``:

* ``ok``       -- ``value`` is the function's dict, normalised through JSON
  (numpy scalars and arrays become floats and lists; NaN/inf are kept, written in
  Python's ``NaN``/``Infinity`` JSON dialect);
* ``diverged`` -- the function returned a dict with ``"diverged": True``; the dict
  is kept in ``value`` and ``reason`` is its ``"reason"`` entry (or ``"diverged"``);
* ``error``    -- the function raised; ``reason`` is ``"ExcType: first line"`` and
  ``value`` is None.  A worker process that dies (segfault, ``os._exit``) gives
  ``"WorkerCrash: ..."``.

Resume policy: a stored record that fails verification (checksum, schema; see
:mod:`fedsim.validation.montecarlo_store`) is treated as missing and recomputed.  On a re-run
with the same tasks, ``ok`` and ``diverged`` records are kept
(divergence is a deterministic outcome of the payload) and **error records are
retried** (an error may be transient: memory, a killed worker, a bug since fixed).
A record whose payload hash differs from the task's raises :class:`FedsimError`
(the run directory belongs to other arguments) unless ``overwrite=True``.
An interrupted run (Ctrl-C, a killed job) loses nothing that was written: the records of
a chunk are written by the parent process, as one transaction, as soon as the chunk
finishes.

Backends (:func:`run_tasks`):

* ``workers=1``                 -- in the calling process, no pool (debugging, tests);
* ``workers=None | N > 1``      -- ``concurrent.futures.ProcessPoolExecutor`` with
  N (default ``os.cpu_count()``) processes started by ``forkserver`` (``spawn``
  where unavailable); tasks are sent in chunks (:func:`montecarlo_plan.plan_chunks`,
  the same whatever N and the backend: ``CHUNK`` = 16 tasks, or, for a task function with
  a group key such as the suites' ``run_replicate``, up to ``GROUP_CHUNK`` = 64 tasks of
  one run set or of consecutive small run sets) and a chunk's records are committed when it
  returns, so a kill loses at most the chunks in flight.  Within a chunk, consecutive tasks
  whose function has a batch variant (``fn.batch``, e.g.
  ``fedsim.validation.worker.run_replicates``) run in one call of it; records stay one per
  task.  The forkserver imports ``montecarlo_backends.PRELOAD`` (the suites' task module)
  once, so pool workers start with it loaded;
* ``dask="local"``              -- a ``dask.distributed.LocalCluster`` with
  ``n_workers=workers or cpu_count``, one thread each, separate processes;
* ``dask="tcp://host:port"``    -- an existing Dask scheduler (every worker must be
  able to import fedsim and the task functions).

If a worker process crashes, the pool is rebuilt and the unfinished tasks are
re-submitted once; if the pool breaks again, the remaining tasks run one at a time
in a single worker process so that the task that kills its worker is identified and
recorded as an error, and the run goes on.

The pieces: :mod:`fedsim.validation.montecarlo_store` (tasks, hashes, the record store
and the lock), :mod:`fedsim.validation.montecarlo_db` (the SQLite database) and
:mod:`fedsim.validation.montecarlo_backends` (executing tasks on each backend);
this module holds the runner, :func:`run_tasks`, and re-exports their public names.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from fedsim.validation.montecarlo_backends import (
    execute_task,
    run_dask,
    run_inprocess,
    run_pool,
)
from fedsim.validation.montecarlo_plan import resolve_task_function
from fedsim.validation.montecarlo_store import (
    Task,
    atomic_write_json,
    audit_add,
    canonical_json,
    load_records,
    lock_run_dir,
    new_audit,
    payload_hash,
    records_frame,
    verify_record,
    write_records,
)

from fedsim.errors import ConfigError, FedsimError, check_integer, require
from fedsim.faults import fault_point

__all__ = [
    "Task",
    "run_tasks",
    "payload_hash",
    "load_records",
    "execute_task",
    "atomic_write_json",
    "records_frame",
    "RESUME_POLICY",
]

RESUME_POLICY = "ok and diverged records are kept; error records are retried"


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


class _Sink:
    """Writes records as they arrive and advances the progress bar."""

    def __init__(self, run_dir: Path, out: dict[str, dict], bar: Any) -> None:
        self.run_dir, self.out, self.bar = run_dir, out, bar

    def __call__(self, recs: list[dict]) -> None:
        if not recs:
            return
        write_records(self.run_dir, recs)  # one transaction per chunk
        fault_point("chunk")  # the kill -9 tests (fedsim.faults)
        for rec in recs:
            self.out[rec["task_id"]] = rec
        if self.bar is not None:
            self.bar.update(len(recs))


def _make_bar(total: int, initial: int, desc: str, enabled: bool) -> Any:
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, desc=desc, unit="task", file=sys.stderr,
                dynamic_ncols=True, smoothing=0.1)


def _warm_up(todo: list[tuple[Task, str]], progress: bool, workers: int | None) -> None:
    """Compile what the pending tasks will need, before any worker starts: each task
    function with a ``warmup`` attribute (``fn.warmup(payloads, progress=..., workers=...)``,
    e.g. :func:`fedsim.validation.warmup.warm_up`; ``workers`` the run's local worker count,
    ``None`` for all cores) is called once with its pending payloads, so the workers load
    the kernels from the disk cache instead of each compiling them."""
    by_fn: dict[str, list[dict]] = {}
    for t, _ in todo:
        by_fn.setdefault(t.fn, []).append(t.payload)
    for fn, payloads in by_fn.items():
        try:
            warm = getattr(resolve_task_function(fn), "warmup", None)
        except Exception:  # noqa: BLE001 -- the tasks record the import error themselves
            continue
        if callable(warm):
            params = inspect.signature(warm).parameters
            takes = "workers" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())
            # a warm-up written before it took ``workers`` is called as it was
            warm(payloads, progress=progress, **({"workers": workers} if takes else {}))


def run_tasks(tasks: Iterable[Task], run_dir: str | os.PathLike, *, workers: int | None = None,
              dask: str | None = None, progress: bool = True, desc: str = "replicates",
              overwrite: bool = False, dask_security: Any = None,
              stats: dict | None = None,
              on_audit: Callable[[dict], None] | None = None) -> dict[str, dict]:
    """Run every task not already finished under ``run_dir``; return ``task_id -> record``.

    ``workers``: None -> ``os.cpu_count()`` processes; 1 -> in-process; N -> N processes
    (or N Dask workers with ``dask="local"``).  ``dask``: None, ``"local"`` or a scheduler
    address ``"tcp://host:port"`` / ``"tls://host:port"``; ``dask_security``: a
    ``distributed.Security`` passed to the Client (TLS).  ``overwrite=True`` recomputes
    tasks whose stored record was computed from a different payload instead of raising.
    Records are written as tasks finish (see the module docstring for layout and resume
    policy); the returned dict holds every task's record, in the order of ``tasks``.
    The run directory is locked for the duration (:func:`lock_run_dir`).

    The stored records are read and verified once: that pass also makes the count of
    :func:`fedsim.validation.montecarlo_store.audit_records`, handed to ``on_audit`` (before
    any task runs) and stored in ``stats["records"]`` with ``computed``; ``stats["seconds"]``
    receives the wall seconds of the phases ``read``, ``warmup`` and ``tasks``.
    """
    with lock_run_dir(run_dir):
        return _run_tasks(tasks, run_dir, workers=workers, dask=dask, progress=progress,
                          desc=desc, overwrite=overwrite, dask_security=dask_security,
                          stats=stats if stats is not None else {}, on_audit=on_audit)


def _stale(run_dir: Path, t: Task, rec: dict) -> FedsimError:
    where = ""
    if isinstance(rec.get("payload"), dict):
        diff = _diff_paths(rec["payload"], json.loads(canonical_json(t.payload)))
        more = ", ..." if len(diff) > 4 else ""
        where = f" (differs in: {', '.join(diff[:4])}{more})"
    return FedsimError(
        f"run directory {run_dir} holds a result for task {t.task_id!r} computed "
        f"from a different payload{where}: the arguments or the scenario "
        "definitions changed; use a new --out directory or overwrite=True")


def _run_tasks(tasks: Iterable[Task], run_dir: str | os.PathLike, *, workers: int | None,
               dask: str | None, progress: bool, desc: str, overwrite: bool,
               dask_security: Any, stats: dict,
               on_audit: Callable[[dict], None] | None) -> dict[str, dict]:
    tasks = list(tasks)
    if workers is not None:
        try:
            check_integer("workers", workers, low=1)
        except ConfigError:
            require(False, "workers", workers, "must be None or an integer >= 1")
    require(dask is None or dask == "local" or (isinstance(dask, str) and "://" in dask),
            "dask", dask, "must be None, 'local' or a scheduler address like tcp://host:port")
    seen: set[str] = set()
    for t in tasks:
        require(isinstance(t, Task), "tasks", type(t).__name__, "must contain Task objects")
        require(t.task_id not in seen, "task_id", t.task_id, "must be unique within a run")
        seen.add(t.task_id)
    run_dir = Path(run_dir)
    seconds = stats.setdefault("seconds", {})

    t0 = time.perf_counter()
    out: dict[str, dict] = {}
    todo: list[tuple[Task, str]] = []
    audit = new_audit()
    for t in tasks:  # the one read of the stored records: verify, count, keep or redo
        h = payload_hash(t)
        rec, problem = verify_record(run_dir, t.task_id)
        kind = audit_add(audit, t, rec, problem, h)
        if kind == "stale_payload" and not overwrite:
            raise _stale(run_dir, t, rec)
        if kind == "reused":
            out[t.task_id] = rec
        else:
            todo.append((t, h))
    audit["computed"] = len(todo)
    stats["records"] = audit
    seconds["read"] = time.perf_counter() - t0
    if on_audit is not None:
        on_audit(audit)

    t0 = time.perf_counter()
    _warm_up(todo, progress, workers if dask is None else None)
    seconds["warmup"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    bar = _make_bar(len(tasks), len(tasks) - len(todo), desc, progress and len(tasks) > 0)
    sink = _Sink(run_dir, out, bar)
    try:
        if todo:
            if dask is not None:
                run_dask(todo, dask, workers, sink, security=dask_security)
            elif workers == 1:
                run_inprocess(todo, sink)
            else:
                run_pool(todo, workers or os.cpu_count() or 1, sink)
    finally:
        if bar is not None:
            bar.close()
    seconds["tasks"] = time.perf_counter() - t0
    missing = [t.task_id for t in tasks if t.task_id not in out]
    if missing:  # cannot happen unless a backend lost a result; never return silently short
        raise FedsimError(f"{len(missing)} task(s) finished without a record, e.g. {missing[0]!r}")
    return {t.task_id: out[t.task_id] for t in tasks}
