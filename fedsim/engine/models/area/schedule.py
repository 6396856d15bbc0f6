"""AREA's step schedule, its client rule and its invariant (THEORY_SPEC 2.2).

:func:`event_probabilities` are the iterate model's i.i.d. event probabilities ([A]
Example 3), :func:`step_schedule` the scenario's ``alpha_k``, :func:`area_client_rule` the
client rule the replay applies, and :func:`area_invariant` the diagnostic ``max_t |x_{s,t} +
u_{s,t} - ybar_t|`` ([A] Appendix A: 0 up to rounding).
"""

from __future__ import annotations

import numpy as np

from fedsim.config import Scenario
from fedsim.engine.replay.table import EventTable
from fedsim.engine.setup import initial_model
from fedsim.errors import require
from fedsim.local import make_client_rule
from fedsim.local.area import AreaClientRule
from fedsim.rng import Streams
from fedsim.servers.area import AreaRule, StepSizes, theorem7_step_sizes

__all__ = ["event_probabilities", "step_schedule", "area_client_rule", "area_invariant"]


def event_probabilities(scenario: Scenario) -> tuple[np.ndarray, float]:
    """``(p_i, p_s)`` of the iterate model's i.i.d. events ([A] Example 3)."""
    n = scenario.problem.n
    rates = np.array([1.0 / scenario.delays.for_client(i)["compute"].mean for i in range(n)])
    rs = float(scenario.trigger.rate)
    tot = rs + rates.sum()
    return rates / tot, rs / tot


def step_schedule(scenario: Scenario, problem) -> StepSizes:
    """``alpha_k`` of the scenario: constant, c/(k+d), or [A] Theorem 7's (H7.4,
    :func:`fedsim.servers.area.theorem7_step_sizes`)."""
    s = scenario.algorithm.alpha
    if s.kind == "theorem7":
        p, ps = event_probabilities(scenario)
        cons = problem.constants
        L, mu = float(cons["L"].value), float(cons["mu"].value)
        require(mu > 0, "problem.mu", mu, "must be > 0 for the Theorem 7 schedule")
        M = int(scenario.algorithm.get("M"))
        p_min = float(min(p.min(), ps))
        return theorem7_step_sizes(L=L, mu=mu, M=M, p_min=p_min)
    return StepSizes(s.kind, s.value, s.c, s.d)


def area_client_rule(scenario: Scenario, problem) -> AreaClientRule:
    """AREA's client rule of ``scenario``: the registered client rule's M-step SGD kernel,
    the step schedule (:func:`step_schedule`) and the model."""
    a = scenario.algorithm
    return AreaClientRule(sgd=make_client_rule(a, problem), steps=step_schedule(scenario, problem),
                          iterate=a.model == "iterate_model")


def area_invariant(scenario: Scenario, problem, table: EventTable, replicate: int,
                   steps: int) -> float:
    """``max_t |x_{s,t} + u_{s,t} - mean_i y_{i,t}|`` over steps ``1..steps`` of ``table``
    ([A] Appendix A: 0 up to rounding): a diagnostic walk through the same rule functions
    as the replay, called per step from Python (:meth:`AreaClientRule.run`,
    :func:`fedsim.servers.area.area_server`), each round's numbers drawn from the client's
    ``noise`` stream as the engine draws them (:meth:`AreaClientRule.draw_round`)."""
    cr = area_client_rule(scenario, problem)
    sf = AreaRule(problem.n).replay_form()
    n, d = problem.n, problem.dim
    w0 = initial_model(problem, scenario)
    hist = np.empty((steps + 1, sf.s_rows, d))
    sf.init_state(hist[0], w0)
    cst = np.empty((n, cr.c_rows, d))
    for i in range(n):
        cr.init_state(cst[i], w0)
    streams = Streams(scenario.seed, replicate)
    gens = [streams.client(i, "noise") for i in range(n)]
    blk = np.empty(cr.M * cr.k)
    fp = cr.params()
    news, reads = np.zeros((n, d)), np.zeros((n, d))
    cnt = np.zeros(1, dtype=np.int64)
    worst = 0.0
    for t in range(1, steps + 1):
        lo, hi = int(table.ptr[t - 1]), int(table.ptr[t])
        for c, p in enumerate(range(lo, hi)):
            i, tr = int(table.c_client[p]), int(table.c_read[p])
            reads[c] = hist[tr, 0]
            cr.run(i, cst[i], reads[c], tr, cr.draw_round(gens[i], i, blk), fp, news[c], cnt)
        hist[t] = hist[t - 1]
        sf.apply(hist[t], table.c_client[lo:hi], reads, news, hi - lo, table.c_stale[lo:hi],
                 int(table.kind[t - 1]), sf.fp, cnt)
        gap = hist[t, 0] + hist[t, 1] - cst[:, 1].mean(axis=0)
        worst = max(worst, float(np.max(np.abs(gap))))
    return worst
