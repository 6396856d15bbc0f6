"""The task function of the paper suite: one replicate of one arm -> curves on a time grid.

Called by :func:`fedsim.validation.montecarlo.run_tasks` as ``run_arm(payload)``; everything
random comes from ``(scenario.seed, replicate)`` (:mod:`fedsim.rng`), so a record depends
on the payload only.  The curves are the recorded metrics read as step functions of
simulated time (the value of the last record at or before each grid time), the busy
fraction likewise, and the first recorded time each target is reached
(:func:`fedsim.problems.evaluation.time_to_accuracy`).

What is recorded at every ``record.every``-th step is only what a page or a claim reads
along the run (:func:`series_metrics`): the payload's ``curve`` metrics (the page's curve),
the metrics with a target (a time to reach it) and the metrics that need more than the
global model (the clients' personal models, a running sum).  Every other metric is read
at the horizon only, so it is evaluated once, on the run's final model
(``Trace.final_w``), with the Recorder's own metric functions
(:func:`fedsim.trace.metric_functions`): the number the engine records at its last step.
A payload without ``curve`` records every metric along the run, as before.

``run_arm.batch = run_arms`` (a list of payloads -> their results, in order): the Monte-Carlo
backends call it once per chunk (:data:`fedsim.validation.montecarlo_plan.CHUNK` tasks, cut
in task order; :func:`fedsim.validation.paper.paper_tasks` keeps an arm's replicates
consecutive), and the payloads of one arm (:func:`arm_group`) run through one
:func:`fedsim.engine.run_batch` call, whose trace ``k`` equals
``fedsim.engine.run(scenario, replicates[k])`` bit for bit, so a task gives the same record
alone or in any chunk.  There is deliberately no ``run_arm.group``: grouped tasks are
packed into chunks of up to :data:`~fedsim.validation.montecarlo_plan.GROUP_CHUNK`, and
40 replicates of a costly arm (Fig. 2(b)'s Moreau methods) in one chunk leave the other
worker idle at the end of a stage.
"""

from __future__ import annotations

import copy
import json
import math
import time
from typing import Any

import numpy as np
from fedsim.validation.warmup import warm_up

__all__ = ["run_arm", "run_arms", "step_values", "series_metrics", "arm_group",
           "warm_arms"]


def step_values(times: np.ndarray, values: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """``values`` of the last ``times`` entry at or before each grid point (NaN before the
    first)."""
    idx = np.searchsorted(times, grid, side="right") - 1
    out = np.where(idx >= 0, values[np.maximum(idx, 0)], np.nan)
    return out.astype(np.float64)


def _needs_run(name: str) -> bool:
    """Whether a recorded metric needs more than the global model at its step (the clients'
    personal models, or the running sum of the iterates)."""
    from fedsim.trace import PERSONAL

    return name == "ergodic_f_gap" or name.removeprefix("val_") in PERSONAL


def series_metrics(payload: dict) -> list[str] | None:
    """The experiment metrics ``payload`` reads along the run (module docstring), in the
    payload's order; None when it gives no ``curve`` (every metric along the run)."""
    if "curve" not in payload:
        return None
    alias = payload.get("alias", {})
    keep = set(payload["curve"]) | set(payload.get("targets", {}))
    return [m for m in payload["metrics"]
            if m in keep or _needs_run(alias.get(m, m))]


def _scenario(payload: dict) -> tuple[dict, list[str]]:
    """The scenario to run (its ``record.metrics`` cut to the series metrics) and the
    recorded names evaluated on the final model only."""
    sc = payload["scenario"]
    series = series_metrics(payload)
    if series is None:
        return sc, []
    alias = payload.get("alias", {})
    along = {alias.get(m, m).removeprefix("avg_") for m in series}  # avg_m: m recorded
    recorded = list(sc["record"]["metrics"])
    if not along:  # nothing read along the run: keep the first metric (step 0 and last)
        along = {recorded[0]}
    sc = copy.deepcopy(sc)
    sc["record"]["metrics"] = [m for m in recorded if m in along]
    return sc, [m for m in recorded if m not in along]


def arm_group(payload: dict) -> str:
    """The key by which :func:`run_arms` batches payloads: everything but the replicate
    index (one arm, one stage)."""
    return json.dumps({k: v for k, v in payload.items() if k != "replicate"},
                      sort_keys=True, default=str)


def _result(tr: Any, payload: dict, final_fns: list) -> dict[str, Any]:
    from fedsim.errors import check_sim_time
    from fedsim.problems.evaluation import time_to_accuracy
    from fedsim.trace import running_averages

    check_sim_time(tr.sim_time, tr.steps_done)  # an error record, with the reason
    grid = np.asarray(payload["grid"], dtype=np.float64)
    mt = tr.time[tr.metric_steps]
    alias = payload.get("alias", {})
    at_end = {name: fn for name, fn in final_fns}
    curves, final = {}, {}
    series = series_metrics(payload)
    for m in payload["metrics"]:
        name = alias.get(m, m)
        if name in at_end:
            final[m] = float(at_end[name](tr.final_w)) if not tr.diverged else math.nan
            continue
        v = np.asarray((running_averages(tr.metrics) if name.startswith("avg_") else
                        tr.metrics)[name], dtype=np.float64)
        if series is None or m in payload.get("curve", ()):
            curves[m] = step_values(mt, v, grid).tolist()
        final[m] = float(v[-1]) if not tr.diverged else math.nan
    time_to = {}
    for m, target in payload.get("targets", {}).items():
        v = np.asarray(tr.metrics[alias.get(m, m)], dtype=np.float64)
        time_to[m] = time_to_accuracy(mt, v, float(target))
    busy = (step_values(tr.concurrency_time, tr.concurrency_busy, grid).tolist()
            if tr.concurrency_time.size else [math.nan] * grid.size)
    out = {"curves": curves, "final": final, "time_to": time_to, "busy": busy,
           "concurrency_mean": float(tr.concurrency_mean), "steps": int(tr.steps_done),
           "sim_time": float(tr.sim_time), "updates": int(tr.client_updates.sum())}
    if tr.diverged:
        out.update(diverged=True, reason=f"diverged at step {tr.diverged_step}")
    return out


def run_arms(payloads: list[dict]) -> list[dict[str, Any]]:
    """:func:`run_arm` of every payload, in order: the payloads of one arm (the same
    :func:`arm_group`) run through one :func:`fedsim.engine.run_batch` call (module
    docstring); ``cpu_seconds`` is the call's CPU time shared equally.  An exception
    propagates (the backends then run the payloads one by one, so that each failure is
    recorded against its own task)."""
    from fedsim import config
    from fedsim.engine import problem_for, run_batch
    from fedsim.engine.setup import metric_params
    from fedsim.trace import metric_functions

    groups: dict[str, list[int]] = {}
    for k, p in enumerate(payloads):
        groups.setdefault(arm_group(p), []).append(k)
    out: list[dict[str, Any]] = [{}] * len(payloads)
    for idx in groups.values():
        cpu0 = time.process_time()
        first = payloads[idx[0]]
        sd, at_end = _scenario(first)
        sc = config.Scenario.from_dict(sd)
        traces = run_batch(sc, [int(payloads[k]["replicate"]) for k in idx])
        fns = (metric_functions(problem_for(sc), at_end, *metric_params(sc))
               if at_end else [])
        for k, tr in zip(idx, traces, strict=True):
            out[k] = _result(tr, payloads[k], fns)
        cpu = (time.process_time() - cpu0) / len(idx)
        for k in idx:
            out[k]["cpu_seconds"] = cpu
    return out


def warm_arms(payloads: list[dict], *, progress: bool = True,
              workers: int | None = None) -> dict[str, Any]:
    """:func:`fedsim.validation.warmup.warm_up` on the scenarios the payloads really run
    (their ``record.metrics`` cut to the series metrics, which decide what is compiled)."""
    def scenario(p: dict) -> Any:
        try:
            return {"scenario": _scenario(p)[0]}
        except Exception:  # noqa: BLE001 -- a bad payload: its task records the error
            return p

    return warm_up([scenario(p) for p in payloads], progress=progress, workers=workers)


def run_arm(payload: dict) -> dict[str, Any]:
    """Simulate ``payload["scenario"]`` once; return curves, final values, times to target."""
    return run_arms([payload])[0]


run_arm.batch = run_arms  # type: ignore[attr-defined]
# the compile step: run_tasks calls it once in the parent with the pending payloads, so the
# pool workers load each scenario kind's kernels from the disk cache instead of compiling
run_arm.warmup = warm_arms  # type: ignore[attr-defined]
