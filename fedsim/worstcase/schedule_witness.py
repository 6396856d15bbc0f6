"""A delay schedule's quadratic witness as a scenario anyone can ``fedsim run``.

For a one-upload-per-step schedule (a delay list) of FedAsync with ``Q = 1`` (delayed
gradient descent) the fedsim scenario is ``async_sgd`` with ``tau_C`` at least the largest
delay (Koloskova's step factor is then 1: PersA-FL's server rule, the same iterates,
:mod:`fedsim.servers.delay_adaptive`); of :class:`~fedsim.worstcase.methods.DelayAdaptive`
it is ``async_sgd`` with the method's own ``tau_C`` and step rule; either on the ``recorded``
execution model (:mod:`fedsim.engine.models.recorded`): a file of per-step staleness,
clients reconstructed as in Koloskova et al. 2022, Example 3 (every version ``v >= 1`` read
at most once -- a schedule that reads one twice is not such a timeline, and no scenario is
written).  The problem is the best 1-D quadratic ``h x^2/2`` of the curvature grid
(:func:`fedsim.worstcase.witness.curvature_grid`, ``h`` in ``(0, L]``: convex quadratics are
in every L-smooth class and bounded below) with ``w0 = sqrt(2 f_gap / h)`` so that
``f(w0) - f_* = f_gap``.  This witness is a lower bound of the worst case (a quadratic);
the Gram interpolant (:mod:`fedsim.worstcase.gram_witness`) is the sharper one, and
:func:`recorded_timeline` gives its scenario the same timeline
(:mod:`fedsim.worstcase.engine_witness`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from fedsim.worstcase.classes import FunctionClass
from fedsim.worstcase.schedule import Schedule
from fedsim.worstcase.witness import curvature_grid, quadratic_table

__all__ = ["recorded_witness", "recorded_timeline", "recorded_scenario"]


def _step_rule(method: Any, stale: np.ndarray) -> dict[str, Any]:
    """``tau_C`` and ``step_rule`` of the scenario: the method's own (async_sgd), else
    ``tau_C`` at least the largest delay, where every rule's factor is 1 (FedAsync)."""
    if getattr(method, "name", "") == "async_sgd":
        return {"tau_C": int(method.tau_c), "step_rule": method.rule}
    return {"tau_C": max(1, int(stale.max())), "step_rule": "koloskova"}


def recorded_timeline(method: Any, schedule: Schedule, out_dir: str | Path,
                      name: str) -> dict[str, Any]:
    """Write the schedule's per-step staleness to ``<out_dir>/<name>.staleness`` and return
    ``{"schedule": path, "n": workers, "algorithm": the [algorithm] table without w0}`` of
    its ``async_sgd`` scenario on the ``recorded`` model (module doc), or ``{"reason": ...}``
    when the schedule is not a recorded-model timeline (nothing written)."""
    from fedsim.engine.models.recorded import schedule_clients
    from fedsim.errors import ConfigError

    if any(len(cs) != 1 for cs in schedule.steps):
        return {"reason": "not one upload per step"}
    if int(getattr(method, "Q", 1)) != 1 or getattr(method, "name", "") not in (
            "fedasync", "delayed_gd", "async_sgd"):
        return {"reason": "the recorded timeline runs async_sgd: FedAsync with Q = 1 or "
                "async_sgd only"}
    stale = np.array([cs[0].stale for cs in schedule.steps], dtype=np.int64)
    n = int(np.sum(np.arange(len(stale)) - stale == 0))
    try:
        schedule_clients(stale, max(n, 1))
    except ConfigError as exc:
        return {"reason": f"not a recorded-model timeline: {exc}"}
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    sched_path = out / f"{name}.staleness"
    sched_path.write_text("# per-step staleness (fedsim.worstcase.schedule_witness)\n"
                          + "".join(f"{int(s)}\n" for s in stale))
    algorithm = {"name": "async_sgd", "model": "recorded",
                 "schedule": str(sched_path.resolve()), "client_rule": "sgd",
                 "Q": 1, "eta": float(method.eta), "batch": 1,
                 "beta": float(getattr(method, "beta", 1.0)), **_step_rule(method, stale)}
    return {"schedule": sched_path, "n": max(n, 1), "algorithm": algorithm}


def recorded_scenario(timeline: dict[str, Any], problem: dict[str, Any], w0: Any, K: int,
                      name: str) -> Any:
    """The :class:`~fedsim.config.Scenario` of ``problem`` (a ``[problem]`` table) from
    ``w0`` along a :func:`recorded_timeline`, every step recorded."""
    from fedsim.config import Scenario

    return Scenario.from_dict({
        "name": name, "seed": 0, "problem": problem,
        "algorithm": {**timeline["algorithm"], "w0": w0},
        "trigger": {"kind": "every_upload"}, "horizon": {"steps": int(K)},
        "record": {"every": 1, "metrics": ["grad_sq", "dist_sq", "f_gap"]}})


def recorded_witness(method: Any, fclass: FunctionClass, schedule: Schedule, measure: str,
                     f_gap: float, out_dir: str | Path, name: str = "schedule-witness",
                     points: int = 2001) -> dict[str, Any]:
    """Write ``<name>.staleness`` and ``<name>.toml`` under ``out_dir`` (module doc) and
    return ``{"toml", "schedule", "h", "value", "n"}``, or ``{"reason": ...}`` when the
    schedule is not a recorded-model timeline.  ``value`` is the quadratic's measure times
    ``f_gap`` (for ``avg_grad_sq``: what the run's ``avg_grad_sq`` at step K reads)."""
    from fedsim.config.io import dump

    timeline = recorded_timeline(method, schedule, out_dir, name)
    if "reason" in timeline:
        return timeline
    n = timeline["n"]
    sq = FunctionClass(kind="strongly_convex", L=fclass.L, mu=0.0)
    hs, vals = curvature_grid(method, schedule, sq, measure, points)
    j = int(np.nanargmax(np.where(hs > 0, vals, -np.inf)))
    h = float(hs[j])
    toml = Path(out_dir) / f"{name}.toml"
    dump(recorded_scenario(timeline, quadratic_table(h, n), math.sqrt(2.0 * f_gap / h),
                           schedule.K, name), toml)
    return {"toml": toml, "schedule": timeline["schedule"], "h": h,
            "value": float(vals[j]) * f_gap, "n": n}
