"""The in-point time budget of ``fedsim search`` (issue 21): a point runs where it can be
stopped.

A signal handler (SIGALRM) runs only between Python bytecodes, so it cannot stop a point
stuck in one long C call (a large enumeration in numpy, ``sum(range(10**12))``).  Inside
:func:`point_worker` (``run_search`` holds one unless ``workers=1``) every point is built
and measured in a separate worker process (:func:`fedsim.validation.montecarlo_backends.new_pool`:
it ignores SIGINT and dies with the search); when the time left runs out the worker is
killed, whatever it is doing, and :func:`measure_within` raises :class:`PointStopped` --
the search records the point as stopped by the budget (status ``TIMEOUT``) and starts a
fresh worker for the next point.  With ``workers=1`` (debugging, tests) or outside
:func:`point_worker`, the point runs in this process and only SIGALRM stops it.

The worker returns the point's fields (:func:`measure_point`), not the instance: the
numbers are the same in both places (same code, same seeds).
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from fedsim.errors import ConfigError

__all__ = ["PointStopped", "PointCrashed", "measure_point", "measure_within", "point_worker"]


class PointStopped(Exception):
    """The search budget ran out inside a point; ``seconds`` it ran, ``killed``: whether its
    worker process was killed (else a SIGALRM stopped it in this process)."""

    def __init__(self, seconds: float, killed: bool) -> None:
        super().__init__(f"stopped by budget after {seconds:.1f} s")
        self.seconds, self.killed = seconds, killed


class PointCrashed(ConfigError):
    """The worker process measuring a point died (a crash, the kernel's OOM killer)."""


def measure_point(family: Any, full: dict[str, Any], max_states: int, replicates: int,
                  seed: int) -> dict[str, Any]:
    """Build ``family`` at ``full``, measure it, evaluate its simulation checks on
    :data:`fedsim.validation.verdict.CHECK_REPLICATES` engine runs (when it declares any and
    has a scenario) and judge it (:func:`fedsim.validation.verdict.judge`): the fields of its
    search row (``point_verdict``, ``status``, ``claim``, the hypotheses and ``note`` are the
    verdict row's)."""
    from fedsim.validation.families.mc import engine_runs
    from fedsim.validation.verdict import (
        CHECK_REPLICATES,
        Evidence,
        Target,
        evaluate_checks,
        judge,
    )

    inst = family.build(full)
    m = inst.measure(max_states=max_states, replicates=replicates, seed=seed)
    checks = list(inst.sim_checks)
    outcomes = None
    if not checks or inst.scenario is not None:
        runs = (engine_runs(inst.scenario, inst.metric, inst.horizon, CHECK_REPLICATES, seed)
                if checks else [])
        outcomes = evaluate_checks(checks, runs)
    v = judge(Target.of_instance(inst), Evidence.of_measurement(m), outcomes)
    return {"theorem": inst.theorem, "mode": inst.mode, "horizon": inst.horizon,
            "bound": inst.bound_value, "status": v.status, "claim": v.claim,
            "point_verdict": v.verdict, "note": v.note,
            "unknown_hypotheses": "; ".join(v.unknown_hypotheses),
            "failing_hypotheses": "; ".join(v.failing_hypotheses),
            "measured": m.value, "error": m.error, "method": m.method, "oracle": m.detail,
            "n_oracle": m.n}


class _Worker:
    """One killable worker process, started when first needed and after each kill."""

    def __init__(self) -> None:
        self.ex: cf.ProcessPoolExecutor | None = None

    def run(self, seconds: float, args: tuple) -> dict[str, Any]:
        from fedsim.validation.montecarlo_backends import new_pool

        if self.ex is None:
            self.ex = new_pool(1)
        t0 = time.perf_counter()
        fut = self.ex.submit(measure_point, *args)
        try:
            return fut.result(timeout=max(seconds, 1e-3))
        except cf.TimeoutError:
            self.close(kill=True)
            raise PointStopped(time.perf_counter() - t0, killed=True) from None
        except BrokenProcessPool:
            self.close(kill=True)
            raise PointCrashed(f"the worker process measuring this point died after "
                               f"{time.perf_counter() - t0:.1f} s") from None
        except BaseException:  # Ctrl-C: stop the worker now
            if not fut.done():
                self.close(kill=True)
            raise

    def close(self, kill: bool = False) -> None:
        from fedsim.validation.montecarlo_backends import kill_pool

        ex, self.ex = self.ex, None
        if ex is None:
            return
        if kill:
            kill_pool(ex)
        ex.shutdown(wait=True, cancel_futures=True)


_ACTIVE: list[_Worker] = []


@contextlib.contextmanager
def point_worker(enabled: bool = True) -> Iterator[None]:
    """Within this block :func:`measure_within` runs points in a killable worker process
    (module doc); ``enabled=False``: in this process."""
    if not enabled:
        yield
        return
    w = _Worker()
    _ACTIVE.append(w)
    try:
        yield
    finally:
        _ACTIVE.remove(w)
        w.close(kill=True)


@contextlib.contextmanager
def _alarm(seconds: float | None) -> Iterator[None]:
    """Raise :class:`PointStopped` after ``seconds`` (SIGALRM; only in the main thread of a
    process that has it, else no limit)."""
    if (seconds is None or not hasattr(signal, "setitimer")
            or threading.current_thread() is not threading.main_thread()):
        yield
        return
    t0 = time.perf_counter()

    def ring(signum: int, frame: Any) -> None:
        raise PointStopped(time.perf_counter() - t0, killed=False)

    old = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-3))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _picklable(obj: Any) -> bool:
    """Whether ``obj`` can be sent to a worker process (a family built in a test from a
    lambda cannot: it is measured in this process)."""
    import pickle

    try:
        pickle.dumps(obj)
    except Exception:  # noqa: BLE001 -- any failure means: keep it in this process
        return False
    return True


def measure_within(seconds: float | None, family: Any, full: dict[str, Any],
                   max_states: int, replicates: int, seed: int) -> dict[str, Any]:
    """:func:`measure_point` within ``seconds`` (None: no limit); raises
    :class:`PointStopped` when they run out (module doc)."""
    args = (family, full, max_states, replicates, seed)
    if seconds is not None and _ACTIVE and _picklable(family):
        return _ACTIVE[-1].run(seconds, args)
    with _alarm(seconds):
        return measure_point(*args)
