"""AREA ([A] Algorithms 1-2) in two execution modes (THEORY_SPEC 2.2).

Every event is one global iteration k (client arrival, ``kind = "client"``, or
aggregation, ``kind = "server"``); ``horizon.steps`` is K.

``model = "algorithm"`` -- Algorithms 1-2 literally, on physical delays.  At time 0 the
server broadcasts ``x_{s,0}`` and ``alpha_0``; each client process then loops: the reply
travels (download delay), the client runs M local SGD steps from the ``x_s`` it received
with the ``alpha`` it received (compute delay), sends ``m_i = x^M - y_i`` (upload delay) and
sets ``y_i <- x^M``.  On arrival the server adds ``m_i / n`` to ``u_s``, increments k and
replies with its current ``x_s`` and ``alpha_k`` (Alg. 1 sends ``alpha_k`` at iteration k).
The aggregation criterion (``[trigger]``: every upload, every ``count`` uploads, a Poisson
timer, a period) triggers ``x_s <- x_s + u_s, u_s <- 0`` as its own iteration.  A count
trigger aggregates right after the arrival that completes the count (same simulated
time); [A] footnote 3 notes such a rule breaks the i.i.d. event assumption.

``model = "iterate_model"`` -- the model the theorems analyse ([A] Appendix A, eqs.
(5)-(7) with ``G^M``): client i's events form a Poisson process of rate ``rate_i`` (its
``compute`` delay, which must be exponential; download/upload/think are zero), the
server's a Poisson process of rate ``lambda_s`` (``trigger.rate``), all independent, so
the event indices J_k are i.i.d. with ``p_i = rate_i / (rate_s + sum_j rate_j)`` ([A]
Example 3).  State: ``x_{i,0} = y_{i,0} = x_{s,0}``, ``u_s = 0``.  At client event k+1 the
client sends ``m_i = x_{i,k} - y_{i,k}`` (u_s += m_i / n), sets ``y_i <- x_{i,k}`` and computes
``x_i <- G^M_{i,alpha_k}[x_{s,k}]`` with step ``alpha_k`` (index k); at a server event
``x_s <- x_s + u_s`` (= ``ybar_k``, eq. (7), by the invariant ``x_s + u_s = ybar``).
Differences from the algorithm mode: the first message is a no-op (``x_{i,0} = x_{s,0}``),
the step index is shifted by one, and there is no communication delay (E-A11).

Staleness of a client event: global iterations since the ``x_s`` it computed from was
read.  The provable staleness bound is reported as ``inf`` (events are unbounded in both
modes unless every delay is bounded; not derived for AREA).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fedsim.config import Scenario
from fedsim.engine.replay.driver import progress_bar, replay_table
from fedsim.engine.replay.table import EventTable
from fedsim.engine.setup import RunSetup, initial_model
from fedsim.engine.simpy_fast import at
from fedsim.errors import require
from fedsim.local import make_client_rule
from fedsim.local.area import AreaClientRule
from fedsim.rng import Streams
from fedsim.servers.area import AreaRule, StepSizes, theorem7_step_sizes
from fedsim.trace import KINDS, Trace

__all__ = ["run_area", "area_table", "area_client_rule", "area_invariant", "step_schedule",
           "event_probabilities"]

K_CLIENT = KINDS.index("client")
K_SERVER = KINDS.index("server")


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


def run_area(scenario: Scenario, problem, streams: Streams, progress: bool, spec: Any = None,
             *, check_invariant: bool = False) -> Trace:
    """AREA's run: its event table (:func:`area_table`) replayed through the one replay
    (:func:`fedsim.engine.replay.driver.replay_table`) with the client rule
    :func:`fedsim.local.area.area_client_for` and the server rule
    :func:`fedsim.servers.area.area_server`.  ``progress``: two bars on stderr, as for the
    other models -- ``timeline:`` over the steps SimPy wrote, then ``replay:`` over the
    steps replayed (:func:`fedsim.engine.replay.driver.progress_bar`).  ``info["k"]``: the
    global iterations done;
    ``check_invariant`` records ``max |x_s + u_s - ybar|`` (:func:`area_invariant`) in
    ``info["invariant_max"]``."""
    if spec is None:
        from fedsim.algorithms import get_algorithm
        spec = get_algorithm(scenario.algorithm.name)
    bar = progress_bar(scenario.horizon.steps, "timeline") if progress else None
    table = area_table(scenario, problem, streams)
    if bar is not None:
        bar.update(table.steps_done)
        bar.close()
    cr = area_client_rule(scenario, problem)
    server = spec.server(scenario.algorithm, problem)
    tr = replay_table(scenario, [table], cr.replay_form(), server.replay_form(),
                      replicates=[streams.replicate], problem=problem, progress=progress)[0]
    tr.info["k"] = tr.steps_done
    if check_invariant:
        tr.info["invariant_max"] = area_invariant(scenario, problem, table, streams.replicate,
                                                  tr.steps_done)
    return tr


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


def area_table(scenario: Scenario, problem, streams: Streams) -> EventTable:
    """AREA's event table (REPLAY_SPEC 1) of either model, written by SimPy with no algebra
    (:class:`~fedsim.engine.setup.RunSetup` with ``table=True``: a
    :class:`~fedsim.engine.steplog.TableLog`).

    One server step per global iteration k.  A client arrival is a step of kind
    ``"client"`` with one contribution (client i, ``c_read`` the version of the ``x_s``
    its round computed from, M local steps, ``c_stale`` = k minus the version its last
    round read); an aggregation is a step of kind ``"server"`` with none.  Algorithm 2:
    ``c_read`` is the version the server replied with at the client's previous arrival (0
    at the start); the iterate model: the version current at the event (``t - 1``).
    ``buffer_fill`` is the number of messages since the last aggregation (the
    aggregation's: the number it consumes).  The delays, the trigger (count, Poisson or
    periodic timer on the server's ``timer`` stream), think pauses and the horizons are
    the module docstring's, event for event.
    """
    require(scenario.delays.read_at == "request", "delays.read_at", scenario.delays.read_at,
            "must be 'request' for area (the server's reply carries x_s)")
    run = RunSetup(scenario, problem, streams, False, table=True)
    env, log = run.env, run.log
    M = int(run.rule.Q)
    iterate = scenario.algorithm.model == "iterate_model"
    samplers = run.make_samplers()
    count = run.trigger_count()
    pending = [0]

    def aggregate() -> bool:
        fill, pending[0] = pending[0], 0
        return log.step(env.now, K_SERVER, -1, 0, 0.0, fill)

    def arrival(i: int, t: float, read: int, prev: int, t_read: float) -> bool:
        """Client i's message at ``t``: its round reads version ``read``; the message
        counts its staleness from ``prev`` (the version its last round read)."""
        stale = log.t - prev
        log.upload(i)
        log.contribute(i, read, M, stale)
        pending[0] += 1
        return log.step(t, K_CLIENT, i, stale, t - t_read, pending[0])

    def client_algorithm(i: int):
        k_read, t_read = 0, 0.0
        while True:
            download, compute, upload, think = samplers[i].next_round()
            t = env.now + download
            for c in compute:
                t = t + c
            t = t + upload
            yield at(env, t)
            if log.stopped or arrival(i, t, k_read, k_read, t_read):
                return
            k_read, t_read = log.t, t
            if count is not None and pending[0] >= count and aggregate():
                return
            if think != 0.0:
                yield from run.think_pause(t, think)
                if log.stopped:
                    return

    def client_model(i: int):
        k_read, t_read = 0, 0.0
        t = 0.0
        while True:
            _download, compute, _upload, _think = samplers[i].next_round()
            t = t + compute[0]
            yield at(env, t)
            if log.stopped:
                return
            k = log.t
            if arrival(i, t, k, k_read, t_read):
                return
            k_read, t_read = k, t

    for i in range(run.n):
        env.process(client_model(i) if iterate else client_algorithm(i))
    run.start_timer(aggregate)
    run.run_until_done()
    return log.table(n=run.n, sim_time=env.now, every=scenario.record.every,
                     staleness_bound=math.inf)
