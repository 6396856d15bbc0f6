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

import math
import sys
from array import array
from typing import Any

import numpy as np
import simpy

from fedsim.config import Scenario
from fedsim.engine.delay_blocks import DelaySampler
from fedsim.engine.setup import RunSetup, inner_counters
from fedsim.engine.simpy_fast import at, stop_event, urgent_at
from fedsim.rng import Streams
from fedsim.servers.base import Upload
from fedsim.trace import KINDS, Trace

__all__ = ["run_sync", "sync_timeline"]

K_AGG = KINDS.index("aggregate")


def sync_timeline(scenario: Scenario, n: int, streams: Streams) -> dict[str, Any]:
    """The event-table columns of synchronous rounds (module docstring; REPLAY_SPEC
    section 1), simulated by SimPy with no model arithmetic.

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
    a = scenario.algorithm
    Q = int(a.get("Q"))
    steps = Q if scenario.delays.compute_per == "step" else 1
    samplers = [DelaySampler(scenario.delays.for_client(i), streams.client(i, "delays"), steps)
                for i in range(n)]
    sampling = streams.server("sampling")
    m = max(1, int(round(a.get("participation") * n)))
    T = scenario.horizon.steps
    T = sys.maxsize if T is None else int(T)
    env = simpy.Environment()
    done, stop = stop_event(env)
    time, who, dur, c_client = array("d"), array("q"), array("d"), array("q")
    u_client, u_before = array("q"), array("q")
    b_time, b_delta, b_gate = array("d"), array("q"), array("q")
    counts = np.zeros(n, dtype=np.int64)
    st = {"t": 0, "idle": 0, "stopped": False}

    def client(i: int):
        download, compute, upload, _think = samplers[i].next_round()
        t = env.now + download
        for c in compute:
            t = t + c
        t = t + upload
        yield at(env, t)
        s = st["t"]
        counts[i] += 1
        u_client.append(i)
        u_before.append(s)
        st["idle"] += 1
        b_time.append(t)
        b_delta.append(1)
        b_gate.append(s)

    def server():
        while True:
            chosen = np.sort(sampling.choice(n, size=m, replace=False)).tolist()
            t0 = env.now
            b_time.append(t0)
            b_delta.append((n - m) - st["idle"])
            b_gate.append(st["t"])
            st["idle"] = n - m
            yield simpy.AllOf(env, [env.process(client(i)) for i in chosen])
            if st["stopped"]:
                return
            st["t"] += 1
            time.append(env.now)
            who.append(chosen[0] if m == 1 else -1)
            dur.append(env.now - t0)
            c_client.extend(chosen)
            if st["t"] >= T:
                halt()
                return

    def halt() -> None:
        st["stopped"] = True
        stop()

    env.process(server())
    t_end = scenario.horizon.time
    if math.isfinite(t_end):
        urgent_at(env, t_end).callbacks.append(lambda _ev: halt())
    env.run(until=done)
    S = st["t"]
    every = int(scenario.record.every)
    rec = np.arange(0, S + 1, every, dtype=np.int64)
    if rec[-1] != S:
        rec = np.append(rec, S)
    gate = np.frombuffer(b_gate, dtype=np.int64).copy()
    return {
        "time": np.frombuffer(time, dtype=np.float64).copy(),
        "kind": np.full(S, K_AGG, dtype=np.int8),
        "client": np.frombuffer(who, dtype=np.int64).astype(np.int32),
        "staleness_steps": np.zeros(S, dtype=np.int64),
        "staleness_time": np.frombuffer(dur, dtype=np.float64).copy(),
        "buffer_fill": np.full(S, m, dtype=np.int32),
        "ptr": np.arange(S + 1, dtype=np.int64) * m,
        "c_client": np.frombuffer(c_client, dtype=np.int64).astype(np.int32),
        "c_read": np.repeat(np.arange(S, dtype=np.int64), m),
        "c_steps": np.full(S * m, Q, dtype=np.int32),
        "c_stale": np.zeros(S * m, dtype=np.int64),
        "sim_time": float(env.now), "steps_done": S, "client_updates": counts,
        "metric_steps": rec, "staleness_bound": 0.0,
        "u_client": np.frombuffer(u_client, dtype=np.int64).astype(np.int32),
        "u_before": np.frombuffer(u_before, dtype=np.int64).copy(),
        "b_time": np.frombuffer(b_time, dtype=np.float64).copy(),
        "b_delta": np.frombuffer(b_delta, dtype=np.int64).copy(),
        "b_gate": gate, "b_before": gate.copy(),
        "info": {"clients_per_round": m},
    }


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
