"""The Gram-interpolant witness as a scenario fedsim runs, along the schedule's event table.

The interpolant of a solved PEP (:mod:`fedsim.worstcase.interpolant`) is the fedsim problem
kind ``gram_interpolant`` (:mod:`fedsim.worstcase.interpolant_problem`, registered through
the problem plug-in door, :mod:`fedsim.problems.registry`), its parameters the PEP's data.
:func:`interpolant_scenario` writes the scenario: that problem on every client, ``w0 = x_0``,
and an execution model that writes the PEP's schedule as its event table -- a constant-``tau``
FedAsync schedule as ``tau + 1`` clients of constant compute time in the physical model
(:func:`fedsim.worstcase.witness.witness_scenario`); a delay list of FedAsync with ``Q = 1``
or ``async_sgd`` that is a one-job-per-worker timeline as its ``recorded``-model scenario,
with the staleness file written beside it
(:func:`fedsim.worstcase.schedule_witness.recorded_timeline`); or the scenario whose table
gave the schedule, with its problem swapped.  :func:`simulate_interpolant` runs it with
``fedsim.run`` -- the door every scenario goes through, so ``fedsim run`` on the TOML that
:func:`write_interpolant_witness` writes (``fedsim worstcase --witness-out``) and
``fedsim.engine.run_batch`` on it run the same problem, the same rules and the same table,
bit for bit.  fedsim's own client and server rules apply with sigma = 0 (the problem has no
compiled view: the engine's interpreted path), the table is read back
(:meth:`~fedsim.worstcase.schedule.Schedule.from_table`) and must be the PEP's schedule, and
the trace's ``dist_sq`` / ``f_gap`` / ``grad_sq`` columns are measured against the
interpolant's exact minimum.

What the door does not give: a witness for several clients with different functions
(heterogeneity at ``x*``: the minimiser of a mean of interpolants is not computed, so one
shared function only), for the convex Lipschitz class (no interpolant is built for it), and
a TOML whose staleness file can move: a recorded-model witness names its ``.staleness``
file by its absolute path (the ``recorded`` model's ``schedule`` key).  The PEP's data live
in the TOML itself (54 kB at K = 40, growing like K times the Gram rank), so a witness
beyond a few hundred steps would outgrow a scenario file
(:data:`fedsim.config.io.MAX_SCENARIO_BYTES`; refused in one line).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fedsim.errors import ConfigError, require
from fedsim.worstcase.classes import FunctionClass
from fedsim.worstcase.gram_witness import GRAM_MATCH_RTOL, pep_denominator
from fedsim.worstcase.interpolant import interpolation_data
from fedsim.worstcase.interpolant_problem import (
    NO_HESSIAN,
    InterpolantProblem,
    interpolant_table,
)
from fedsim.worstcase.schedule import Schedule

__all__ = ["InterpolantProblem", "EngineWitness", "simulate_interpolant",
           "interpolant_scenario", "write_interpolant_witness", "NO_HESSIAN"]

#: the measures the engine's trace gives
MEASURES = ("dist_sq", "f_gap", "f_gap_over_dist", "avg_grad_sq")


def interpolant_scenario(method: Any, fclass: FunctionClass, schedule: Schedule, pep: Any,
                         scenario: Any = None, out_dir: str | Path | None = None,
                         name: str = "gram-witness") -> Any:
    """The :class:`~fedsim.config.Scenario` of the Gram interpolant of ``pep`` (a solved PEP
    of ``method`` along ``schedule``) on the schedule's timeline (module doc): ``scenario``
    with its problem swapped, else the physical model (constant ``tau``), else the recorded
    model with ``<out_dir>/<name>.staleness``.  One shared function (no heterogeneity)."""
    from fedsim.config import Scenario
    from fedsim.worstcase.schedule_witness import recorded_scenario, recorded_timeline
    from fedsim.worstcase.witness import witness_scenario

    data, V = interpolation_data(pep)
    require(len(data) == 1, "zeta_sq", len(data),
            "an engine witness is built for one shared function only")
    x0 = V @ pep.points.x0.dense(V.shape[1])
    sc = witness_scenario(method, schedule, 1.0, scenario)
    if sc is not None:
        d = sc.to_dict()
    else:  # a delay list: its recorded-model timeline, the staleness file in out_dir
        require(out_dir is not None, "out_dir", out_dir,
                "is needed for a delay list's recorded-model timeline")
        tl = recorded_timeline(method, schedule, out_dir, name)
        require("reason" not in tl, "schedule", schedule.K,
                f"no fedsim scenario realises it ({tl.get('reason')}); give the scenario "
                "whose table it is")
        return recorded_scenario(tl, interpolant_table(*data[0], fclass, tl["n"]),
                                 [float(v) for v in x0], schedule.K, name)
    d["problem"] = interpolant_table(*data[0], fclass, int(d["problem"]["n"]))
    d["algorithm"] = {**d["algorithm"], "w0": [float(v) for v in x0]}
    return Scenario.from_dict(d)


def write_interpolant_witness(method: Any, fclass: FunctionClass, schedule: Schedule, pep: Any,
                              path: str | Path, scenario: Any = None) -> Path:
    """Write :func:`interpolant_scenario` as the TOML ``path`` (a recorded-model timeline's
    staleness file beside it, ``<stem>.staleness``); anyone can ``fedsim run`` it.  A
    scenario over :data:`fedsim.config.io.MAX_SCENARIO_BYTES` is refused (the TOML is not
    written)."""
    from fedsim.config.io import MAX_SCENARIO_BYTES, dumps

    p = Path(path)
    staleness = p.parent / f"{p.stem}.staleness"
    staleness_was_there = staleness.exists()
    sc = interpolant_scenario(method, fclass, schedule, pep, scenario, p.parent, p.stem)
    text = dumps(sc)
    if len(text.encode()) > MAX_SCENARIO_BYTES:
        if not staleness_was_there:  # no TOML to go with it: no orphan staleness file
            staleness.unlink(missing_ok=True)
        raise ConfigError(f"witness-out: the Gram witness scenario would be "
                          f"{len(text.encode())} bytes, over the {MAX_SCENARIO_BYTES} a scenario "
                          f"file may hold (K = {schedule.K}); got path={str(p)!r}")
    p.write_text(text)
    return p


def _run(sc: Any, K: int) -> tuple[Any, Schedule, InterpolantProblem]:
    """``fedsim.run(sc)``, the first ``K`` steps of the engine's own table read back, and
    the problem the run built."""
    import fedsim
    from fedsim.engine import problem_for
    from fedsim.engine.dispatch import write_tables

    with np.errstate(over="ignore", invalid="ignore"):
        trace = fedsim.run(sc)
    problem = problem_for(sc)
    return trace, Schedule.from_table(write_tables(sc, problem, [0]).tables[0], K), problem


@dataclass(frozen=True)
class EngineWitness:
    """``replayed``: the engine's run measured with the PEP's normalisation (nonconvex:
    ``f(x_0) - f(x_K)``), ``value`` over ``f(x_0) - f_*`` (certified: a function of the
    class), ``pep_value``; ``schedule`` the engine's own table read back and
    ``same_schedule`` whether it is the PEP's; ``trace`` the run."""

    replayed: float
    value: float
    pep_value: float
    schedule: Schedule
    same_schedule: bool
    trace: Any

    @property
    def gap(self) -> float:
        """``|pep - replayed| / |pep|``."""
        return abs(self.pep_value - self.replayed) / max(abs(self.pep_value), 1e-300)

    @property
    def reproduces(self) -> bool:
        """Same schedule, and the value to :data:`GRAM_MATCH_RTOL`."""
        return bool(self.same_schedule and np.isfinite(self.replayed)
                    and self.gap <= GRAM_MATCH_RTOL)


def simulate_interpolant(method: Any, fclass: FunctionClass, schedule: Schedule, measure: str,
                         pep: Any, scenario: Any = None) -> EngineWitness:
    """Run the Gram interpolant of ``pep`` (a solved PEP of ``method`` along ``schedule``)
    with ``fedsim.run`` on :func:`interpolant_scenario` (module doc; a delay list's staleness
    file in a temporary directory).  ``scenario``: the scenario whose event table gave
    ``schedule`` (its problem is swapped).  One shared function (no heterogeneity) only."""
    require(measure in MEASURES, "measure", measure,
            "must be dist_sq, f_gap, f_gap_over_dist or avg_grad_sq")
    K = schedule.K
    with tempfile.TemporaryDirectory(prefix="fedsim-worstcase-") as tmp:
        sc = interpolant_scenario(method, fclass, schedule, pep, scenario, tmp)
        trace, got, problem = _run(sc, K)
    m = trace.metrics
    steps = np.asarray(trace.metric_steps)
    require(steps.size > K and steps[K] == K, "record.every", 1, "must record every step")
    gap0 = float(m["f_gap"][0])
    if measure == "dist_sq":
        value = float(m["dist_sq"][K] / m["dist_sq"][0])
    elif measure == "f_gap":
        value = float(m["f_gap"][K] / gap0)
    elif measure == "f_gap_over_dist":
        value = float(m["f_gap"][K] / m["dist_sq"][0])
    else:
        value = float(np.mean(m["grad_sq"][:K]) / gap0)
    replayed = value
    if fclass.kind == "nonconvex":
        x0 = np.asarray(sc.algorithm.w0, dtype=np.float64)
        replayed = value * gap0 / pep_denominator(problem.function, pep, x0, trace.final_w)
    return EngineWitness(replayed=replayed, value=value, pep_value=float(pep.value),
                         schedule=got, same_schedule=got.reads() == schedule.reads(),
                         trace=trace)
