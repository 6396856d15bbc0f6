"""The Monte-Carlo task function: one simulated replicate -> the measured quantities.

:func:`run_replicate` is what :func:`validation.montecarlo.run_tasks` calls in a worker
process (``fn = "validation.worker:run_replicate"``).  Its payload is plain JSON::

    {"scenario": <Scenario.to_dict()>, "replicate": r, "metric": "avg_grad_sq",
     "horizons": [T1, T2, ...], "representative": bool}

The run's randomness is ``fedsim.rng.Streams(scenario["seed"], r)`` only, so the result
depends on the payload alone, whatever the worker or backend.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fedsim.config import Scenario
from fedsim.engine import run

__all__ = ["run_replicate", "MAX_REPR_STEPS", "MAX_REPR_POINTS"]

MAX_REPR_STEPS = 20_000   # staleness values kept for the representative histogram
MAX_REPR_POINTS = 2_000   # concurrency-curve points kept for the representative plot


def _at(trace: Any, metric: str, horizons: list[int]) -> list[float]:
    steps = np.asarray(trace.metric_steps)
    vals = np.asarray(trace.metrics[metric], dtype=np.float64)
    out = []
    for h in horizons:
        j = int(np.searchsorted(steps, h))
        out.append(float(vals[j]) if j < steps.size and steps[j] == h else math.nan)
    return out


def _thin(t: np.ndarray, b: np.ndarray, k: int) -> tuple[list[float], list[float]]:
    if t.size <= k:
        return t.tolist(), b.tolist()
    idx = np.unique(np.linspace(0, t.size - 1, k).astype(int))
    return t[idx].tolist(), b[idx].tolist()


def run_replicate(payload: dict) -> dict:
    """Run one replicate and return the metric at each horizon plus run diagnostics.

    Returned keys: ``values`` (the metric at each horizon; NaN if a horizon was not
    reached), ``max_staleness`` (max over server steps of t - Omega(t)),
    ``staleness_bound`` (the engine's provable bound, inf if none), ``steps_done``,
    ``sim_time``, ``inner_failures`` (Option C inner solves that hit their iteration cap);
    with ``representative`` also ``staleness_steps``, ``concurrency_time``,
    ``concurrency_busy``, ``concurrency_mean``.  A diverged run returns
    ``diverged=True`` and a reason (the runner records it as such; it never raises).
    """
    sc = Scenario.from_dict(payload["scenario"])
    horizons = [int(h) for h in payload["horizons"]]
    trace = run(sc, int(payload["replicate"]))
    stale = np.asarray(trace.staleness_steps, dtype=np.float64)
    stale = stale[np.isfinite(stale)]
    out: dict[str, Any] = {
        "values": _at(trace, payload["metric"], horizons),
        "max_staleness": float(stale.max()) if stale.size else 0.0,
        "staleness_bound": float(trace.staleness_bound),
        "steps_done": int(trace.steps_done),
        "sim_time": float(trace.sim_time),
        "inner_failures": int(getattr(trace, "info", {}).get("inner_failures", 0)),
    }
    if payload.get("representative"):
        out["staleness_steps"] = stale[:MAX_REPR_STEPS].tolist()
        t, b = _thin(np.asarray(trace.concurrency_time, dtype=np.float64),
                     np.asarray(trace.concurrency_busy, dtype=np.float64), MAX_REPR_POINTS)
        out.update(concurrency_time=t, concurrency_busy=b,
                   concurrency_mean=float(trace.concurrency_mean))
    if trace.diverged:
        out["diverged"] = True
        out["reason"] = f"diverged at server step {trace.diverged_step}"
        out["values"] = [math.inf] * len(horizons)
    return out
