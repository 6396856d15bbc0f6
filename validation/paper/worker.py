"""The task function of the paper suite: one replicate of one arm -> curves on a time grid.

Called by :func:`fedsim.validation.montecarlo.run_tasks` as ``run_arm(payload)``; everything
random comes from ``(scenario.seed, replicate)`` (:mod:`fedsim.rng`), so a record depends
on the payload only.  The curves are the recorded metrics read as step functions of
simulated time (the value of the last record at or before each grid time), the busy
fraction likewise, and the first recorded time each target is reached
(:func:`fedsim.problems.evaluation.time_to_accuracy`).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from fedsim.validation.warmup import warm_up

__all__ = ["run_arm", "step_values"]


def step_values(times: np.ndarray, values: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """``values`` of the last ``times`` entry at or before each grid point (NaN before the
    first)."""
    idx = np.searchsorted(times, grid, side="right") - 1
    out = np.where(idx >= 0, values[np.maximum(idx, 0)], np.nan)
    return out.astype(np.float64)


def run_arm(payload: dict) -> dict[str, Any]:
    """Simulate ``payload["scenario"]`` once; return curves, final values, times to target."""
    from fedsim import config
    from fedsim.engine import run
    from fedsim.errors import check_sim_time
    from fedsim.problems.evaluation import time_to_accuracy

    cpu0 = time.process_time()
    sc = config.Scenario.from_dict(payload["scenario"])
    tr = run(sc, int(payload["replicate"]))
    check_sim_time(tr.sim_time, tr.steps_done)  # an error record, with the reason
    grid = np.asarray(payload["grid"], dtype=np.float64)
    mt = tr.time[tr.metric_steps]
    curves, final = {}, {}
    alias = payload.get("alias", {})
    for m in payload["metrics"]:
        v = np.asarray(tr.metrics[alias.get(m, m)], dtype=np.float64)
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
           "sim_time": float(tr.sim_time), "updates": int(tr.client_updates.sum()),
           "cpu_seconds": time.process_time() - cpu0}
    if tr.diverged:
        out.update(diverged=True, reason=f"diverged at step {tr.diverged_step}")
    return out


# the compile step: run_tasks calls it once in the parent with the pending payloads, so the
# pool workers load each scenario kind's kernels from the disk cache instead of compiling
run_arm.warmup = warm_up  # type: ignore[attr-defined]
