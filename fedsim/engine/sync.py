"""Synchronous rounds: FedAvg (and Per-FedAvg / pFedMe via the client rule), table -> replay.

The timeline is a SimPy process (:func:`sync_timeline`, no model arithmetic).  Each round
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
from collections.abc import Sequence
from typing import Any

import numpy as np
import simpy

from fedsim.config import Scenario
from fedsim.engine.replay.driver import replay_table
from fedsim.engine.replay.table import EventTable
from fedsim.engine.simpy_fast import at, stop_event, urgent_at
from fedsim.engine.sync_rounds import SyncLog, rounds_timeline, sync_columns, sync_plan
from fedsim.errors import require
from fedsim.rng import Streams
from fedsim.trace import PERSONAL, Trace

__all__ = ["run_sync", "sync_tables", "sync_timeline", "sync_table"]


def sync_timeline(scenario: Scenario, n: int, streams: Streams) -> dict[str, Any]:
    """The event-table columns of synchronous rounds (module docstring; REPLAY_SPEC
    section 1), simulated by SimPy with no model arithmetic: the reference of
    :func:`fedsim.engine.sync_rounds.rounds_timeline`, which :func:`sync_table` uses.

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
    server's ``sampling`` stream only.
    """
    plan = sync_plan(scenario, n, streams)
    log = SyncLog(n)
    m, samplers = plan.m, plan.samplers
    env = simpy.Environment()
    done, stop = stop_event(env)
    stopped = [False]

    def client(i: int):
        download, compute, upload, _think = samplers[i].next_round()
        t = env.now + download
        for c in compute:
            t = t + c
        t = t + upload
        yield at(env, t)
        log.arrive(i, t)

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


def sync_table(scenario: Scenario, n: int, streams: Streams) -> EventTable:
    """The replicate's :class:`~fedsim.engine.replay.table.EventTable`: the columns of
    :func:`fedsim.engine.sync_rounds.rounds_timeline` (tested equal to
    :func:`sync_timeline`'s)."""
    return EventTable(**rounds_timeline(scenario, n, streams))


def sync_tables(scenario: Scenario, problem, replicates: Sequence[int]) -> list[EventTable]:
    """The tables of ``replicates`` (:func:`sync_table`): the synchronous runner's entry of
    :data:`fedsim.engine.dispatch.TABLE_WRITERS`, which ``run`` and ``run_batch`` replay
    with the scenario's client rule and :class:`~fedsim.servers.fedavg.FedAvgRule`.
    Personal-model metrics are refused first: synchronous clients keep no model."""
    for name in scenario.record.metrics:
        require(name.removeprefix("val_") not in PERSONAL, "record.metrics", name,
                "needs per-client personal models, which only an algorithm whose clients "
                "keep them records (algorithm.name = 'asypfl')")
    return [sync_table(scenario, problem.n, Streams(scenario.seed, int(r)))
            for r in replicates]


def run_sync(scenario: Scenario, problem, streams: Streams, progress: bool = False,
             spec: Any = None) -> Trace:
    """One replicate on ``problem`` (the runner signature; ``progress`` and ``spec`` unused:
    the replay has no progress bar): :func:`sync_tables`, then
    :func:`fedsim.engine.replay.driver.replay_table`."""
    r = streams.replicate
    return replay_table(scenario, sync_tables(scenario, problem, [r]), replicates=[r],
                        problem=problem)[0]
