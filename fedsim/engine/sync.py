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
import sys
from array import array
from collections.abc import Sequence
from typing import Any

import numpy as np
import simpy

from fedsim.config import Scenario
from fedsim.engine.delay_blocks import DelaySampler
from fedsim.engine.replay.driver import replay_table
from fedsim.engine.replay.table import EventTable, busy_curve
from fedsim.engine.simpy_fast import at, stop_event, urgent_at
from fedsim.errors import require
from fedsim.rng import Streams
from fedsim.trace import KINDS, PERSONAL, Trace

__all__ = ["run_sync", "replay_sync", "sync_timeline", "sync_table"]

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
    bt = np.frombuffer(b_time, dtype=np.float64).copy()
    bd = np.frombuffer(b_delta, dtype=np.int64).copy()
    ct, cb = busy_curve(n, bt, bd)
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
        "concurrency_time": ct, "concurrency_busy": cb, "b_time": bt, "b_delta": bd,
        "b_gate": gate, "b_before": gate.copy(),
        "info": {"clients_per_round": m},
    }


def sync_table(scenario: Scenario, n: int, streams: Streams) -> EventTable:
    """The replicate's :class:`~fedsim.engine.replay.table.EventTable`
    (:func:`sync_timeline`)."""
    return EventTable(**sync_timeline(scenario, n, streams))


def replay_sync(scenario: Scenario, problem, replicates: Sequence[int]) -> list[Trace]:
    """Replicates ``replicates`` of ``scenario``: each one's table (:func:`sync_table`),
    then the scenario's client rule and :class:`~fedsim.servers.fedavg.FedAvgRule`
    replayed along them (:func:`fedsim.engine.replay.driver.replay_table`); ``info`` adds
    the table's ``clients_per_round``."""
    for name in scenario.record.metrics:  # synchronous clients keep no personal model
        require(name.removeprefix("val_") not in PERSONAL, "record.metrics", name,
                "needs per-client personal models, which only an algorithm whose clients "
                "keep them records (algorithm.name = 'asypfl')")
    reps = [int(r) for r in replicates]
    tables = [sync_table(scenario, problem.n, Streams(scenario.seed, r)) for r in reps]
    traces = replay_table(scenario, tables, replicates=reps, problem=problem)
    for tr, table in zip(traces, tables, strict=True):
        tr.info.update(table.info)
    return traces


def run_sync(scenario: Scenario, problem, streams: Streams, progress: bool,
             spec: Any = None) -> Trace:
    """Synchronous rounds, one replicate (module docstring): :func:`replay_sync` (``progress``
    and ``spec`` are the runner signature's; the replay has no progress bar)."""
    return replay_sync(scenario, problem, [streams.replicate])[0]
