"""The results of a batched replay as arrays over replicates: ``BatchResult``.

Part of :mod:`fedsim.engine.replay.fedasync` (its docstring has the algorithm).
:func:`batch_result` gathers the per-replicate results of
:func:`fedsim.engine.replay.driver.replay_one` into arrays; with the replicates' event
tables kept, :meth:`BatchResult.trace` is the engine's :class:`fedsim.trace.Trace` of a
row (:meth:`fedsim.engine.replay.table.EventTable.trace`).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fedsim.engine.replay.driver import Replayed
from fedsim.engine.replay.table import EventTable
from fedsim.errors import require
from fedsim.trace import Trace

__all__ = ["BatchResult", "batch_result"]


@dataclass
class BatchResult:
    """Per-replicate results of one batch (row ``k`` is replicate ``replicates[k]``).

    ``grid_steps`` are the recorded steps ``0, every, ...`` up to the largest step any
    replicate reached; ``grid[name]`` is ``(R, len(grid_steps))`` (NaN past a replicate's
    end, and at a diverged step); ``runs[k]`` the replicate's full records; ``tables``
    (``keep_timeline=True``) its event table, for :meth:`trace`.
    """

    replicates: list[int]
    metric_names: list[str]
    grid_steps: np.ndarray
    grid: dict[str, np.ndarray]
    steps_done: np.ndarray
    diverged_step: np.ndarray  # -1: did not diverge
    final_w: np.ndarray
    sim_time: np.ndarray
    client_updates: np.ndarray
    runs: list[Replayed]
    tables: list[EventTable] | None = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def diverged(self) -> np.ndarray:
        return self.diverged_step >= 0

    def trace(self, k: int) -> Trace:
        """Row ``k`` as the engine's Trace (needs ``keep_timeline=True``)."""
        require(self.tables is not None, "keep_timeline", False,
                "must be True to rebuild traces")
        r = self.runs[k]
        return self.tables[k].trace(metric_steps=r.metric_steps, metrics=r.metrics,
                                    final_w=r.final_w, diverged_step=r.diverged_step,
                                    info=r.info)


def batch_result(replicates: list[int], names: list[str], every: int, runs: list[Replayed],
                 sim_time: Sequence[float], client_updates: Sequence[np.ndarray],
                 tables: list[EventTable] | None, info: dict[str, Any]) -> BatchResult:
    """The arrays of :class:`BatchResult` from the replicates' results, their simulated
    times and upload counts as the runs ended (truncated at a divergence) and, when kept,
    their tables."""
    R = len(runs)
    top = max((r.steps_done for r in runs), default=0)
    grid_steps = np.arange(top // every + 1, dtype=np.int64) * every
    grid = {m: np.full((R, grid_steps.size), np.nan) for m in names}
    for k, r in enumerate(runs):
        on = (r.metric_steps % every == 0)
        if r.diverged_step is not None:
            on &= r.metric_steps < r.diverged_step
        cols = r.metric_steps[on] // every
        for m in names:
            grid[m][k, cols] = r.metrics[m][on]
    return BatchResult(
        replicates=list(replicates), metric_names=list(names), grid_steps=grid_steps, grid=grid,
        steps_done=np.array([r.steps_done for r in runs], dtype=np.int64),
        diverged_step=np.array([-1 if r.diverged_step is None else r.diverged_step
                                for r in runs], dtype=np.int64),
        final_w=np.array([r.final_w for r in runs]),
        sim_time=np.array(sim_time, dtype=np.float64),
        client_updates=np.array(client_updates, dtype=np.int64).reshape(R, -1), runs=runs,
        tables=list(tables) if tables is not None else None, info=info)
