"""The Monte-Carlo task function: one simulated replicate -> the measured quantities.

:func:`run_replicate` is what :func:`fedsim.validation.montecarlo.run_tasks` calls in a worker
process (``fn = "fedsim.validation.worker:run_replicate"``).  Its payload is plain JSON::

    {"scenario": <Scenario.to_dict()>, "replicate": r, "metric": "avg_grad_sq",
     "horizons": [T1, T2, ...], "representative": bool}

The run's randomness is ``fedsim.rng.Streams(scenario["seed"], r)`` only, so the result
depends on the payload alone, whatever the worker or backend.

:func:`run_replicate` runs through :func:`fedsim.engine.run_batch`, with a batch variant
(``run_replicate.batch = run_replicates``: a list of payloads -> their results, in order)
that the Monte-Carlo backends call once per chunk, and a group key
(``run_replicate.group``: the payload without ``replicate`` and ``representative``) by
which the backends put one run set's replicates in the same chunks
(:func:`fedsim.validation.montecarlo_plan.plan_chunks`).  Payloads that differ only in
``replicate`` and ``representative`` share one ``run_batch`` call, which replays them along
their timelines with the engine's own compiled rules where the problem has a compiled view
(issue 19; FedAsync on quadratics: bit for bit ``fedsim.engine.run``'s trace), else runs
``fedsim.engine.run`` per replicate.  A replicate's result does not depend on the other
payloads of the call (``run_batch``'s contract), so a task gives the same record alone or
in any chunk.  The replay is the default; ``FEDSIM_BATCHED`` is read only to print a
notice that it has no effect any more.  ``run_replicate_batched`` is the same function
under the name older run directories recorded.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any

import numpy as np
from fedsim.validation.warmup import warm_up

from fedsim.config import Scenario
from fedsim.engine import run_batch
from fedsim.errors import check_sim_time

__all__ = ["run_replicate", "run_replicate_batched", "run_replicates", "task_function",
           "batched_enabled", "MAX_REPR_STEPS", "MAX_REPR_POINTS", "BATCH_ENV"]

#: the environment variable that selects the batched task function ("1")
BATCH_ENV = "FEDSIM_BATCHED"

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
    return run_replicates([payload])[0]


def _summary(trace: Any, payload: dict) -> dict:
    """:func:`run_replicate`'s result from the replicate's trace."""
    horizons = [int(h) for h in payload["horizons"]]
    check_sim_time(trace.sim_time, trace.steps_done)  # an error record, with the reason
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


def batched_enabled() -> bool:
    """Whether ``FEDSIM_BATCHED=1`` is set (accepted, no effect: the replay is the default)."""
    return os.environ.get(BATCH_ENV, "0") == "1"


def task_function() -> str:
    """The Monte-Carlo task function (read by the parent when it builds the tasks):
    ``run_replicate``, whatever ``FEDSIM_BATCHED`` says."""
    return "fedsim.validation.worker:run_replicate"


def _group_key(payload: dict) -> str:
    rest = {k: v for k, v in payload.items() if k not in ("replicate", "representative")}
    return json.dumps(rest, sort_keys=True, default=str)


def run_replicates(payloads: list[dict]) -> list[dict]:
    """:func:`run_replicate` of every payload, in order (module docstring): the
    payloads that share a scenario, metric and horizons run through one
    :func:`fedsim.engine.run_batch` call.  An exception propagates (the backends then run
    the payloads one by one, so that each failure is recorded against its own task)."""
    groups: dict[str, list[int]] = {}
    for k, p in enumerate(payloads):
        groups.setdefault(_group_key(p), []).append(k)
    out: list[dict] = [{}] * len(payloads)
    for idx in groups.values():
        sc = Scenario.from_dict(payloads[idx[0]]["scenario"])
        traces = run_batch(sc, [int(payloads[k]["replicate"]) for k in idx])
        for k, tr in zip(idx, traces, strict=True):
            out[k] = _summary(tr, payloads[k])
    return out


run_replicate.batch = run_replicates  # type: ignore[attr-defined]
# tasks of one run set share a chunk (montecarlo_plan.plan_chunks)
run_replicate.group = _group_key  # type: ignore[attr-defined]
run_replicate.warmup = warm_up  # type: ignore[attr-defined]  (compiled once in the parent)

#: the name run directories made with ``--batched`` recorded: the same task
run_replicate_batched = run_replicate
