"""The synchronous rounds' event table without SimPy (a plain loop over the rounds).

Synchronous rounds have no contention: round ``t`` starts when round ``t - 1`` ends, its
``m`` sampled clients each finish at ``((t0 + download) + compute...) + upload`` from
their own ``delays`` stream, and it ends at the largest of those times.  So the table
that :func:`fedsim.engine.models.sync.simpy_writer.sync_timeline` gets from SimPy (the reference) is
computed here round by round, with the same draws in the same order (the server's
``sampling`` stream once per round, each sampled client's next round of delays), and
the same float additions.  What SimPy decides by event order is decided the same way:

* the time horizon ``t_end`` (an urgent event at ``t_end``): a client that finishes at
  or before ``t_end`` is counted (its event precedes the stop event SimPy schedules at
  ``t_end``), a round is a step only when it ends strictly before ``t_end``;
* the busy events of a round are its start, then its arrivals in time order (ties in
  sampling order, SimPy's event ids), so the busy curve and the truncation columns are
  SimPy's.

:func:`rounds_timeline` is tested bitwise equal to the SimPy writer
(``tests/engine/test_sync_table.py``), on random delays, Constant delays (ties) and time
horizons that fall on an arrival.  Both writers share :func:`sync_plan` and
:func:`sync_columns`.
"""

from __future__ import annotations

import math
import sys
from array import array
from dataclasses import dataclass
from typing import Any

import numpy as np

from fedsim.config import Scenario
from fedsim.engine.replay.table import busy_curve
from fedsim.rng import Streams
from fedsim.rng.delays import DelaySampler
from fedsim.trace import KINDS

__all__ = ["SyncPlan", "SyncLog", "sync_plan", "sync_columns", "rounds_timeline"]

K_AGG = KINDS.index("aggregate")


@dataclass
class SyncPlan:
    """What a writer draws from and stops at: the clients' delay samplers, the server's
    ``sampling`` stream, ``m`` clients per round, ``Q`` local steps, the step horizon ``T``
    and the time horizon ``t_end``."""

    samplers: list[DelaySampler]
    sampling: np.random.Generator
    n: int
    m: int
    Q: int
    T: int
    t_end: float
    every: int


def sync_plan(scenario: Scenario, n: int, streams: Streams) -> SyncPlan:
    """The plan of one replicate (``m = max(1, round(r n))``; compute delays per step with
    ``compute_per = "step"``)."""
    a = scenario.algorithm
    Q = int(a.get("Q"))
    steps = Q if scenario.delays.compute_per == "step" else 1
    samplers = [DelaySampler(scenario.delays.for_client(i), streams.client(i, "delays"), steps)
                for i in range(n)]
    T = scenario.horizon.steps
    return SyncPlan(samplers=samplers, sampling=streams.server("sampling"), n=n,
                    m=max(1, int(round(a.get("participation") * n))), Q=Q,
                    T=sys.maxsize if T is None else int(T),
                    t_end=float(scenario.horizon.time), every=int(scenario.record.every))


class SyncLog:
    """The columns a writer appends to: per step (``step``), per arrival (``arrive``),
    per round start (``start``)."""

    def __init__(self, n: int) -> None:
        self.time, self.who, self.dur, self.c_client = (array("d"), array("q"), array("d"),
                                                         array("q"))
        self.u_client, self.u_before = array("q"), array("q")
        self.b_time, self.b_delta, self.b_gate = array("d"), array("q"), array("q")
        self.counts = [0] * n
        self.steps = 0
        self.idle = 0

    def start(self, t0: float, n: int, m: int) -> None:
        """A round starts at ``t0``: ``m`` clients busy, the other ``n - m`` idle."""
        self.b_time.append(t0)
        self.b_delta.append((n - m) - self.idle)
        self.b_gate.append(self.steps)
        self.idle = n - m

    def arrive(self, i: int, t: float) -> None:
        """Client ``i``'s round arrives at ``t``."""
        self.arrive_many((i,), (t,))

    def arrive_many(self, clients: Any, times: Any) -> None:
        """Rounds arrive, client ``clients[k]`` at ``times[k]``, in that order."""
        s = self.steps
        counts = self.counts
        for i in clients:
            counts[i] += 1
        k = len(clients)
        self.u_client.extend(clients)
        self.u_before.extend([s] * k)
        self.idle += k
        self.b_time.extend(times)
        self.b_delta.extend([1] * k)
        self.b_gate.extend([s] * k)

    def step(self, now: float, t0: float, chosen: list[int]) -> None:
        """The round that started at ``t0`` ends at ``now``: one server step."""
        self.steps += 1
        self.time.append(now)
        self.who.append(chosen[0] if len(chosen) == 1 else -1)
        self.dur.append(now - t0)
        self.c_client.extend(chosen)


def sync_columns(plan: SyncPlan, log: SyncLog, sim_time: float) -> dict[str, Any]:
    """The keyword arguments of :class:`~fedsim.engine.replay.table.EventTable`."""
    S, m, Q = log.steps, plan.m, plan.Q
    rec = np.arange(0, S + 1, plan.every, dtype=np.int64)
    if rec[-1] != S:
        rec = np.append(rec, S)
    gate = np.frombuffer(log.b_gate, dtype=np.int64).copy()
    bt = np.frombuffer(log.b_time, dtype=np.float64).copy()
    bd = np.frombuffer(log.b_delta, dtype=np.int64).copy()
    ct, cb = busy_curve(plan.n, bt, bd)
    return {
        "time": np.frombuffer(log.time, dtype=np.float64).copy(),
        "kind": np.full(S, K_AGG, dtype=np.int8),
        "client": np.frombuffer(log.who, dtype=np.int64).astype(np.int32),
        "staleness_steps": np.zeros(S, dtype=np.int64),
        "staleness_time": np.frombuffer(log.dur, dtype=np.float64).copy(),
        "buffer_fill": np.full(S, m, dtype=np.int32),
        "ptr": np.arange(S + 1, dtype=np.int64) * m,
        "c_client": np.frombuffer(log.c_client, dtype=np.int64).astype(np.int32),
        "c_read": np.repeat(np.arange(S, dtype=np.int64), m),
        "c_steps": np.full(S * m, Q, dtype=np.int32),
        "c_stale": np.zeros(S * m, dtype=np.int64),
        "sim_time": float(sim_time), "steps_done": S,
        "client_updates": np.array(log.counts, dtype=np.int64),
        "metric_steps": rec, "staleness_bound": 0.0,
        "u_client": np.frombuffer(log.u_client, dtype=np.int64).astype(np.int32),
        "u_before": np.frombuffer(log.u_before, dtype=np.int64).copy(),
        "concurrency_time": ct, "concurrency_busy": cb, "b_time": bt, "b_delta": bd,
        "b_gate": gate, "b_before": gate.copy(),
        "info": {"clients_per_round": m},
    }


def rounds_timeline(scenario: Scenario, n: int, streams: Streams) -> dict[str, Any]:
    """The event-table columns of :func:`fedsim.engine.models.sync.simpy_writer.sync_timeline`,
    computed round by round without SimPy (module docstring)."""
    plan = sync_plan(scenario, n, streams)
    log = SyncLog(n)
    m, T, t_end, samplers = plan.m, plan.T, plan.t_end, plan.samplers
    timed = math.isfinite(t_end)
    t0 = 0.0
    sim_time = None
    while log.steps < T:
        chosen = np.sort(plan.sampling.choice(n, size=m, replace=False)).tolist()
        log.start(t0, n, m)
        fin = []
        for i in chosen:
            download, compute, upload, _think = samplers[i].next_round()
            t = t0 + download
            for c in compute:
                t = t + c
            fin.append(t + upload)
        order = sorted(range(m), key=fin.__getitem__)  # stable: ties in sampling order
        if timed:
            order = [j for j in order if fin[j] <= t_end]
        log.arrive_many([chosen[j] for j in order], [fin[j] for j in order])
        end = max(fin)
        if timed and not end < t_end:
            sim_time = t_end
            break
        log.step(end, t0, chosen)
        t0 = end
    return sync_columns(plan, log, t0 if sim_time is None else sim_time)
