"""Synchronous rounds' SimPy reference writer (:func:`sync_timeline`, no model arithmetic).

The model (:mod:`fedsim.engine.models.sync`).  Each round
the server samples ``m = max(1, round(r n))`` clients uniformly without replacement (server
``sampling`` stream), broadcasts ``w^t`` and waits for all of them (``simpy.AllOf``); each
sampled client is a process that downloads, computes its Q local steps and uploads (its own
``delays`` stream).  One round is one server step (``kind = "aggregate"``,
``staleness_steps = 0``, ``staleness_time`` = the round's duration) consuming the ``m``
rounds, all read from ``w^{t-1}``.  The busy fraction drops as sampled clients finish and
wait for the straggler ([P] Figure 2(a)).  Think times are not used.

The replay (:func:`fedsim.engine.replay.driver.replay_table`) then runs each sampled
client's Q local steps from ``w^{t-1}`` (the client rule, drawing from the client's
``noise`` stream) and sets ``w^t`` to their average (the server rule,
:func:`fedsim.servers.fedavg.fedavg_step`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import simpy

from fedsim.config import Scenario
from fedsim.engine.models.phases import PhaseLog, Phases, record
from fedsim.engine.models.sync.rounds import SyncLog, sync_columns, sync_plan
from fedsim.engine.replay.table import EventTable
from fedsim.engine.simpy_fast import at, stop_event, urgent_at
from fedsim.rng import Streams

__all__ = ["sync_timeline", "sync_phases"]


def sync_timeline(scenario: Scenario, n: int, streams: Streams,
                  phases: PhaseLog | None = None) -> dict[str, Any]:
    """The event-table columns of synchronous rounds (module docstring; REPLAY_SPEC
    section 1), simulated by SimPy with no model arithmetic: the reference of
    :func:`fedsim.engine.models.sync.rounds.rounds_timeline`, the writer runs take.

    Step ``t`` is round ``t``: ``kind = "aggregate"``, ``client`` the sampled client when
    one client per round else -1, ``staleness_steps = 0``, ``staleness_time`` the round's
    duration, ``buffer_fill = m``; its ``m`` contributions are the sampled clients in
    increasing index order (the order the server rule sums them), each with ``c_read =
    t - 1``, ``c_steps = Q``, ``c_stale = 0``.  The run goes to the step or time horizon
    (a divergence is the replay's to find; :meth:`EventTable.truncated` cuts the table
    there with ``u_client``/``u_before`` -- each completed round with the steps done when
    it arrived -- and the busy events ``b_*``: a round's start sets the idle clients to
    ``n - m``, each arrival adds one, all gated on the steps done at the round's start).
    Draws the ``delays`` streams (download, compute, upload, think per round) and the
    server's ``sampling`` stream only.  ``phases``, if given, records each sampled
    client's round (its server round, the times below, its arrival and ``c_read = t - 1``).
    """
    plan = sync_plan(scenario, n, streams)
    log = SyncLog(n)
    m, samplers = plan.m, plan.samplers
    env = simpy.Environment()
    done, stop = stop_event(env)
    stopped = [False]

    def client(i: int):
        download, compute, upload, _think = samplers[i].next_round()
        t0 = env.now
        t = t_download = t0 + download
        for c in compute:
            t = t + c
        t_compute = t
        t = t + upload
        k = log.steps
        if phases is not None:
            phases.begin(i, t0, t_download, t_compute, t, k)
        yield at(env, t)
        log.arrive(i, t)
        if phases is not None:
            phases.arrive(i, k)

    def server():
        while True:
            chosen = np.sort(plan.sampling.choice(n, size=m, replace=False)).tolist()
            t0 = env.now
            log.start(t0, n, m)
            yield simpy.AllOf(env, [env.process(client(i)) for i in chosen])
            if stopped[0]:
                return
            log.step(env.now, t0, chosen)
            if log.steps >= plan.T:
                halt()
                return

    def halt() -> None:
        stopped[0] = True
        stop()

    env.process(server())
    if math.isfinite(plan.t_end):
        urgent_at(env, plan.t_end).callbacks.append(lambda _ev: halt())
    env.run(until=done)
    return sync_columns(plan, log, env.now)


def sync_phases(scenario: Scenario, problem: Any, replicate: int) -> Phases:
    """The replicate's per-client phases, recorded by :func:`sync_timeline` with its table
    (the reference :func:`~fedsim.engine.models.sync.rounds.rounds_timeline` equals bit for
    bit, so these are the run's phases)."""
    streams = Streams(scenario.seed, replicate)
    return record(lambda log: EventTable(**sync_timeline(scenario, problem.n, streams, log)),
                  problem.n, sync=True)
