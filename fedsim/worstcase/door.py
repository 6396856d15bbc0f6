"""``fedsim.worst_case(...)``: the worst case of a method along a schedule, with its
solver, status, time, dual certificate and witness (issue 32, "Doors")."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fedsim.errors import require
from fedsim.worstcase.classes import FunctionClass
from fedsim.worstcase.gram_witness import GramWitness, gram_witness
from fedsim.worstcase.methods import METHODS, DelayAdaptive, FedAsync, FedBuff, Method
from fedsim.worstcase.pep import Certificate, PEPResult, solve_pep
from fedsim.worstcase.schedule import Schedule
from fedsim.worstcase.witness import Witness, make_witness

__all__ = ["WorstCase", "worst_case", "build_method", "method_from_scenario",
           "schedule_from_scenario"]

#: the relative agreement asked of two solvers (PEPit's own test tolerance)
AGREE_RTOL = 1e-3


@dataclass(frozen=True)
class WorstCase:
    """A worst case: ``value`` (NaN when the solve failed), ``status``, ``solver``,
    ``seconds``, ``certificate``, ``witness`` (``None`` when not asked for); ``check``: the
    second solver's result when asked for, ``agree`` whether the two agree to
    :data:`AGREE_RTOL` relative (``None`` without a check)."""

    value: float
    status: str
    solver: str
    seconds: float
    certificate: Certificate | None
    witness: Witness | None
    schedule: Schedule = field(repr=False)
    method: Any = field(repr=False)
    function_class: FunctionClass = field(repr=False)
    measure: str = "dist_sq"
    check: PEPResult | None = None
    pep: PEPResult | None = field(repr=False, default=None)
    #: the Gram-interpolant witness (:mod:`fedsim.worstcase.gram_witness`) where no quadratic
    #: attains the PEP value (``None`` otherwise or when not asked for)
    gram: GramWitness | None = None

    @property
    def agree(self) -> bool | None:
        if self.check is None:
            return None
        a, b = self.value, self.check.value
        return bool(math.isfinite(a) and math.isfinite(b)
                    and abs(a - b) <= AGREE_RTOL * max(abs(a), abs(b)))

    def summary(self) -> str:
        """One line: value, solver, status, time (and the check, and the witness)."""
        s = (f"worst case {self.measure} = {self.value:.6g}  [{self.solver}: {self.status}, "
             f"{self.seconds:.2f} s]")
        if self.check is not None:
            s += (f"  check {self.check.solver}: {self.check.value:.6g} ({self.check.status}, "
                  f"{'agree' if self.agree else 'DISAGREE'} to {AGREE_RTOL:g})")
        if self.witness is not None:
            s += f"  witness: {self.witness.name}"
        if self.gram is not None:
            s += f"  Gram witness: {self.gram.name}"
        return s


def method_from_scenario(scenario: Any) -> Method:
    """The first-order form (sigma = 0) of a FedAsync, FedBuff or async_sgd scenario with
    local SGD."""
    a = scenario.algorithm
    require(a.name in ("fedasync", "fedbuff", "async_sgd"), "algorithm.name", a.name,
            "must be fedasync, fedbuff or async_sgd for a worst case "
            "(docs/theory/worst-case.md)")
    require(a.client_rule == "sgd", "algorithm.client_rule", a.client_rule,
            "must be sgd for a worst case (docs/theory/worst-case.md)")
    if a.name == "fedasync":
        return FedAsync(eta=float(a.eta), Q=int(a.Q), beta=float(a.beta or 1.0))
    if a.name == "async_sgd":
        return DelayAdaptive(eta=float(a.eta), tau_c=int(a.get("tau_C")),
                             rule=str(a.get("step_rule")), beta=float(a.get("beta")))
    return FedBuff(eta=float(a.eta), Q=int(a.Q), server_lr=float(a.server_lr or 1.0),
                   weight=a.staleness_weight or "none",
                   exponent=float(a.staleness_exponent or 0.5))


def schedule_from_scenario(scenario: Any, K: int, replicate: int = 0) -> Schedule:
    """The first ``K`` server steps of the scenario's event table (replicate
    ``replicate``), written by the engine's own table writer."""
    from fedsim.engine import problem_for
    from fedsim.engine.dispatch import write_tables

    table = write_tables(scenario, problem_for(scenario), [int(replicate)]).tables[0]
    return Schedule.from_table(table, K)


def build_method(method: str, step: float | None, Q: int = 1, beta: float = 1.0,
                 server_lr: float = 1.0, weight: str = "none", tau_c: int | None = None,
                 step_rule: str = "koloskova") -> Method:
    """The method named ``method`` (:data:`~fedsim.worstcase.methods.METHODS`);
    ``async_sgd`` needs ``tau_c`` (and ``step_rule``, :data:`~fedsim.servers.
    delay_adaptive.RULES`)."""
    require(method in METHODS, "method", method, f"must be one of {list(METHODS)}")
    require(step is not None, "step", step, "is required")
    if method == "delayed_gd":
        return METHODS[method](step)
    if method == "fedasync":
        return FedAsync(eta=float(step), Q=int(Q), beta=float(beta))
    if method == "async_sgd":
        require(tau_c is not None, "tau_C", tau_c, "is required for async_sgd")
        return DelayAdaptive(eta=float(step), tau_c=int(tau_c), rule=step_rule,
                             beta=float(beta), Q=int(Q))
    return FedBuff(eta=float(step), Q=int(Q), server_lr=float(server_lr), weight=weight)


def worst_case(method: str = "delayed_gd", function_class: str = "strongly_convex", *,
               L: float = 1.0, mu: float = 0.0, step: float | None = None,
               delays: Sequence[int] | None = None, schedule: Schedule | None = None,
               measure: str = "dist_sq", Q: int = 1, beta: float = 1.0,
               server_lr: float = 1.0, weight: str = "none", zeta_sq: float | None = None,
               solver: str = "CLARABEL", check: str | None = None, witness: bool = True,
               scenario: Any = None, K: int | None = None, tau_c: int | None = None,
               step_rule: str = "koloskova") -> WorstCase:
    """The PEP worst case (:mod:`fedsim.worstcase.pep`).

    ``method``: ``delayed_gd`` (``step``), ``fedasync`` (``step`` = eta, ``Q``, ``beta``) or
    ``fedbuff`` (``step``, ``Q``, ``server_lr``, ``weight``) or ``async_sgd`` (``step`` = eta,
    ``beta``, ``tau_c``, ``step_rule``: the delay-adaptive steps of
    :class:`~fedsim.worstcase.methods.DelayAdaptive`).  The schedule: ``delays``
    (issue 32's conventions: step k applies the gradient at ``x_{k - tau_k}``, ``x_j = x_0``
    for ``j < 0``, ``K = len(delays)``), or ``schedule``, or ``scenario`` (its method and
    the first ``K`` steps of its event table; the witness is that scenario with the
    problem swapped).  ``check``: a second solver whose value must agree.
    """
    fclass = FunctionClass(kind=function_class, L=float(L), mu=float(mu))
    base = None
    if scenario is not None:
        require(K is not None, "K", K, "is required with a scenario")
        m = method_from_scenario(scenario)
        sched = schedule_from_scenario(scenario, int(K))
        base = scenario
    else:
        m = build_method(method, step, Q, beta, server_lr, weight, tau_c, step_rule)
        require((delays is None) != (schedule is None), "delays", delays,
                "give exactly one of delays and schedule")
        sched = schedule if schedule is not None else Schedule.from_delays(delays)
    res = solve_pep(m, fclass, sched, measure, zeta_sq, solver)
    chk = solve_pep(m, fclass, sched, measure, zeta_sq, check) if check else None
    wit, gram = None, None
    if witness and zeta_sq is None and fclass.kind != "convex_lipschitz":
        # (no quadratic is globally Lipschitz, and the interpolant is built for the smooth
        # classes only: a convex Lipschitz worst case has no witness here)
        wit = make_witness(m, fclass, sched, measure, res.value, base)
        if wit.kind != "quadratic" and res.status.startswith("optimal") and \
                math.isfinite(res.value):
            gram = gram_witness(m, fclass, sched, measure, res)
    return WorstCase(value=res.value, status=res.status, solver=res.solver,
                     seconds=res.seconds, certificate=res.certificate, witness=wit,
                     schedule=sched, method=m, function_class=fclass, measure=measure,
                     check=chk, pep=res, gram=gram)
