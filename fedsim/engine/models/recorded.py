"""A recorded delay schedule replayed as the event table.

The schedule is a text file of per-step staleness, one non-negative integer per line
(blank lines and lines starting with ``#`` are skipped): line ``t`` is ``tau_t``, the
delay of the gradient applied at server step ``t`` (Koloskova, Stich & Jaggi 2022 §4.1:
the number of server steps between the read and the application).  A scenario selects it
with ``[algorithm] model = "recorded"`` and ``schedule = "<path>"``.

Clients are reconstructed as in Koloskova's Example 3 (maximum concurrency: the worker
that finishes is handed the newest model at once): step ``t`` reads version
``r_t = t - 1 - tau_t``; version ``v >= 1`` was produced by step ``v``, whose client read it,
so step ``t``'s client is step ``r_t``'s client, and the steps that read version 0 are the
initial workers ``0, 1, ...`` in order.  A schedule is consistent with one job per worker
iff ``r_t >= 0``, every version ``v >= 1`` is read at most once and version 0 at most ``n``
times; otherwise it is a :class:`~fedsim.errors.ConfigError` naming the first bad line.
There are no physical times: the ``time`` column is the step index.  The staleness bound
is the schedule's own maximum (exact: the schedule is given).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from fedsim.config import Scenario
from fedsim.engine.models.base import ExecutionModel
from fedsim.engine.replay.table import EventTable
from fedsim.engine.steplog import TableLog
from fedsim.errors import require
from fedsim.trace import KINDS

__all__ = ["MODEL", "read_schedule", "schedule_clients", "recorded_table", "recorded_tables"]

K_UPLOAD = KINDS.index("upload")


def read_schedule(path: str | Path) -> np.ndarray:
    """The per-step staleness of ``path`` as an int64 array (module docstring)."""
    p = Path(path)
    require(p.is_file(), "algorithm.schedule", str(path), "must be a readable file")
    out = []
    for no, line in enumerate(p.read_text().splitlines(), start=1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        require(s.isdigit(), "algorithm.schedule", f"{path}:{no}: {s!r}",
                "must hold one non-negative integer per line")
        out.append(int(s))
    require(len(out) > 0, "algorithm.schedule", str(path), "must hold at least one step")
    return np.asarray(out, dtype=np.int64)


def schedule_clients(tau: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(clients, reads)`` of the schedule ``tau`` with ``n`` workers (Example 3
    reconstruction, module docstring)."""
    T = tau.shape[0]
    clients = np.empty(T, np.int64)
    reads = np.arange(T, dtype=np.int64) - tau
    taken = np.zeros(T + 1, bool)
    fresh = 0
    for t in range(1, T + 1):
        r = int(reads[t - 1])
        require(r >= 0, "algorithm.schedule", f"line {t}: {int(tau[t - 1])}",
                f"exceeds the {t - 1} steps done before step {t}")
        if r == 0:
            require(fresh < n, "algorithm.schedule", f"line {t}: {int(tau[t - 1])}",
                    f"is the {fresh + 1}-th read of the initial model, but there are {n} "
                    "workers")
            clients[t - 1] = fresh
            fresh += 1
        else:
            require(not taken[r], "algorithm.schedule", f"line {t}: {int(tau[t - 1])}",
                    f"reads version {r} a second time (one job per worker)")
            taken[r] = True
            clients[t - 1] = clients[r - 1]
    return clients, reads


def recorded_table(scenario: Scenario, problem) -> EventTable:
    """The recorded schedule's event table: step ``t`` an ``"upload"`` of its
    reconstructed client, reading ``w^{r_t}``, staleness ``tau_t``, time ``t``."""
    tau = read_schedule(scenario.algorithm.get("schedule"))
    T = int(scenario.horizon.steps)
    require(T <= tau.shape[0], "horizon.steps", T,
            f"must be at most the schedule's {tau.shape[0]} steps")
    tau = tau[:T]
    clients, reads = schedule_clients(tau, problem.n)
    Q = int(scenario.algorithm.get("Q") or 1)
    log = TableLog(T)
    for t in range(1, T + 1):
        i, r, s = int(clients[t - 1]), int(reads[t - 1]), int(tau[t - 1])
        log.upload(i)
        log.contribute(i, r, Q, s)
        log.step(float(t), K_UPLOAD, i, s, float(s), 1)
    table = log.table(n=problem.n, sim_time=float(T), every=scenario.record.every,
                      staleness_bound=float(tau.max()),
                      info={"time_is_step_index": True, "schedule_steps": int(T)})
    return dataclasses.replace(table, concurrency_time=np.empty(0),
                               concurrency_busy=np.empty(0))


def recorded_tables(scenario: Scenario, problem, replicates: Sequence[int]
                    ) -> list[EventTable]:
    """:func:`recorded_table` for each replicate (the schedule is the same; the replicates
    differ in their gradient noise): ``fedsim.engine.dispatch.TABLE_WRITERS``."""
    table = recorded_table(scenario, problem)
    return [table for _ in replicates]


MODEL = ExecutionModel(key="recorded", write=recorded_tables, doc=__doc__)
