"""Monte-Carlo execution backends: in-process, a process pool, or Dask.

Each backend runs ``(Task, payload_hash)`` pairs and hands every record to a ``sink``
callable (the runner's writer) as soon as it exists.  :func:`execute_task` turns a task
into its record (an exception becomes an ``error`` record); the process pool is rebuilt
once if a worker crashes, then the rest runs one task at a time so that a task that kills
its worker is identified (``WorkerCrash``).  Records do not depend on the backend.

Ctrl-C (issue 14 item 5): pool workers ignore SIGINT (:func:`_quiet_worker`), so only the
parent sees ``KeyboardInterrupt``; it then terminates the workers of the pool at once and
lets the interrupt propagate (the CLI prints one line and exits 130).  Dask workers of a
local cluster are started with SIGINT ignored for the same reason (:func:`_sigint_ignored`).
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import json
import multiprocessing as mp
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from fedsim.validation.montecarlo_plan import cut_chunks, plan_chunks, resolve_task_function
from fedsim.validation.montecarlo_store import Task, canonical_json

from fedsim.errors import FedsimError
from fedsim.progress import note_line

__all__ = ["execute_task", "execute_batch", "new_record",
           "run_inprocess", "run_pool", "run_dask", "PRELOAD", "DASK_STALL_SECONDS",
           "set_dask_timeout", "new_pool",
           "kill_pool", "process_gone", "check_main_guarded", "MAX_WORKER_DEATHS"]

#: a backend hands the finished records of a chunk to a sink (stored as one transaction)
Sink = Callable[[list[dict]], None]


_resolve = resolve_task_function


def failure_reason(exc: BaseException) -> str:
    msg = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {msg[0]}" if msg else type(exc).__name__


def new_record(task: Task, phash: str, status: str, reason: str | None) -> dict[str, Any]:
    """A record skeleton; the payload is stored (JSON-normalised) to explain mismatches."""
    return {"task_id": task.task_id, "fn": task.fn, "status": status, "value": None,
            "reason": reason, "payload_hash": phash,
            "payload": json.loads(canonical_json(task.payload))}


def execute_task(task: Task, phash: str) -> dict:
    """Run one task and return its record (exceptions become ``error`` records).

    Only ``Exception`` is caught: ``KeyboardInterrupt``/``SystemExit`` propagate, so an
    interrupted run stops (and resumes later) instead of recording a bogus error.
    """
    rec = new_record(task, phash, "ok", None)
    try:
        value = _normalised(task.fn, _resolve(task.fn)(task.payload))
    except Exception as exc:  # noqa: BLE001 -- every failure is recorded, the run goes on
        rec.update(status="error", reason=failure_reason(exc))
        return rec
    return _finish(rec, value)


def _normalised(fn: str, value: Any) -> dict:
    if not isinstance(value, dict):
        raise TypeError(f"task function {fn} must return a dict, got {type(value).__name__}")
    return json.loads(canonical_json(value))  # normalise: identical on every backend


def _finish(rec: dict, value: dict) -> dict:
    rec["value"] = value
    if value.get("diverged") is True:
        rec["status"] = "diverged"
        rec["reason"] = str(value.get("reason") or "diverged")
    return rec


def execute_batch(items: Sequence[tuple[Task, str]]) -> list[dict]:
    """Records of tasks that share a function with a batch variant (``fn.batch``: a list of
    payloads -> the list of their values), computed by one call of it.  If that call fails
    the tasks run one by one (:func:`execute_task`), so each error is its own task's."""
    fn = items[0][0].fn
    try:
        values = _resolve(fn).batch([t.payload for t, _ in items])
        if len(values) != len(items):
            raise ValueError(f"{fn}.batch returned {len(values)} values for {len(items)}")
        values = [_normalised(fn, v) for v in values]
    except Exception:  # noqa: BLE001 -- rerun one by one: the failing task is recorded
        return [execute_task(t, h) for t, h in items]
    return [_finish(new_record(t, h, "ok", None), v)
            for (t, h), v in zip(items, values, strict=True)]


def _has_batch(fn: str) -> bool:
    try:
        return callable(getattr(_resolve(fn), "batch", None))
    except Exception:  # noqa: BLE001 -- execute_task records the import error
        return False


def _chunk_records(chunk: Sequence[tuple[Task, str]]) -> Iterator[list[dict]]:
    """The records of a chunk as they are computed: consecutive tasks of one function with
    a batch variant go to :func:`execute_batch` together, the others one by one."""
    i = 0
    while i < len(chunk):
        fn = chunk[i][0].fn
        j = i + 1
        if _has_batch(fn):
            while j < len(chunk) and chunk[j][0].fn == fn:
                j += 1
            yield execute_batch(chunk[i:j])
        else:
            yield [execute_task(*chunk[i])]
        i = j


def _run_chunk(chunk: Sequence[tuple[Task, str]]) -> list[dict]:
    """Worker entry point: run a chunk of tasks (:func:`_chunk_records`)."""
    return [rec for recs in _chunk_records(chunk) for rec in recs]


#: modules the forkserver imports once, before it forks any worker (the suites' task
#: function and the engine): each pool worker then starts with them loaded, instead of
#: every worker of every pool importing them again
PRELOAD = ("fedsim.validation.worker",)


def _mp_context() -> mp.context.BaseContext:
    methods = mp.get_all_start_methods()
    if "forkserver" not in methods:
        return mp.get_context("spawn")
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(list(PRELOAD))  # no effect once the forkserver runs
    return ctx


def _die_with_parent() -> None:
    """Ask Linux to send this process SIGKILL when its parent dies
    (``prctl(PR_SET_PDEATHSIG)``), so a pool worker never outlives a killed run; if the
    parent is already gone (the race before the call), exit now.  A no-op elsewhere."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover - no prctl in this libc
        return
    if os.getppid() == 1:
        os._exit(1)


def process_gone(pid: int) -> bool:
    """Whether process ``pid`` has ended -- including as a zombie that its own parent has
    not reaped yet (``kill(pid, 0)`` still succeeds on a zombie: a parent that waits for
    the end of the run's output before reaping it would otherwise keep the workers, which
    hold that output open, alive for ever)."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):  # gone, or the pid now belongs to another user
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False  # no /proc (not Linux): kill(pid, 0) said it exists
    return state in (b"Z", b"X")


def _watch(run_pid: int) -> None:
    while True:
        time.sleep(1.0)
        if process_gone(run_pid):
            os._exit(1)


def _quiet_worker(run_pid: int | None = None) -> None:
    """Pool initializer: the parent handles Ctrl-C, workers ignore SIGINT (no tracebacks).
    A worker dies with its parent (the forkserver; :func:`_die_with_parent`) and, through a
    daemon thread that checks every second, with the run's process ``run_pid``: a killed
    run leaves no worker behind."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent()
    if run_pid is not None:
        threading.Thread(target=_watch, args=(run_pid,), daemon=True,
                         name="fedsim-parent-watch").start()


def new_pool(workers: int) -> cf.ProcessPoolExecutor:
    """A process pool whose workers ignore SIGINT and die with this process
    (:func:`_quiet_worker`)."""
    return cf.ProcessPoolExecutor(max_workers=workers, mp_context=_mp_context(),
                                  initializer=_quiet_worker, initargs=(os.getpid(),))


def kill_pool(ex: cf.ProcessPoolExecutor) -> None:
    """On Ctrl-C: terminate the workers now instead of waiting for their chunks.

    Then wait (at most 5 s) for the executor's manager thread to close its wake-up pipe:
    otherwise CPython's exit hook (``concurrent.futures.process._python_exit``) can race
    that close and print an ``OSError: Bad file descriptor`` traceback after our one line.
    """
    # read before shutdown: shutdown(wait=False) drops the executor's reference to the thread
    manager = getattr(ex, "_executor_manager_thread", None)
    for p in list((getattr(ex, "_processes", None) or {}).values()):
        with contextlib.suppress(Exception):
            p.terminate()
    ex.shutdown(wait=False, cancel_futures=True)
    if manager is not None:
        manager.join(timeout=5)


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """Ignore SIGINT while child processes are started: they inherit SIG_IGN through
    fork and exec, and Python then leaves it ignored.  A Ctrl-C during the start-up
    (a few seconds) is lost; the next one stops the run."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def run_inprocess(todo: list[tuple[Task, str]], sink: Sink) -> None:
    for chunk in plan_chunks(todo):
        for recs in _chunk_records(chunk):  # each record written as soon as it exists
            sink(recs)


def _pool_round(todo: list[tuple[Task, str]], workers: int, chunks: list[list],
                sink: Sink) -> list[tuple[Task, str]]:
    """One pool lifetime over ``chunks``; returns the tasks left unfinished if the pool
    broke."""
    done: set[str] = set()
    ex = new_pool(workers)
    try:
        futs = {ex.submit(_run_chunk, c): c for c in chunks}
        for fut in cf.as_completed(futs):
            try:
                recs = fut.result()
            except BrokenProcessPool:
                break
            sink(recs)
            done.update(rec["task_id"] for rec in recs)
        for fut in futs:  # after a break: keep chunks that finished before it
            if fut.done() and not fut.cancelled() and fut.exception() is None:
                recs = [rec for rec in fut.result() if rec["task_id"] not in done]
                sink(recs)
                done.update(rec["task_id"] for rec in recs)
    except BaseException:  # Ctrl-C, a time limit, a failed write: stop the workers now
        kill_pool(ex)
        raise
    finally:
        ex.shutdown(wait=True, cancel_futures=True)
    return [item for item in todo if item[0].task_id not in done]


#: consecutive worker deaths after which a run stops instead of isolating task after task
MAX_WORKER_DEATHS = 3


def _crash_text(exc: BaseException) -> str:
    parts = [str(exc).strip()]
    if exc.__cause__ is not None and str(exc.__cause__).strip():
        parts.append(str(exc.__cause__).strip().splitlines()[-1])
    return "; ".join(p for p in parts if p) or type(exc).__name__


def _run_isolated(todo: list[tuple[Task, str]], sink: Sink) -> None:
    """One task at a time in a single worker: a crash identifies its task.  After
    :data:`MAX_WORKER_DEATHS` deaths in a row (a worker that cannot even start: nothing any
    task does) the run stops with the first death's error (:class:`FedsimError`); the
    records finished so far are kept."""
    ex = new_pool(1)
    deaths: list[str] = []
    try:
        for item in todo:
            try:
                rec = ex.submit(_run_chunk, [item]).result()[0]
                deaths.clear()
            except BrokenProcessPool as exc:
                deaths.append(_crash_text(exc))
                ex.shutdown(wait=True, cancel_futures=True)
                if len(deaths) >= MAX_WORKER_DEATHS:
                    raise FedsimError(
                        f"the worker processes keep dying ({len(deaths)} in a row; first: "
                        f"{deaths[0]}); the finished records are saved. Run with one worker "
                        "(--workers 1, workers=1) to see the error") from None
                ex = new_pool(1)
                rec = new_record(item[0], item[1], "error",
                              "WorkerCrash: the worker process died while running this task")
            sink([rec])
    except KeyboardInterrupt:
        kill_pool(ex)
        raise
    finally:
        ex.shutdown(wait=True, cancel_futures=True)


def _guard_line(path: str, lineno: int) -> bool:
    """Whether line ``lineno`` of the script ``path`` lies inside a top-level
    ``if __name__ == "__main__":`` block (unknown: True)."""
    import ast

    try:
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return True
    for node in tree.body:
        if node.lineno <= lineno <= (node.end_lineno or node.lineno):
            t = node.test if isinstance(node, ast.If) else None
            return (isinstance(t, ast.Compare) and isinstance(t.left, ast.Name)
                    and t.left.id == "__name__" and len(t.comparators) == 1
                    and isinstance(t.comparators[0], ast.Constant)
                    and t.comparators[0].value == "__main__")
    return True


def check_main_guarded() -> None:
    """Refuse (:class:`FedsimError`, one line naming the fix) to start worker processes
    from a script that calls fedsim at its top level without ``if __name__ ==
    "__main__":``: the spawn/forkserver workers re-import the script, which would start the
    run again in every worker (each one crashing, or waiting for the run directory) instead
    of working."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    spec_name = getattr(getattr(main, "__spec__", None), "name", None) or ""
    if main is None or not path or spec_name.endswith("__main__"):
        return  # interactive, -c or `python -m package`: multiprocessing re-imports nothing
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_globals is vars(main) and frame.f_code.co_name == "<module>":
            if not _guard_line(path, frame.f_lineno):
                raise FedsimError(
                    f"{path} starts worker processes at its top level, line {frame.f_lineno}: "
                    "each worker re-imports the script; put the call under "
                    "`if __name__ == \"__main__\":` (or pass workers=1)")
            return
        frame = frame.f_back


def run_pool(todo: list[tuple[Task, str]], workers: int, sink: Sink) -> None:
    check_main_guarded()
    chunks = plan_chunks(todo)
    workers = max(1, min(workers, len(chunks)))
    left = _pool_round(todo, workers, chunks, sink)
    if left:  # the pool broke: rebuild once with chunk 1, then isolate
        left = _pool_round(left, max(1, min(workers, len(left))), cut_chunks(left, 1), sink)
    if left:
        _run_isolated(left, sink)


#: seconds without a finished chunk after which a Dask run says so on stderr (once per stall)
DASK_STALL_SECONDS = 60.0
_DASK_TIMEOUT: list[float | None] = [None]


def set_dask_timeout(seconds: float | None) -> None:
    """Make a Dask run fail (:class:`FedsimError`) after ``seconds`` without a finished chunk
    (``fedsim validate --dask-timeout``); ``None``: wait for as long as it takes."""
    _DASK_TIMEOUT[0] = seconds


def _watched(client: Any, address: str, futures: list) -> Iterator[Any]:
    """The futures as they finish.  After :data:`DASK_STALL_SECONDS` without one, one line
    on stderr names the cluster and its worker count and the wait goes on; after the
    ``--dask-timeout`` (:func:`set_dask_timeout`) the run stops with a one-line error (the
    finished records are saved)."""
    from dask.distributed import wait

    pending = set(futures)
    last = time.monotonic()
    warned = False
    while pending:
        limit = _DASK_TIMEOUT[0]
        step = DASK_STALL_SECONDS if limit is None else min(DASK_STALL_SECONDS, limit)
        try:
            done, pending = wait(pending, timeout=step, return_when="FIRST_COMPLETED")
        except TimeoutError:
            done = set()
        if not done:
            stalled = time.monotonic() - last
            try:
                n = len(client.scheduler_info().get("workers", {}))
            except Exception:  # noqa: BLE001 -- the count is only informative
                n = "an unknown number of"
            if limit is not None and stalled >= limit:
                raise FedsimError(f"no progress for {stalled:.0f} s on the Dask cluster "
                                  f"{address} ({n} workers); finished records are saved, "
                                  "re-run to resume")
            if not warned:
                note_line(f"fedsim: no progress for {stalled:.0f} s on the Dask cluster "
                          f"{address} ({n} workers connected); still waiting "
                          "(--dask-timeout SECONDS gives up instead)")
                warned = True
            continue
        last, warned = time.monotonic(), False
        yield from done


def run_dask(todo: list[tuple[Task, str]], address: str, workers: int | None,
              sink: Sink, security: Any = None) -> None:
    """Run on Dask: ``address`` is ``"local"`` (a LocalCluster on this machine, loopback
    only) or a scheduler address; ``security`` (a ``distributed.Security``) is passed to
    the Client for a ``tls://`` scheduler."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise FedsimError("the Dask backend needs dask[distributed]: "
                          "pip install 'fedsim[dask]'") from exc
    cluster = None
    if address == "local":
        n = workers or os.cpu_count() or 1
        with _sigint_ignored():
            # CRITICAL: a worker's "failed to communicate with scheduler during heartbeat"
            # while the cluster shuts down is not a loss (a task's error reaches us through
            # its future); without this, six tracebacks followed a successful run
            cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                   dashboard_address=None, silence_logs=50)
        client = Client(cluster)
    else:
        try:
            client = Client(address, timeout=30, security=security)
        except (OSError, TimeoutError) as exc:
            raise FedsimError(f"cannot connect to the Dask scheduler at {address}: {exc}") from exc
    try:
        futs = {}
        for c in plan_chunks(todo):
            futs[client.submit(_run_chunk, c, pure=False)] = c
        for fut in _watched(client, address, list(futs)):
            try:
                recs = fut.result()
            except Exception as exc:  # noqa: BLE001 -- e.g. KilledWorker: record, go on
                recs = [new_record(t, h, "error", failure_reason(exc)) for t, h in futs[fut]]
            sink(recs)
    finally:
        _quiet_close(client, cluster)


def _quiet_close(client: Any, cluster: Any) -> None:
    """Close the client and the local cluster; every record is already in the sink, so an
    error while closing loses nothing and is one line on stderr, never a traceback."""
    import logging

    quiet = [logging.getLogger(n) for n in ("distributed", "tornado", "asyncio")]
    levels = [lg.level for lg in quiet]
    for lg in quiet:
        lg.setLevel(logging.CRITICAL)
    failed = []
    try:
        for what in (client, cluster):
            if what is None:
                continue
            try:
                what.close()
            except Exception as exc:  # noqa: BLE001 -- nothing is lost at this point
                failed.append(f"{type(what).__name__}: {type(exc).__name__}")
        if failed:
            note_line(f"fedsim: note: closing Dask failed ({'; '.join(failed)}); "
                      "every record was saved")
    finally:
        for lg, lv in zip(quiet, levels, strict=True):
            lg.setLevel(lv)
