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
import simpy

from fedsim.config import Scenario
from fedsim.engine.delay_blocks import DelaySampler
from fedsim.engine.event_columns import EventColumns
from fedsim.engine.setup import RunSetup
from fedsim.engine.simpy_fast import at, stop_event, urgent_at
from fedsim.errors import require
from fedsim.local.area import AreaClients
from fedsim.rng import Streams
from fedsim.servers.area import StepSizes, theorem7_step_sizes
from fedsim.servers.base import Upload
from fedsim.trace import KINDS, Trace

__all__ = ["run_area", "area_table", "step_schedule", "event_probabilities"]

K_CLIENT = KINDS.index("client")
K_SERVER = KINDS.index("server")
_NO_UPLOADS: tuple[Upload, ...] = ()


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


def run_area(scenario: Scenario, problem, streams: Streams, progress: bool, spec: Any = None,
             *, check_invariant: bool = False) -> Trace:
    """Simulate AREA; ``check_invariant`` records ``max |x_s + u_s - ybar|`` in ``info``."""
    if spec is None:
        from fedsim.algorithms import get_algorithm
        spec = get_algorithm(scenario.algorithm.name)
    a = scenario.algorithm
    require(scenario.delays.read_at == "request", "delays.read_at", scenario.delays.read_at,
            "must be 'request' for area (the server's reply carries x_s)")
    rule = spec.server(a, problem)
    run = RunSetup(scenario, problem, streams, progress)
    env, sgd, rec, log, n = run.env, run.rule, run.rec, run.log, run.n
    alpha = step_schedule(scenario, problem)
    server = rule.init(run.w)
    clients = AreaClients(run.w, n, sgd)
    noise = run.make_noise()
    samplers = run.make_samplers()
    inv = {"max": 0.0}
    iterate = a.model == "iterate_model"
    count = run.trigger_count()
    rec.busy(0.0, 1.0)

    def check() -> None:
        if check_invariant:
            r = server.x_s + server.u_s - clients.y.mean(axis=0)
            inv["max"] = max(inv["max"], float(np.max(np.abs(r))))

    def aggregate() -> bool:
        _, diag = rule.apply(server, _NO_UPLOADS)
        check()
        return log.log(env.now, K_SERVER, -1, 0, 0.0, diag["fill"], server.x_s)

    def arrival(i: int, k_read: int, m: np.ndarray) -> None:
        rule.apply(server, (Upload(i, None, m, server.k - k_read),))

    def client_algorithm(i: int):
        x_recv = server.x_s.copy()
        a_recv = alpha(0)
        k_read, t_read = 0, 0.0
        while True:
            download, compute, upload, think = samplers[i].next_round()
            t = env.now + download
            for c in compute:
                t = t + c
            t = t + upload
            yield at(env, t)
            if log.stopped:
                return
            m = clients.event(i, x_recv, a_recv, noise[i], False)
            stale_steps = server.k - k_read
            arrival(i, k_read, m)
            rec.client_updates[i] += 1
            check()
            if log.log(t, K_CLIENT, i, stale_steps, t - t_read, server.pending, server.x_s):
                return
            np.copyto(x_recv, server.x_s)
            a_recv = alpha(server.k)
            k_read, t_read = server.k, t
            if count is not None and server.pending >= count and aggregate():
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
            k = server.k
            m = clients.event(i, server.x_s, alpha(k), noise[i], True)
            arrival(i, k_read, m)
            rec.client_updates[i] += 1
            check()
            if log.log(t, K_CLIENT, i, k - k_read, t - t_read, server.pending, server.x_s):
                return
            k_read, t_read = k, t

    for i in range(n):
        env.process(client_model(i) if iterate else client_algorithm(i))
    run.start_timer(aggregate)
    run.run_until_done()
    if check_invariant:
        rec.info["invariant_max"] = inv["max"]
    rec.info["k"] = server.k
    return log.finish(server.x_s, env.now, math.inf)


def area_table(scenario: Scenario, problem, streams: Streams) -> dict[str, Any]:
    """AREA's event table (REPLAY_SPEC 1) of either model, written by SimPy with no algebra.

    One server step per global iteration k.  A client arrival is a step of kind
    ``"client"`` with one contribution (client i, ``c_read`` the version of the ``x_s``
    its round computed from, M local steps, ``c_stale`` = k minus that version); an
    aggregation is a step of kind ``"server"`` with none.  Algorithm 2: ``c_read`` is the
    version the server replied with at the client's previous arrival (0 at the start);
    the iterate model: the version current at the event (``t - 1``).  ``buffer_fill`` is
    the number of messages since the last aggregation (the aggregation's: the number it
    consumes).  The delays, the trigger (count, Poisson or periodic timer on the server's
    ``timer`` stream) and the horizons are the module docstring's and
    :func:`run_area`'s, event for event; the replay applies :func:`fedsim.local.area.
    area_client` and :func:`fedsim.servers.area.area_server` along it.
    """
    a, dc, tr = scenario.algorithm, scenario.delays, scenario.trigger
    require(dc.read_at == "request", "delays.read_at", dc.read_at,
            "must be 'request' for area (the server's reply carries x_s)")
    n = problem.n
    M = int(a.get("M"))
    iterate = a.model == "iterate_model"
    env = simpy.Environment()
    done, stop = stop_event(env)
    log = EventColumns(n=n, steps=scenario.horizon.steps, every=scenario.record.every,
                       stop=stop)
    per = M if dc.compute_per == "step" else 1
    samplers = [DelaySampler(dc.for_client(i), streams.client(i, "delays"), per)
                for i in range(n)]
    count = {"every_upload": 1, "every_k": tr.count}.get(tr.kind)
    pending = [0]

    def aggregate(now: float) -> bool:
        fill, pending[0] = pending[0], 0
        return log.step(now, K_SERVER, -1, 0, 0.0, fill)

    def arrival(i: int, t: float, read: int, prev: int, t_read: float) -> bool:
        """Client i's message at ``t``: its round reads version ``read``; the message
        counts its staleness from ``prev`` (the version its last round read)."""
        stale = log.t - prev
        log.contribution(i, read, M, stale)
        log.completed(i)
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
            if count is not None and pending[0] >= count and aggregate(t):
                return
            if think != 0.0:
                gate = log.idle_start(t)
                yield at(env, t + think)
                log.idle_end(t + think, gate)
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

    def timer():
        rng = streams.server("timer")
        param = tr.rate if tr.kind == "poisson" else tr.period
        t = env.now
        while True:
            t = t + (rng.exponential(1.0 / param) if tr.kind == "poisson" else param)
            yield at(env, t)
            if log.stopped or aggregate(t):
                return

    for i in range(n):
        env.process(client_model(i) if iterate else client_algorithm(i))
    if tr.kind in ("poisson", "period"):
        env.process(timer())
    t_end = scenario.horizon.time
    if math.isfinite(t_end):
        urgent_at(env, t_end).callbacks.append(lambda _ev: log.halt())
    env.run(until=done)
    return log.finish(sim_time=env.now, staleness_bound=math.inf, info={"k": log.t})
