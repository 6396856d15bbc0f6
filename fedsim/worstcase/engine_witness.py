"""The Gram-interpolant witness simulated by fedsim's engine along the schedule's event table.

fedsim's engine runs any object with the :class:`fedsim.problems.base.Problem` oracles: a
problem without a compiled view (:func:`fedsim.problems.compiled.compiled_view` gives
``None``) runs on the engine's interpreted path, through its own methods
(``docs/EXTENDING.md``, "Compiled rules").  ``fedsim.run(scenario)`` is
``fedsim.engine.dispatch.replay_tables(scenario, problem_for(scenario), [r])``
(``docs/INTERNALS.md``, "The doors"); :func:`simulate_interpolant` calls that same door with
the problem swapped for :class:`InterpolantProblem`, the Gram interpolant of a solved PEP
(:mod:`fedsim.worstcase.interpolant`) on every client.  The scenario's execution model
writes the event table (a constant-``tau`` FedAsync schedule: ``tau + 1`` clients of
constant compute time in the physical model, :func:`fedsim.worstcase.witness.witness_scenario`;
a delay list of FedAsync with ``Q = 1`` that is a one-job-per-worker timeline: its
``recorded``-model scenario, :func:`fedsim.worstcase.schedule_witness.recorded_witness`,
written to a temporary directory; or any scenario whose table gave the schedule), the
engine's replay applies fedsim's own
client and server rules with sigma = 0, and the trace's ``dist_sq`` / ``f_gap`` /
``grad_sq`` columns are measured against the interpolant's exact minimum.  The table is
read back (:meth:`~fedsim.worstcase.schedule.Schedule.from_table`) and must be the PEP's
schedule.

What the door does not give: ``fedsim run`` on a TOML (a scenario's ``[problem]`` is one of
the compiled kinds, ``fedsim.config.schema.PROBLEM_KINDS``, with no plug-in kind) and
``run_batch`` (it builds the problem from the scenario).  The ``[problem]`` table of the
scenario used here is a placeholder the writer never reads for the timeline (it draws only
delay, timer, event and sampling streams); the problem the replay runs is the interpolant.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from fedsim.errors import require
from fedsim.problems.base import Problem
from fedsim.problems.constants import ConstantsTable
from fedsim.worstcase.classes import FunctionClass
from fedsim.worstcase.gram_witness import GRAM_MATCH_RTOL, pep_denominator
from fedsim.worstcase.interpolant import ClassInterpolant, interpolants_of
from fedsim.worstcase.schedule import Schedule

__all__ = ["InterpolantProblem", "EngineWitness", "simulate_interpolant"]

NO_HESSIAN = ("the Gram interpolant is C^{1,1}: it has no Hessian oracle (first-order client "
              "rules only)")


class InterpolantProblem(Problem):
    """``f_i = f`` for every client ``i < n``: one :class:`ClassInterpolant` in ``R^dim``,
    deterministic (sigma = 0: a batch is ``None`` and its gradient the gradient), with its
    exact minimum ``f_star`` at ``x_star``.  First-order only: the interpolant is
    ``C^{1,1}``, not twice differentiable, so the Hessian oracles and the Moreau step raise."""

    def __init__(self, *, function: ClassInterpolant, n: int, dim: int) -> None:
        self.function = function
        self.n = int(n)
        self.dim = int(dim)
        f_star, x_star = function.minimum()
        self.f_star = float(f_star)
        self.x_star = np.asarray(x_star, dtype=np.float64)

    def loss(self, i: int, w: np.ndarray) -> float:
        return self.function.value(w)

    def grad(self, i: int, w: np.ndarray) -> np.ndarray:
        return np.array(self.function.grad(w), dtype=np.float64)

    def f(self, w: np.ndarray) -> float:
        return self.function.value(w)

    def grad_f(self, w: np.ndarray) -> np.ndarray:
        return self.grad(0, w)

    def hess(self, i: int, w: np.ndarray) -> np.ndarray:
        raise NotImplementedError(NO_HESSIAN)

    def sample_batch(self, i: int, size: int, rng: np.random.Generator) -> Any:
        return None

    def batch_grad(self, i: int, w: np.ndarray, batch: Any) -> np.ndarray:
        return self.grad(i, w)

    def batch_hvp(self, i: int, w: np.ndarray, v: np.ndarray, batch: Any) -> np.ndarray:
        raise NotImplementedError(NO_HESSIAN)

    def theta_hat(self, i: int, w: np.ndarray, lam: float) -> np.ndarray:
        raise NotImplementedError("the Gram interpolant's proximal step is not built "
                                  "(first-order client rules only)")

    def _build_table(self) -> ConstantsTable:
        raise NotImplementedError("the interpolant's constants are its class's "
                                  "(fedsim.worstcase.classes.FunctionClass), not a table")


def _replay(sc: Any, function: ClassInterpolant, V: np.ndarray, pep: Any, K: int
            ) -> tuple[Any, Schedule]:
    """``sc`` with ``w0 = x_0`` replayed on the interpolant: the trace and the first ``K``
    steps of the engine's own table, read back."""
    from fedsim.config import Scenario
    from fedsim.engine.dispatch import replay_tables, write_tables

    x0 = V @ pep.points.x0.dense(V.shape[1])
    d = sc.to_dict()
    d["problem"] = {**d["problem"], "dim": int(V.shape[0])}
    d["algorithm"] = {**d["algorithm"], "w0": [float(v) for v in x0]}
    sc = Scenario.from_dict(d)
    problem = InterpolantProblem(function=function, n=int(sc.n), dim=int(V.shape[0]))
    with np.errstate(over="ignore", invalid="ignore"):
        trace = replay_tables(sc, problem, [0])[0]
    return trace, Schedule.from_table(write_tables(sc, problem, [0]).tables[0], K)


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
    """Simulate the Gram interpolant of ``pep`` (a solved PEP of ``method`` along
    ``schedule``) with fedsim's engine (module doc).  ``scenario``: the scenario whose event
    table gave ``schedule`` (its problem is swapped); without it a constant-``tau``
    FedAsync schedule is realised as :func:`~fedsim.worstcase.witness.witness_scenario`
    does.  One shared function (no heterogeneity) only."""
    from fedsim.worstcase.witness import witness_scenario

    funcs, V = interpolants_of(pep, fclass)
    require(len(funcs) == 1, "zeta_sq", len(funcs),
            "an engine witness is built for one shared function only")
    require(measure in ("dist_sq", "f_gap", "f_gap_over_dist", "avg_grad_sq"), "measure",
            measure, "must be dist_sq, f_gap, f_gap_over_dist or avg_grad_sq")
    sc = witness_scenario(method, schedule, 1.0, scenario)
    if sc is not None:
        trace, got = _replay(sc, funcs[0], V, pep, schedule.K)
    else:  # a delay list: its recorded-model timeline, written beside the run
        import tempfile

        import fedsim
        from fedsim.worstcase.schedule_witness import recorded_witness

        with tempfile.TemporaryDirectory(prefix="fedsim-worstcase-") as tmp:
            rw = recorded_witness(method, fclass, schedule, measure, 1.0, tmp, points=3)
            require("toml" in rw, "schedule", schedule.K,
                    f"no fedsim scenario realises it ({rw.get('reason')}); give the "
                    "scenario whose table it is")
            trace, got = _replay(witness_scenario(method, schedule, 1.0,
                                                  fedsim.load(rw["toml"])),
                                 funcs[0], V, pep, schedule.K)
    m = trace.metrics
    K = schedule.K
    trace_x0 = V @ pep.points.x0.dense(V.shape[1])
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
        replayed = value * gap0 / pep_denominator(funcs[0], pep, np.asarray(trace_x0),
                                                  trace.final_w)
    return EngineWitness(replayed=replayed, value=value, pep_value=float(pep.value),
                         schedule=got, same_schedule=got.reads() == schedule.reads(),
                         trace=trace)
