"""Koloskova, Stich & Jaggi 2022, Algorithm 2: asynchronous SGD with concurrency ``tau_C``
and uniform random assignment.

Line 1: the server selects uniformly at random a set ``C_0`` of ``tau_C`` clients
(without replacement) and sends them ``x^(0)``; line 4: the first job to finish is applied
(server step ``t``); line 6: the server selects ``k_t ~ Uniform[1, n]`` -- regardless of
who is busy -- and sends it ``x^(t+1)``; line 7: ``C_{t+1} = C_t \\ {j_t} ∪ {k_t}`` is a
multiset: "the assigned jobs would just pile up on this client" (§5.1).  Each client
serves its jobs first in, first out; a job takes ``download + compute + upload`` drawn from
the client's delay models when it starts (``compute`` once: ``Q = 1``); think times must be
zero.  The server's operations take zero time (§4.4's assumption).

Streams: ``sampling`` (server) for ``C_0`` and the ``k_t``; ``delays`` (client i) for
client i's job durations, in job order.  The concurrency is ``tau_C`` at every step
(Definition 1).  The staleness bound is ``inf``: jobs can pile up on one client without
bound with positive probability, whatever the delay supports.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Sequence

from fedsim.config import Scenario
from fedsim.engine.models.base import ExecutionModel
from fedsim.engine.replay.table import EventTable
from fedsim.engine.steplog import TableLog
from fedsim.errors import require
from fedsim.rng import Streams
from fedsim.trace import KINDS

__all__ = ["MODEL", "uniform_assign_table", "uniform_assign_tables"]

K_UPLOAD = KINDS.index("upload")


def uniform_assign_table(scenario: Scenario, problem, streams: Streams) -> EventTable:
    """One replicate of Algorithm 2 as an event table (module docstring)."""
    n = problem.n
    tau_c = int(scenario.algorithm.get("tau_C"))
    require(1 <= tau_c <= n, "algorithm.tau_C", tau_c,
            f"must be in [1, n = {n}] for model 'uniform_assign' (C_0 is a set)")
    dcfg = scenario.delays
    models = [dcfg.for_client(i) for i in range(n)]
    require(all(m["think"].upper == 0.0 for m in models), "delays.think",
            dcfg.think.to_dict(), "must be 0 for model 'uniform_assign'")
    drng = [streams.client(i, "delays") for i in range(n)]
    srng = streams.server("sampling")
    T = int(scenario.horizon.steps)
    log = TableLog(T)
    queue: list[deque] = [deque() for _ in range(n)]
    busy = [False] * n
    heap: list[tuple[float, int, int, int, float]] = []
    seq = 0

    def start(i: int, now: float) -> None:
        nonlocal seq
        read, sent = queue[i].popleft()
        m = models[i]
        dur = (float(m["download"].sample(drng[i])) + float(m["compute"].sample(drng[i]))
               + float(m["upload"].sample(drng[i])))
        heapq.heappush(heap, (now + dur, seq, i, read, sent))
        seq += 1
        busy[i] = True

    def assign(i: int, read: int, now: float) -> None:
        queue[i].append((read, now))
        if not busy[i]:
            start(i, now)

    for i in srng.choice(n, size=tau_c, replace=False).tolist():
        assign(int(i), 0, 0.0)
    now = 0.0
    horizon = scenario.horizon.time
    t = 0
    while t < T:
        now, _, j, read, sent = heapq.heappop(heap)
        if math.isfinite(horizon) and now >= horizon:
            break
        t += 1
        busy[j] = False
        log.upload(j)
        log.contribute(j, read, 1, t - 1 - read)
        log.step(now, K_UPLOAD, j, t - 1 - read, now - sent, 1)
        if queue[j]:
            start(j, now)
        assign(int(srng.integers(n)), t, now)
    return log.table(n=n, sim_time=now, every=scenario.record.every,
                     staleness_bound=math.inf, info={"tau_C": tau_c})


def uniform_assign_tables(scenario: Scenario, problem, replicates: Sequence[int]
                          ) -> list[EventTable]:
    """:func:`uniform_assign_table` of each replicate
    (``fedsim.engine.dispatch.TABLE_WRITERS``)."""
    return [uniform_assign_table(scenario, problem, Streams(scenario.seed, int(r)))
            for r in replicates]


MODEL = ExecutionModel(key="uniform_assign", write=uniform_assign_tables, doc=__doc__)
