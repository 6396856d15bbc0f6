"""An upload timeline's rows, and their grouping into the replay's event table.

Both upload timelines of the asynchronous physical model -- the compiled event loop
(:mod:`fedsim.engine.models.physical.event_loop`) and the vectorised merge
(:mod:`fedsim.engine.models.physical.merge`) -- hand out consecutive uploads as
:class:`TimelineChunk` s; :func:`uploads_table` groups a run's uploads into server steps
(``K`` uploads a step: FedAsync ``K = 1``, FedBuff/AS-FedAvg with a count trigger) and
writes the :class:`~fedsim.engine.replay.table.EventTable` the replay takes.  No model
value is involved.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from fedsim.engine.replay.table import EventTable, busy_curve
from fedsim.trace import KINDS

__all__ = ["TimelineChunk", "uploads_table"]


@dataclass
class TimelineChunk:
    """Consecutive server steps ``step0 + 1 .. step0 + len(time)`` (uploads) and the
    busy-fraction events processed among them.

    Uploads: ``time``, ``client``, ``omega`` (server steps done at the read), ``t_read``.
    Busy events (think-time starts and ends, in processing order): ``b_time``,
    ``b_delta`` (+1: a client starts thinking at an upload; -1: it stops), ``b_gate``
    (start: the step of its upload; end: the step of the upload that started it) and
    ``b_before`` (end: the uploads processed before it; start: its own step).
    """

    step0: int
    time: np.ndarray
    client: np.ndarray
    omega: np.ndarray
    t_read: np.ndarray
    b_time: np.ndarray
    b_delta: np.ndarray
    b_gate: np.ndarray
    b_before: np.ndarray
    round: np.ndarray  # per upload: the client's round number (its uploads before it)


def uploads_table(n: int, Q: int, chunks: list[TimelineChunk], *, uploads: int,
                  stop_by_time: bool, horizon_time: float, every: int,
                  staleness_bound: float, K: int = 1, per_upload: bool = True) -> EventTable:
    """The :class:`~fedsim.engine.replay.table.EventTable` of the asynchronous physical
    model with a count trigger from its upload timeline (the chunks' first ``uploads``
    uploads): server step ``s`` consumes uploads ``(s-1) K + 1 .. s K`` in arrival order
    (``K = 1``: FedAsync), at the time of the last; the kind ``"upload"`` (``per_upload``)
    else ``"aggregate"``; the client the uploader when ``K = 1`` else -1; the staleness of
    an upload is the server steps done at its arrival minus those done at its read
    (``omega`` counts uploads: ``omega // K`` steps), a step's the largest of its uploads,
    in steps and in time (``time - t_read``).  Uploads after the last step are counted in
    ``client_updates`` (a time horizon).  The busy curve by ``Recorder.busy``'s rule over
    the events the engine processed before it stopped (module docstring, *Stop*); the
    ``b_*`` columns in server steps (``// K``)."""
    U = int(uploads)
    K = int(K)
    T = U // K

    def col(name: str, dt: Any) -> np.ndarray:
        parts = [getattr(c, name) for c in chunks]
        if len(parts) == 1:  # no copy
            return parts[0].astype(dt, copy=False)
        return np.concatenate(parts).astype(dt, copy=False) if parts else np.empty(0, dt)

    time, client = col("time", np.float64)[:U], col("client", np.int64)[:U]
    omega, t_read = col("omega", np.int64)[:U], col("t_read", np.float64)[:U]
    bt, bd = col("b_time", np.float64), col("b_delta", np.int64)
    bg, bb = col("b_gate", np.int64), col("b_before", np.int64)
    def per_k(a: np.ndarray) -> np.ndarray:  # uploads -> server steps (K = 1: the same)
        return a if K == 1 else a // K

    before = per_k(np.arange(U, dtype=np.int64))
    stale = (before - per_k(omega)).clip(0)
    P = T * K
    if K == 1:
        st_time = time[:T] - t_read[:T]
        st_steps, step_time, who = stale[:T], time[:T], client[:T]
    else:
        step_time = time[K - 1:P:K]
        st_time = (step_time[:, None] - t_read[:P].reshape(T, K)).max(axis=1)
        st_steps = stale[:P].reshape(T, K).max(axis=1)
        who = np.full(T, -1, np.int64)
    sim_time = float(horizon_time) if stop_by_time else (float(time[U - 1]) if U else 0.0)
    ok = (bg <= U) if stop_by_time else (
        (bg < U) & ((bd > 0) | (bb < U) | (bt == sim_time)))
    ct, cb = busy_curve(n, bt[ok], bd[ok])
    ms = np.arange(0, T + 1, every, dtype=np.int64)
    if T % every:
        ms = np.append(ms, T)
    kind = KINDS.index("upload" if per_upload else "aggregate")
    return EventTable(
        time=step_time, kind=np.full(T, kind, np.int8), client=who,
        staleness_steps=st_steps, staleness_time=st_time, buffer_fill=np.full(T, K, np.int32),
        ptr=np.arange(0, P + 1, K, dtype=np.int64), c_client=client[:P],
        c_read=per_k(omega[:P]), c_steps=np.full(P, Q, np.int32), c_stale=stale[:P],
        sim_time=sim_time, steps_done=T, client_updates=np.bincount(client, minlength=n),
        concurrency_time=ct, concurrency_busy=cb, metric_steps=ms,
        staleness_bound=staleness_bound, u_client=client, u_before=before, b_time=bt,
        b_delta=bd, b_gate=per_k(bg), b_before=per_k(bb))
