"""``run_batch(..., output="records")``'s result as arrays over replicates: ``BatchResult``.

:func:`batch_result` gathers the per-replicate records of the replay
(:class:`~fedsim.engine.replay.group.Replayed`, :func:`fedsim.engine.replay.driver.
replay_records`) into arrays, with no Trace built (a Monte Carlo or a search reads a few
numbers per replicate).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fedsim.engine.replay.group import Replayed

__all__ = ["BatchResult", "batch_result"]


@dataclass
class BatchResult:
    """Per-replicate results of one batch (row ``k`` is replicate ``replicates[k]``).

    ``grid_steps`` are the recorded steps ``0, every, ...`` up to the largest step any
    replicate reached; ``grid[name]`` is ``(R, len(grid_steps))`` (NaN past a replicate's
    end, and at a diverged step); ``runs[k]`` the replicate's full records (its ``info``
    the rules' counters and the model's extras).
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
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def diverged(self) -> np.ndarray:
        return self.diverged_step >= 0


def batch_result(replicates: list[int], names: list[str], every: int, runs: list[Replayed],
                 sim_time: Sequence[float], client_updates: Sequence[np.ndarray],
                 info: dict[str, Any]) -> BatchResult:
    """The arrays of :class:`BatchResult` from the replicates' results and their simulated
    times and upload counts as the runs ended (truncated at a divergence)."""
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
        info=info)
