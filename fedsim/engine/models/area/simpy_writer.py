"""AREA's SimPy reference writer (:func:`area_table`), for either of its two models.

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

from fedsim.config import Scenario
from fedsim.engine.models.phases import PhaseLog, Phases, record
from fedsim.engine.replay.table import EventTable
from fedsim.engine.setup import RunSetup
from fedsim.engine.simpy_fast import at
from fedsim.errors import require
from fedsim.rng import Streams
from fedsim.trace import KINDS

__all__ = ["area_table", "area_phases", "K_CLIENT", "K_SERVER"]

K_CLIENT = KINDS.index("client")
K_SERVER = KINDS.index("server")


def area_table(scenario: Scenario, problem, streams: Streams,
               phases: PhaseLog | None = None) -> EventTable:
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
    the module docstring's, event for event.  ``phases``, if given, records each client
    round's times (the iterate model's: its computation from its last event to this one,
    no download or upload), its message's arrival (with its ``c_read``) and think pause.
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
            t0 = env.now
            t = t_download = t0 + download
            for c in compute:
                t = t + c
            t_compute = t
            t = t + upload
            if phases is not None:
                phases.begin(i, t0, t_download, t_compute, t)
            yield at(env, t)
            if log.stopped:
                return
            if phases is not None:
                phases.arrive(i, k_read)
            if arrival(i, t, k_read, k_read, t_read):
                return
            k_read, t_read = log.t, t
            if count is not None and pending[0] >= count and aggregate():
                return
            if think != 0.0:
                if phases is not None:
                    phases.think(i, think)
                yield from run.think_pause(t, think)
                if log.stopped:
                    return

    def client_model(i: int):
        k_read, t_read = 0, 0.0
        t = 0.0
        while True:
            _download, compute, _upload, _think = samplers[i].next_round()
            t_last, t = t, t + compute[0]
            if phases is not None:
                phases.begin(i, t_last, t_last, t, t)
            yield at(env, t)
            if log.stopped:
                return
            k = log.t
            if phases is not None:
                phases.arrive(i, k)
            if arrival(i, t, k, k_read, t_read):
                return
            k_read, t_read = k, t

    for i in range(run.n):
        env.process(client_model(i) if iterate else client_algorithm(i))
    run.start_timer(aggregate)
    run.run_until_done()
    return log.table(n=run.n, sim_time=env.now, every=scenario.record.every,
                     staleness_bound=math.inf)


def area_phases(scenario: Scenario, problem, replicate: int) -> Phases:
    """The replicate's per-client phases, recorded by :func:`area_table` with its table
    (the reference the compiled merge equals bit for bit, so these are the run's phases)."""
    return record(lambda log: area_table(scenario, problem, Streams(scenario.seed, replicate),
                                         log), problem.n)
