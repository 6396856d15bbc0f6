"""Compile a run's kernels once, in the parent, before the workers start (issue 19 item 6).

The compiled replay (``fedsim.jit``, numba) is cached on disk.  A cold cache costs every
worker process the same compile: two pool workers that both meet a new scenario kind both
compile it.  :func:`warm_up` runs, in the calling process, one replicate of a *tiny
instance* of each scenario kind among the pending tasks (:func:`tiny_scenario`: the same
scenario with a horizon of :data:`WARM_STEPS` server steps), so every kernel the run needs
is compiled (or loaded) once and written to the disk cache; the pool or Dask workers of
the same machine then load it.  Its result is thrown away: records never depend on it.

What counts as one kind (:func:`kind_key`): the scenario's structure and every value that is
not a number (algorithm and problem names, execution model, client rule, metrics, ...);
numbers (sizes, step sizes, horizons, seeds) change no compiled type, so the grid points of
one scenario share one warm-up.  A kind whose tiny instance fails is skipped: the workers
compile it, and the real tasks record their own errors.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable
from typing import Any

__all__ = ["kind_key", "tiny_scenario", "warm_up", "WARM_STEPS"]

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


def _warm_one(scenario: dict) -> None:
    from fedsim.config import Scenario
    from fedsim.engine import run_batch

    run_batch(Scenario.from_dict(tiny_scenario(scenario)), [0])


def warm_up(payloads: Iterable[dict], *, progress: bool = True) -> dict[str, Any]:
    """Run a tiny instance of each scenario kind of ``payloads`` (task payloads with a
    ``"scenario"`` dict) in this process; returns ``{"kinds", "failed", "seconds"}``.

    With ``progress``, a progress bar ``compiling kernels`` (one step per kind) on stderr,
    then one line with the seconds it took.
    """
    first: dict[str, dict] = {}
    for p in payloads:
        sc = p.get("scenario") if isinstance(p, dict) else None
        if isinstance(sc, dict):
            first.setdefault(kind_key(sc), sc)
    t0 = time.perf_counter()
    failed = 0
    bar = None
    if progress and first:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(first), desc="compiling kernels", unit="kind", file=sys.stderr,
                   dynamic_ncols=True)
    try:
        for sc in first.values():
            try:
                _warm_one(sc)
            except Exception:  # noqa: BLE001 -- the real tasks record their own errors
                failed += 1
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    seconds = time.perf_counter() - t0
    if progress and first:
        more = f" ({failed} could not be warmed up)" if failed else ""
        sys.stderr.write(f"fedsim: kernels of {len(first)} scenario kind(s) compiled or "
                         f"loaded in {seconds:.1f} s{more}\n")
    return {"kinds": len(first), "failed": failed, "seconds": seconds}
