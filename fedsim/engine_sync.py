"""Synchronous rounds: FedAvg (and Per-FedAvg / pFedMe via the client rule).

The server is a SimPy process.  Each round it samples ``m = max(1, round(r n))`` clients
uniformly without replacement (server ``sampling`` stream), broadcasts ``w^t`` and waits
for all of them (``simpy.AllOf``); each sampled client is a process that downloads,
computes its Q local steps from ``w^t`` and uploads (its own delay and noise streams).
Then ``w^{t+1}`` is the average of their models (:func:`fedsim.servers.fedavg_aggregate`).
One round is one server step (``kind = "aggregate"``, ``staleness_steps = 0``,
``staleness_time`` = the round's duration).  The busy fraction drops as sampled clients
finish and wait for the straggler ([P] Figure 2(a)).  Think times are not used.
"""

from __future__ import annotations

import math

import numpy as np
import simpy

from fedsim.engine_common import DelaySampler, StepLog, at, urgent_at
from fedsim.local import make_client_rule
from fedsim.servers.fedavg import fedavg_aggregate
from fedsim.trace import KINDS, Trace

__all__ = ["run_sync"]

K_AGG = KINDS.index("aggregate")


def run_sync(scenario, problem, streams, progress: bool) -> Trace:
    """Simulate synchronous FedAvg rounds (module docstring)."""
    from fedsim.engine import initial_model, make_recorder

    a = scenario.algorithm
    n, d = problem.n, problem.dim
    env = simpy.Environment()
    done = env.event()

    def stop() -> None:
        if not done.triggered:
            done.succeed()

    rule = make_client_rule(a, problem)
    w = initial_model(problem, scenario)
    rec = make_recorder(scenario, problem)
    log = StepLog(rec, scenario.horizon.steps, w, progress, stop)
    steps = rule.Q if scenario.delays.compute_per == "step" else 1
    samplers = [DelaySampler(scenario.delays.for_client(i), streams.client(i, "delays"), steps)
                for i in range(n)]
    noise = [streams.client(i, "noise") for i in range(n)]
    sampling = streams.server("sampling")
    m = max(1, int(round(a.get("participation") * n)))
    beta = float(a.get("beta"))
    models = np.empty((m, d))
    broadcast = np.empty(d)
    state = {"busy": 0}

    def client(slot: int, i: int):
        dl, comp, ul, _th = samplers[i].next_round()
        t = env.now + dl
        for c in comp:
            t = t + c
        t = t + ul
        yield at(env, t)
        rule.round(i, broadcast, models[slot], noise[i])
        rec.client_updates[i] += 1
        state["busy"] -= 1
        rec.busy(t, state["busy"] / n)

    def server():
        while True:
            chosen = np.sort(sampling.choice(n, size=m, replace=False)).tolist()
            np.copyto(broadcast, w)
            t0 = env.now
            state["busy"] = m
            rec.busy(t0, m / n)
            yield simpy.AllOf(env, [env.process(client(s, i)) for s, i in enumerate(chosen)])
            if log.stopped:
                return
            fedavg_aggregate(w, list(models), beta)
            who = chosen[0] if m == 1 else -1
            if log.log(env.now, K_AGG, who, 0, env.now - t0, m, w):
                return

    env.process(server())
    if math.isfinite(scenario.horizon.time):
        urgent_at(env, scenario.horizon.time).callbacks.append(lambda _ev: log.halt())
    env.run(until=done)
    if hasattr(rule, "inner_iters"):
        rec.info.update(inner_iters=rule.inner_iters, inner_solves=rule.inner_solves,
                        inner_failures=rule.inner_failures)
    rec.info["clients_per_round"] = m
    return log.finish(w, env.now, 0.0)
