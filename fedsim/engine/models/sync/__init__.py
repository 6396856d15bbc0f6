"""Synchronous rounds: FedAvg (and Per-FedAvg / pFedMe via the client rule).

Each round the server samples ``m = max(1, round(r n))`` clients uniformly without
replacement (server ``sampling`` stream), broadcasts ``w^t`` and waits for all of them;
each sampled client downloads, computes its Q local steps and uploads (its own ``delays``
stream).  One round is one server step (``kind = "aggregate"``, ``staleness_steps = 0``,
``staleness_time`` = the round's duration) consuming the ``m`` rounds, all read from
``w^{t-1}``; think times are not used.  The replay then runs each sampled client's Q local
steps from ``w^{t-1}`` and sets ``w^t`` to their average
(:func:`fedsim.servers.fedavg.fedavg_step`).

The writers: :func:`~fedsim.engine.models.sync.simpy_writer.sync_timeline` (SimPy, the
reference) and :func:`~fedsim.engine.models.sync.rounds.rounds_timeline` (a plain loop over
the rounds, tested bitwise equal: rounds have no contention).  The rule: always the loop.
The SimPy writer records the per-client phases when asked
(:func:`~fedsim.engine.models.sync.simpy_writer.sync_phases`, ``MODEL.phases``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fedsim.config import Scenario
from fedsim.engine.models.base import ExecutionModel
from fedsim.engine.models.sync.rounds import rounds_timeline
from fedsim.engine.models.sync.simpy_writer import sync_phases
from fedsim.engine.replay.table import EventTable
from fedsim.errors import require
from fedsim.rng import Streams
from fedsim.trace import PERSONAL

__all__ = ["MODEL", "sync_table", "sync_tables"]


def sync_table(scenario: Scenario, n: int, streams: Streams) -> EventTable:
    """The replicate's :class:`~fedsim.engine.replay.table.EventTable`: the columns of
    :func:`~fedsim.engine.models.sync.rounds.rounds_timeline`."""
    return EventTable(**rounds_timeline(scenario, n, streams))


def sync_tables(scenario: Scenario, problem: Any, replicates: Sequence[int]
                ) -> list[EventTable]:
    """The tables of ``replicates`` (:func:`sync_table`), replayed with the scenario's
    client rule and :class:`~fedsim.servers.fedavg.FedAvgRule`.  Personal-model metrics
    are refused first: synchronous clients keep no model."""
    for name in scenario.record.metrics:
        require(name.removeprefix("val_") not in PERSONAL, "record.metrics", name,
                "needs per-client personal models, which only an algorithm whose clients "
                "keep them records (algorithm.name = 'asypfl')")
    return [sync_table(scenario, problem.n, Streams(scenario.seed, int(r)))
            for r in replicates]


MODEL = ExecutionModel(key="sync", write=sync_tables, rounds="sync", phases=sync_phases,
                       doc=__doc__)
