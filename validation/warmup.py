"""Compile a run's kernels once, before the workers start (issue 19 item 6, issue 29 item 4).

The compiled replay (``fedsim.jit``, numba) is cached on disk.  A cold cache costs every
worker process the same compile: two pool workers that both meet a new scenario kind both
compile it.  :func:`warm_up` runs one replicate of a *tiny instance* of each scenario kind
among the pending tasks (:func:`tiny_scenario`: the same scenario with a horizon of
:data:`WARM_STEPS` server steps), so every kernel the run needs is compiled (or loaded)
once and written to the disk cache; the pool or Dask workers of the same machine then load
it.  The kinds are spread over as many processes as the run has local workers (compiling
is single-threaded: on 2 cores, two kinds compile at once), kinds likely to share a kernel
in one process; an in-process run (``workers=1``) compiles in the calling process.  Its
result is thrown away: records never depend on it.  Its last line says how many distinct
replay kernels the kinds need and how many functions it compiled, with their CPU seconds.

What counts as one kind (:func:`kind_key`): the scenario's structure and every value that is
not a number (algorithm and problem names, execution model, client rule, metrics, ...);
numbers (sizes, step sizes, horizons, seeds) change no compiled type, so the grid points of
one scenario share one warm-up.  A kind whose tiny instance fails is skipped: the workers
compile it, and the real tasks record their own errors.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterable
from typing import Any

__all__ = ["kind_key", "tiny_scenario", "warm_up", "warm_kind", "warm_kinds", "WARM_STEPS"]

#: server steps of a warm-up instance: enough to run every event kind of a timeline
WARM_STEPS = 8

#: scenario fields that never decide what is compiled
_IGNORED = ("name", "seed", "horizon")


def _shape(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return "<int>"
    if isinstance(value, float):
        return "<float>"
    if isinstance(value, dict):
        return {str(k): _shape(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        kinds = sorted({json.dumps(_shape(v), sort_keys=True) for v in value})
        return ["<list>", *kinds]
    return type(value).__name__


def kind_key(scenario: dict) -> str:
    """The scenario kind of a scenario dict (``Scenario.to_dict()``): its structure and its
    non-numeric values, numbers replaced by their type (a list by the set of its items'
    kinds, whatever its length)."""
    return json.dumps(_shape({k: v for k, v in scenario.items() if k not in _IGNORED}),
                      sort_keys=True)


def tiny_scenario(scenario: dict, steps: int = WARM_STEPS) -> dict:
    """``scenario`` with a horizon of at most ``steps`` server steps (its simulated-time
    limit kept)."""
    out = dict(scenario)
    horizon = dict(out.get("horizon") or {})
    given = horizon.get("steps")
    horizon["steps"] = steps if given is None else min(int(given), steps)
    out["horizon"] = horizon
    return out


class _CompileCount:
    """A numba event listener (``numba.core.event``, "numba:compile"): how many functions
    this process compiled (cache misses; a load from the disk cache is no event) and the
    CPU seconds of the outermost compiles (a nested compile is counted in its caller's)."""

    def __init__(self) -> None:
        from numba.core import event

        class Listener(event.Listener):
            def on_start(inner, ev: Any) -> None:  # noqa: N805
                self.depth += 1
                if self.depth == 1:
                    self.cpu0 = time.process_time()

            def on_end(inner, ev: Any) -> None:  # noqa: N805
                self.depth -= 1
                self.compiled += 1
                if self.depth == 0:
                    self.cpu += time.process_time() - self.cpu0

        self.depth, self.compiled, self.cpu, self.cpu0 = 0, 0, 0.0, 0.0
        self.listener = Listener()

    def __enter__(self) -> _CompileCount:
        from numba.core import event

        event.register("numba:compile", self.listener)
        return self

    def __exit__(self, *exc: Any) -> None:
        from numba.core import event

        event.unregister("numba:compile", self.listener)


def warm_kind(scenario: dict) -> dict[str, Any]:
    """One replicate of the tiny instance of ``scenario`` (:func:`tiny_scenario`), in this
    process; returns ``{"ok", "kernels", "compiled", "compile_cpu"}``: whether it ran,
    the names of the replay kernels it needed (:func:`fedsim.engine.replay.group_kernel.
    built_kernels`, compiled or loaded), and the functions it compiled with their CPU
    seconds."""
    from fedsim.config import Scenario
    from fedsim.engine import run_batch
    from fedsim.engine.replay.group_kernel import built_kernels

    before = len(built_kernels())
    ok = True
    with _CompileCount() as cc:
        try:
            run_batch(Scenario.from_dict(tiny_scenario(scenario)), [0])
        except Exception:  # noqa: BLE001 -- the real tasks record their own errors
            ok = False
    return {"ok": ok, "kernels": sorted(set(built_kernels()[before:])),
            "compiled": cc.compiled, "compile_cpu": cc.cpu}


def _kernel_key(scenario: dict) -> str:
    """What most decides a kind's replay kernel (its rules, problem view and metrics):
    the problem's kind, the algorithm and its client rule, the recorded metrics.  The
    warm-up runs kinds of one key in one process, one after the other, so the second
    loads what the first compiled instead of two processes compiling it at once."""
    prob = scenario.get("problem") or {}
    alg = scenario.get("algorithm") or {}
    rec = scenario.get("record") or {}
    get = (lambda d, k: d.get(k) if isinstance(d, dict) else None)
    return json.dumps([get(prob, "kind"), get(alg, "name"), get(alg, "client_rule"),
                       get(rec, "metrics")], sort_keys=True, default=str)


def warm_kinds(scenarios: list[dict]) -> list[dict[str, Any]]:
    """:func:`warm_kind` of each scenario, in order, in this process."""
    return [warm_kind(sc) for sc in scenarios]


def _processes(workers: int | None, kinds: int) -> int:
    """The warm-up's processes: the run's worker count (``None``: every core), at most one
    per kind; 1 (``workers == 1``, an in-process run) compiles in this process."""
    cores = os.cpu_count() or 1
    n = cores if workers is None else int(workers)
    return max(1, min(n, cores, kinds))


def warm_up(payloads: Iterable[dict], *, progress: bool = True,
            workers: int | None = None) -> dict[str, Any]:
    """Run a tiny instance of each scenario kind of ``payloads`` (task payloads with a
    ``"scenario"`` dict); returns ``{"kinds", "failed", "seconds", "kernels", "compiled",
    "compile_cpu", "processes"}``: ``kernels`` the number of distinct replay kernels
    (one per combination of rules, problem view and metrics) the kinds need, ``compiled``
    the functions compiled (the kernels and the leaf functions they did not find in the
    disk cache), ``compile_cpu`` their CPU seconds summed over the processes.

    ``workers`` (the run's worker count; ``None``: every core): with more than one, the
    kinds are compiled in that many processes at once (at most one per kind and core,
    the kinds likely to share a kernel in one process;
    :func:`fedsim.validation.montecarlo_backends.new_pool`), each writing what it compiles
    to the disk cache the run's workers then load; with one, in this process.

    With ``progress``, a progress bar ``compiling kernels`` (one step per kind) on stderr,
    then one line with the kinds, the kernels, the functions compiled and the seconds.
    """
    first: dict[str, dict] = {}
    for p in payloads:
        sc = p.get("scenario") if isinstance(p, dict) else None
        if isinstance(sc, dict):
            first.setdefault(kind_key(sc), sc)
    t0 = time.perf_counter()
    procs = _processes(workers, len(first))
    results: list[dict[str, Any]] = []
    bar = None
    if progress and first:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(first), desc="compiling kernels", unit="kind", file=sys.stderr,
                   dynamic_ncols=True)
    try:
        if procs <= 1:
            for sc in first.values():
                results.append(warm_kind(sc))
                if bar is not None:
                    bar.update(1)
        else:
            results = _warm_in_pool(list(first.values()), procs, bar)
    finally:
        if bar is not None:
            bar.close()
    seconds = time.perf_counter() - t0
    failed = sum(not r["ok"] for r in results)
    kernels = len({k for r in results for k in r["kernels"]})
    compiled = sum(r["compiled"] for r in results)
    cpu = sum(r["compile_cpu"] for r in results)
    if progress and first:
        more = f" ({failed} could not be warmed up)" if failed else ""
        sys.stderr.write(f"fedsim: {len(first)} scenario kind(s) need {kernels} replay "
                         f"kernel(s); {compiled} function(s) compiled ({cpu:.1f} CPU s), the "
                         f"rest loaded, in {seconds:.1f} s on {procs} process(es){more}\n")
    return {"kinds": len(first), "failed": failed, "seconds": seconds, "kernels": kernels,
            "compiled": compiled, "compile_cpu": cpu, "processes": procs}


def _warm_in_pool(scenarios: list[dict], procs: int, bar: Any) -> list[dict[str, Any]]:
    """:func:`warm_kind` of each scenario in a pool of ``procs`` processes, the kinds of
    one kernel key (:func:`_kernel_key`) in one process; a kind whose process fails counts
    as not warmed up."""
    import concurrent.futures as cf

    from fedsim.validation.montecarlo_backends import new_pool

    buckets: dict[str, list[dict]] = {}
    for sc in scenarios:
        buckets.setdefault(_kernel_key(sc), []).append(sc)
    out: list[dict[str, Any]] = []
    pool = new_pool(procs)
    try:
        futures = {pool.submit(warm_kinds, b): len(b) for b in buckets.values()}
        for fut in cf.as_completed(futures):
            try:
                out.extend(fut.result())
            except Exception:  # noqa: BLE001 -- a broken worker: the tasks compile it
                out.extend({"ok": False, "kernels": [], "compiled": 0, "compile_cpu": 0.0}
                           for _ in range(futures[fut]))
            if bar is not None:
                bar.update(futures[fut])
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return out
