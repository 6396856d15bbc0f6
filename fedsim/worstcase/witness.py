"""The witness: the worst case realised as a fedsim problem.

In every strongly convex delayed-gradient case of issue 32's prototype the worst case is
the 1-D quadratic ``f(x) = h x^2 / 2`` with curvature ``h = mu``.  This module evaluates
the method on ``h x^2/2`` (``x_* = 0``, ``x_0 = 1``) along the schedule for every ``h`` of a
fine grid (:func:`curvature_grid`: the method's own iterates, :mod:`fedsim.worstcase.methods`,
with the oracle ``grad(i, x) = h x``); where the PEP value equals the grid's maximum to
solver tolerance the quadratic of the maximising curvature *is* a worst case, and
:func:`witness_scenario` writes it as a scenario fedsim runs: ``n`` clients holding the
same 1-D quadratic (``kind = "quadratic"``, ``dim = 1``, ``mu = L = h``, no heterogeneity,
no noise, ``w0 = 1``) along the same schedule.  Where the PEP value is above the grid's
maximum the worst case is not a quadratic of one curvature; no witness is claimed then
(the interpolating function built from the Gram matrix is the witness then:
:mod:`fedsim.worstcase.gram_witness`, and its scenario :mod:`fedsim.worstcase.engine_witness`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fedsim.worstcase.classes import FunctionClass
from fedsim.worstcase.schedule import Schedule

__all__ = ["Witness", "quadratic_value", "curvature_grid", "make_witness",
           "witness_scenario", "simulate_witness", "constant_tau_of", "quadratic_table"]

#: the relative tolerance at which a PEP value "equals" the quadratic's (solver tolerance)
MATCH_RTOL = 1e-4


def quadratic_value(method: Any, schedule: Schedule, h: float, measure: str,
                    nonconvex: bool = False) -> float:
    """The measure of ``method`` on ``f = h x^2/2`` along ``schedule`` from ``x_0 = 1``:
    ``dist_sq`` and ``f_gap`` give ``x_K^2``, ``f_gap_over_dist`` ``h x_K^2 / 2``;
    ``min_grad_sq`` / ``avg_grad_sq`` the min over ``k <= K`` / mean over ``k < K`` of
    ``h^2 x_k^2`` over ``f(x_0) - f_* = h/2`` (``nonconvex``: over
    ``f(x_0) - f(x_K)``, the PEP's normalisation, :mod:`fedsim.worstcase.pep`)."""
    xs = np.array(method.iterates(schedule, lambda i, x: h * x, 1.0), dtype=np.float64)
    if measure in ("dist_sq", "f_gap"):
        return float(xs[-1] ** 2)
    if measure == "f_gap_over_dist":
        return float(h / 2.0 * xs[-1] ** 2)
    g2 = h * h * xs ** 2
    g = g2.min() if measure == "min_grad_sq" else g2[:-1].mean()
    den = h / 2.0 * (1.0 - xs[-1] ** 2) if nonconvex else h / 2.0
    return float(g / den) if den > 0 else float("inf")


def curvature_grid(method: Any, schedule: Schedule, fclass: FunctionClass, measure: str,
                   points: int = 9001) -> tuple[np.ndarray, np.ndarray]:
    """``(h, value)`` over ``points`` curvatures evenly spaced in ``[mu, L]`` (``(0, L]``
    for the nonconvex class: a convex quadratic is in every smooth class)."""
    lo = fclass.mu if fclass.kind == "strongly_convex" else fclass.L / points
    hs = np.linspace(lo, fclass.L, points)
    if hs[0] == 0.0:
        hs = hs[1:]
    nc = fclass.kind == "nonconvex"
    vals = np.array([quadratic_value(method, schedule, float(h), measure, nc) for h in hs])
    return hs, vals


@dataclass(frozen=True)
class Witness:
    """``kind`` ``"quadratic"`` (the PEP value equals the quadratic of curvature ``h`` to
    :data:`MATCH_RTOL`) or ``"none"`` (with ``reason``); ``grid_max`` the largest quadratic
    value on the grid, ``value`` the quadratic's at ``h``; ``scenario`` the fedsim scenario
    realising it (``None`` when the schedule has no scenario, ``reason`` says why)."""

    kind: str
    h: float
    value: float
    grid_max: float
    pep_value: float
    reason: str = ""
    scenario: Any = None

    @property
    def name(self) -> str:
        """A one-line description for tables and reports."""
        if self.kind == "quadratic":
            return f"1-D quadratic, curvature {self.h:.6g}"
        return "none (" + self.reason + ")"

    def to_toml(self, path: str | Path) -> Path:
        """Write :attr:`scenario` as a TOML file anyone can ``fedsim run``."""
        from fedsim.config.io import dump

        if self.scenario is None:
            raise ValueError(f"this witness has no scenario: {self.reason}")
        p = Path(path)
        dump(self.scenario, p)
        return p


def constant_tau_of(schedule: Schedule) -> int | None:
    """``tau`` when ``schedule`` reads as ``Schedule.constant(tau, K)`` (one upload per
    step), else ``None``."""
    if schedule.K == 0 or any(len(cs) != 1 for cs in schedule.steps):
        return None
    tau = schedule.max_staleness()
    ref = Schedule.constant(tau, schedule.K)
    return tau if schedule.reads() == ref.reads() else None


def quadratic_table(h: float, n: int) -> dict[str, Any]:
    """The ``[problem]`` table of ``n`` clients holding ``h x^2 / 2`` (no heterogeneity, no
    noise)."""
    return {"kind": "quadratic", "n": int(n), "dim": 1, "mu": float(h), "L": float(h),
            "heterogeneity": 0.0, "noise_sd": 0.0, "seed": 0}


def witness_scenario(method: Any, schedule: Schedule, h: float, base: Any = None,
                     metrics: tuple[str, ...] = ("dist_sq", "f_gap", "grad_sq")) -> Any:
    """The fedsim :class:`~fedsim.config.Scenario` of the quadratic witness (module doc).

    With ``base`` (the scenario whose event table gave ``schedule``): ``base`` with its
    problem swapped for the witness (the table writer draws only delay, timer, event and
    sampling streams, so the timeline is the same).  Without: a constant-``tau`` FedAsync
    schedule is realised by ``tau + 1`` clients with constant compute time 1 and no
    download or upload time in the physical model (they upload round-robin and the
    ``k``-th upload read version ``max(0, k - tau)``); another schedule gives ``None``."""
    from fedsim.config import Scenario

    problem = quadratic_table(h, 1)
    if base is not None:
        d = base.to_dict()
        problem["n"] = int(base.n)
        d["problem"] = problem
        d["algorithm"] = {**d["algorithm"], "w0": 1.0}
        d["horizon"] = {"steps": schedule.K}
        d["record"] = {"every": 1, "metrics": list(metrics)}
        d["name"] = f"{d.get('name', 'scenario')}-worst-case-witness"
        return Scenario.from_dict(d)
    tau = constant_tau_of(schedule)
    if tau is None or getattr(method, "name", "") not in ("delayed_gd", "fedasync"):
        return None
    problem["n"] = tau + 1
    d = {"name": f"worst-case-witness-{method.name}-tau{tau}", "seed": 0, "problem": problem,
         "algorithm": {"name": "fedasync", "model": "physical", "client_rule": "sgd",
                       "Q": int(method.Q), "eta": float(method.eta), "batch": 1,
                       "beta": float(method.beta), "w0": 1.0},
         "delays": {"download": {"kind": "constant", "value": 0.0},
                    "compute": {"kind": "constant", "value": 1.0},
                    "upload": {"kind": "constant", "value": 0.0},
                    "compute_per": "round"},
         "trigger": {"kind": "every_upload"},
         "horizon": {"steps": schedule.K},
         "record": {"every": 1, "metrics": list(metrics)}}
    return Scenario.from_dict(d)


def make_witness(method: Any, fclass: FunctionClass, schedule: Schedule, measure: str,
                 pep_value: float, base: Any = None, points: int = 9001) -> Witness:
    """The witness of a solved PEP (module doc)."""
    hs, vals = curvature_grid(method, schedule, fclass, measure, points)
    j = int(np.argmax(vals))
    gmax = float(vals[j])
    if not np.isfinite(pep_value):
        return Witness(kind="none", h=float(hs[j]), value=gmax, grid_max=gmax,
                       pep_value=pep_value, reason="the PEP has no value")
    if abs(pep_value - gmax) > MATCH_RTOL * max(abs(pep_value), 1e-12):
        why = ("the worst case is above every quadratic of one curvature"
               if pep_value > gmax else "the PEP value is below a quadratic's: solver error")
        return Witness(kind="none", h=float(hs[j]), value=gmax, grid_max=gmax,
                       pep_value=pep_value, reason=why)
    sc = witness_scenario(method, schedule, float(hs[j]), base)
    reason = "" if sc is not None else "no fedsim scenario realises this schedule"
    return Witness(kind="quadratic", h=float(hs[j]), value=gmax, grid_max=gmax,
                   pep_value=pep_value, reason=reason, scenario=sc)


def simulate_witness(witness: Witness, measure: str = "dist_sq") -> tuple[float, Schedule]:
    """Run the witness scenario with fedsim: ``(the measure at step K over its value at
    step 0, the schedule of the run's own event table)``.  ``dist_sq`` / ``f_gap`` only."""
    import fedsim
    from fedsim.engine import problem_for
    from fedsim.engine.dispatch import write_tables

    sc = witness.scenario
    df = fedsim.run(sc).to_pandas()
    col = {"dist_sq": "dist_sq", "f_gap": "f_gap"}[measure]
    value = float(df[col].iloc[-1] / df[col].iloc[0])
    table = write_tables(sc, problem_for(sc), [0]).tables[0]
    return value, Schedule.from_table(table)


