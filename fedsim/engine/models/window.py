"""FedAsync in the bounded-window model of THEORY_SPEC 10.2(a) ([P] Assumption 1 exactly).

At server step t (0-based): the uploader ``i_t ~ Uniform{0..n-1}`` and the delay ``s_t ~ pi``
on ``{0..tau}`` are drawn i.i.d. (independent of each other, of the past and of the noise)
from the server's ``events`` stream, ``Omega(t) = max(t - s_t, 0)``, client ``i_t`` runs its
Q local steps from ``w^{Omega(t)}`` (its own ``noise`` stream) and
``w^{t+1} = w^t - beta Delta``.  The last ``tau + 1`` server models are kept in a ring
buffer.  There are no physical delays: the ``time`` column is the step index and the
concurrency curve is empty (NaN mean).  ``staleness_bound = max{s : pi_s > 0}``.
This is the paper's abstraction, not a physical one-job-per-client system.

The model's home: one writer, :func:`window_table` (no algebra, no SimPy: a
:class:`~fedsim.engine.steplog.TableLog`), and the ring's memory (:func:`memory`);
``fedsim.engine.run``/``run_batch`` replay its tables
(:func:`fedsim.engine.replay.driver.replay_table`) with the algorithm's client rule and
FedAsync's server rule.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from fedsim.config import Scenario
from fedsim.engine.models.base import ExecutionModel, Staleness
from fedsim.engine.replay.table import EventTable
from fedsim.engine.steplog import TableLog
from fedsim.rng import Streams
from fedsim.rng.delays import BLOCK
from fedsim.trace import KINDS

__all__ = ["MODEL", "window_table", "window_tables", "memory"]

K_UPLOAD = KINDS.index("upload")


def _horizon(scenario: Scenario) -> int:
    """Steps of the window model: ``horizon.steps``, cut by a time horizon (time is the
    step index; events at the horizon time are not processed)."""
    T = scenario.horizon.steps
    if math.isfinite(scenario.horizon.time):
        T = min(T, max(0, math.ceil(scenario.horizon.time) - 1))
    return T


def window_table(scenario: Scenario, problem, streams: Streams) -> EventTable:
    """The window model's event table (REPLAY_SPEC 1; module docstring), no algebra: step
    t (1-based) is an ``"upload"`` of client ``i_t`` whose round reads ``w^{t-1-s_t}``
    (``c_read = max(t - 1 - s_t, 0)``, ``c_stale = t - 1 - c_read``), ``i_t`` and ``s_t``
    drawn from the server's ``events`` stream in blocks of ``8 BLOCK`` (uploaders, then
    delays ``~ pi``); the time column is the step index, there is no busy curve, and
    ``staleness_bound = max{s : pi_s > 0}``."""
    a = scenario.algorithm
    n = problem.n
    tau = int(a.tau)
    pmf = np.asarray(a.get("delay_pmf"), dtype=np.float64)
    pmf = pmf / pmf.sum()
    T = _horizon(scenario)
    Q = int(a.get("Q") or 1)
    log = TableLog(T)
    ev = streams.server("events")
    blk = BLOCK * 8
    for t in range(T):
        if t % blk == 0:
            who = ev.integers(0, n, size=blk).tolist()
            lag = ev.choice(tau + 1, size=blk, p=pmf).tolist()
        i, s = who[t % blk], lag[t % blk]
        omega = t - s if s <= t else 0
        log.upload(i)
        log.contribute(i, omega, Q, t - omega)
        log.step(float(t + 1), K_UPLOAD, i, t - omega, float(t - omega), 1)
    table = log.table(n=n, sim_time=float(log.t), every=scenario.record.every,
                      staleness_bound=float(np.max(np.nonzero(pmf > 0)[0])),
                      info={"time_is_step_index": True})
    return dataclasses.replace(table, concurrency_time=np.empty(0),
                               concurrency_busy=np.empty(0))


def window_tables(scenario: Scenario, problem, replicates: Sequence[int]) -> list[EventTable]:
    """:func:`window_table` of each replicate (the model's writer)."""
    return [window_table(scenario, problem, Streams(scenario.seed, int(r)))
            for r in replicates]


def memory(scenario: Scenario, d: float) -> dict[str, float]:
    """The bytes the window model adds to :func:`fedsim.config.budget.estimate_bytes`:
    the ring of the last ``tau + 1`` server models (``(tau + 1) d``) and the delay
    distribution on ``{0..tau}`` (array and default list, ``3 (tau + 1)``)."""
    tau = getattr(scenario.algorithm, "tau", None)
    tau = float(tau) if isinstance(tau, (int, float)) and not isinstance(tau, bool) else 0.0
    return {"window": 8.0 * (tau + 1.0) * (d + 3.0)}


def staleness(scenario: Scenario) -> Staleness:
    """``tau`` by construction: every staleness is drawn on ``{0..tau}``, the uploader
    uniformly and independently ([P] Assumption 1 holds by construction)."""
    return Staleness(float(int(scenario.algorithm.get("tau"))),
                     "window model: staleness in {0..tau} by construction",
                     {"Asm 1": (True, "window model: staleness uniform on {0..tau}, uploader "
                                      "i.i.d. uniform (by construction)")})


MODEL = ExecutionModel(key="window", write=window_tables, memory=memory, staleness=staleness,
                       doc=__doc__)
