"""Synchronous rounds: FedAvg (and Per-FedAvg / pFedMe via the client rule).

The server is a SimPy process.  Each round it samples ``m = max(1, round(r n))`` clients
uniformly without replacement (server ``sampling`` stream), broadcasts ``w^t`` and waits
for all of them (``simpy.AllOf``); each sampled client is a process that downloads,
computes its Q local steps from ``w^t`` and uploads (its own delay and noise streams).
Then ``w^{t+1}`` is the average of their models (the server rule's ``apply``,
:class:`fedsim.servers.fedavg.FedAvgRule`).
One round is one server step (``kind = "aggregate"``, ``staleness_steps = 0``,
``staleness_time`` = the round's duration).  The busy fraction drops as sampled clients
finish and wait for the straggler ([P] Figure 2(a)).  Think times are not used.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import simpy

from fedsim.config import Scenario
from fedsim.engine.setup import RunSetup, inner_counters
from fedsim.engine.simpy_fast import at
from fedsim.rng import Streams
from fedsim.servers.base import Upload
from fedsim.trace import KINDS, Trace

__all__ = ["run_sync"]

K_AGG = KINDS.index("aggregate")


def run_sync(scenario: Scenario, problem, streams: Streams, progress: bool,
             spec: Any = None) -> Trace:
    """Simulate synchronous FedAvg rounds (module docstring)."""
    if spec is None:
        from fedsim.algorithms import get_algorithm
        spec = get_algorithm(scenario.algorithm.name)
    run = RunSetup(scenario, problem, streams, progress)
    a, n, d = scenario.algorithm, run.n, run.d
    env, rule, rec, log = run.env, run.rule, run.rec, run.log
    server = spec.server(a, problem)
    state = server.init(run.w)
    samplers = run.make_samplers()
    noise = run.make_noise()
    sampling = streams.server("sampling")
    m = max(1, int(round(a.get("participation") * n)))
    models = np.empty((m, d))
    broadcast = np.empty(d)
    busy = [0]

    def client(slot: int, i: int):
        download, compute, upload, _think = samplers[i].next_round()
        t = env.now + download
        for c in compute:
            t = t + c
        t = t + upload
        yield at(env, t)
        rule.round(i, broadcast, models[slot], noise[i])
        rec.client_updates[i] += 1
        busy[0] -= 1
        rec.busy(t, busy[0] / n)

    def server_process():
        nonlocal state
        while True:
            chosen = np.sort(sampling.choice(n, size=m, replace=False)).tolist()
            np.copyto(broadcast, state)
            t0 = env.now
            busy[0] = m
            rec.busy(t0, m / n)
            yield simpy.AllOf(env, [env.process(client(s, i)) for s, i in enumerate(chosen)])
            if log.stopped:
                return
            state, _ = server.apply(state, [Upload(i, broadcast, models[s])
                                            for s, i in enumerate(chosen)])
            who = chosen[0] if m == 1 else -1
            if log.log(env.now, K_AGG, who, 0, env.now - t0, m, state):
                return

    env.process(server_process())
    run.run_until_done()
    rec.info.update(inner_counters(rule))
    rec.info["clients_per_round"] = m
    return log.finish(state, env.now, 0.0)
