"""The results of a batched FedAsync replay: ``BatchResult``.

Part of :mod:`fedsim.engine.replay.fedasync` (its docstring has the algorithm, [P]
Algorithm 1 line 4 / Algorithm 2 lines 5-7).  :class:`BatchResult` holds one batch's
per-replicate records and rebuilds the engine's :class:`fedsim.trace.Trace` of a row (the
running averages of ``fedsim.trace.Recorder.finish``, the busy-fraction curve of
``Recorder.busy``); :func:`merge_results` joins the results of groups.

Metrics (``grad_sq``, ``dist_sq``, ``f_gap``: the problem's compiled closed forms,
:func:`fedsim.problems.quadratic_view.quadratic_metrics`) are recorded at steps
``0, every, 2 every, ...`` and at the last step, as the engine does.
``BatchResult.info["seconds"]`` splits the wall time (setup, timeline, steps -- the
draws included --, bookkeeping).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fedsim.errors import require
from fedsim.trace import KINDS, Trace

__all__ = ["BatchResult", "merge_results"]

_K_UPLOAD = KINDS.index("upload")


@dataclass
class BatchResult:
    """Per-replicate results of one batch (row ``k`` is replicate ``replicates[k]``).

    ``grid_steps`` are the recorded steps ``0, every, ...`` up to the largest step any
    replicate reached; ``grid[name]`` is ``(R, len(grid_steps))`` (NaN past a replicate's
    end); ``last_step``/``last[name]`` its final off-grid record (-1 when on the grid).
    ``timeline`` (``keep_timeline=True``) holds each replicate's step columns and busy
    events; :meth:`trace` then rebuilds the engine's :class:`fedsim.trace.Trace`.
    """

    replicates: list[int]
    metric_names: list[str]
    grid_steps: np.ndarray
    grid: dict[str, np.ndarray]
    last_step: np.ndarray
    last: dict[str, np.ndarray]
    steps_done: np.ndarray
    diverged_step: np.ndarray  # -1: did not diverge
    final_w: np.ndarray
    sim_time: np.ndarray
    client_updates: np.ndarray
    max_staleness: np.ndarray
    n: int
    stop_by_time: np.ndarray
    timeline: list[dict[str, Any]] | None = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def diverged(self) -> np.ndarray:
        return self.diverged_step >= 0

    def metric_series(self, k: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """``(metric_steps, {name: values})`` of row ``k``, as the engine records them."""
        T = int(self.steps_done[k])
        keep = self.grid_steps <= T
        if self.diverged_step[k] >= 0:
            keep &= self.grid_steps < T  # the engine's diverged step is recorded last
        steps = self.grid_steps[keep]
        vals = {m: self.grid[m][k, keep] for m in self.metric_names}
        if self.last_step[k] >= 0:
            steps = np.append(steps, self.last_step[k])
            vals = {m: np.append(v, self.last[m][k]) for m, v in vals.items()}
        return steps, vals

    def trace(self, k: int, staleness_bound: float = math.nan) -> Trace:
        """Row ``k`` as the engine's Trace (needs ``keep_timeline=True``)."""
        require(self.timeline is not None, "keep_timeline", False,
                "must be True to rebuild traces")
        tl = self.timeline[k]
        T = int(self.steps_done[k])
        time = np.concatenate(([0.0], tl["time"][:T]))
        client = np.concatenate(([-1], tl["client"][:T])).astype(np.int64)
        om = tl["omega"][:T]
        sst = np.concatenate(([0], (np.arange(1, T + 1) - 1 - om).clip(0))).astype(np.int64)
        stt = np.concatenate(([0.0], tl["time"][:T] - tl["t_read"][:T]))
        kind = np.full(T + 1, _K_UPLOAD, dtype=np.int8)
        kind[0] = 0
        fill = np.ones(T + 1, dtype=np.int64)
        fill[0] = 0
        steps, vals = self.metric_series(k)
        metrics: dict[str, np.ndarray] = {}
        for name in self.metric_names:
            metrics[name] = np.asarray(vals[name], dtype=np.float64)
        for name in self.metric_names:  # fedsim.trace.Recorder.finish
            v = metrics[name]
            csum = np.concatenate(([0.0], np.cumsum(v)[:-1]))
            cnt = np.arange(v.size, dtype=np.float64)
            with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
                metrics[f"avg_{name}"] = np.where(cnt > 0, csum / np.maximum(cnt, 1), np.nan)
        ct, cb = self._concurrency(k)
        sim_time = float(self.sim_time[k])
        if ct.size and sim_time > ct[0]:
            dur = np.diff(np.append(ct, sim_time))
            conc_mean = float(np.sum(dur * cb) / (sim_time - ct[0]))
        else:
            conc_mean = float(cb[-1]) if cb.size else math.nan
        ds = int(self.diverged_step[k])
        return Trace(time=time, kind_code=kind, client=client, staleness_steps=sst,
                     staleness_time=stt, buffer_fill=fill, metric_steps=steps.astype(np.int64),
                     metrics=metrics, client_updates=self.client_updates[k].copy(),
                     concurrency_time=ct, concurrency_busy=cb, concurrency_mean=conc_mean,
                     diverged=ds >= 0, diverged_step=ds if ds >= 0 else None,
                     final_w=self.final_w[k].copy(), steps_done=T, sim_time=sim_time,
                     staleness_bound=float(staleness_bound), info={})

    def _concurrency(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The busy-fraction step curve (``Recorder.busy``'s rule: a change at the time of
        the previous one replaces it)."""
        tl = self.timeline[k]
        bt, bd, bg, bb = tl["b_time"], tl["b_delta"], tl["b_gate"], tl["b_before"]
        T = int(self.steps_done[k])
        if self.stop_by_time[k]:
            ok = bg <= T
        else:
            t_stop = float(self.sim_time[k])
            ok = (bg < T) & ((bd > 0) | (bb < T) | (bt == t_stop))
        bt, bd = bt[ok], bd[ok]
        idle = np.cumsum(bd)
        busy = (self.n - idle) / self.n
        t = np.concatenate(([0.0], bt))
        b = np.concatenate(([1.0], busy))
        last = np.append(t[1:] != t[:-1], True)
        return t[last], b[last]


def merge_results(parts: list[BatchResult]) -> BatchResult:
    """One BatchResult from groups (the grid padded with NaN to the longest)."""
    p0 = max(parts, key=lambda p: p.grid_steps.size)
    G = p0.grid_steps.size
    grid = {}
    for m in p0.metric_names:
        cols = []
        for p in parts:
            g = p.grid[m]
            if g.shape[1] < G:
                g = np.concatenate((g, np.full((g.shape[0], G - g.shape[1]), np.nan)), axis=1)
            cols.append(g)
        grid[m] = np.concatenate(cols)

    def cat(name: str) -> np.ndarray:
        return np.concatenate([getattr(p, name) for p in parts])

    tl = None
    if parts[0].timeline is not None:
        tl = [t for p in parts for t in p.timeline]
    return BatchResult(
        replicates=[r for p in parts for r in p.replicates], metric_names=p0.metric_names,
        grid_steps=p0.grid_steps, grid=grid, last_step=cat("last_step"),
        last={m: np.concatenate([p.last[m] for p in parts]) for m in p0.metric_names},
        steps_done=cat("steps_done"), diverged_step=cat("diverged_step"),
        final_w=cat("final_w"), sim_time=cat("sim_time"), client_updates=cat("client_updates"),
        max_staleness=cat("max_staleness"), n=p0.n, stop_by_time=cat("stop_by_time"),
        timeline=tl, info={"seconds": {k: sum(p.info["seconds"][k] for p in parts)
                                        for k in parts[0].info["seconds"]},
                           "chunk": parts[0].info["chunk"], "group": parts[0].info["group"]})
