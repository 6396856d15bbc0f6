"""A vectorised FedAsync timeline: cumulative sums of each client's renewal stream + a merge.

In the asynchronous physical model every client runs its own cycle *read -> download ->
compute -> upload -> think* with no shared resource, so the timeline of a run is the merge
of ``n`` independent renewal streams.  This module builds it with NumPy (no SimPy, no
model values), chunk by chunk so that memory stays bounded, and reproduces the engine's
event sequence bit for bit: upload times, clients, the server step read (``omega``) and
the read time of every uploaded round, and the think-time busy-fraction events.

Contract with the engine (``fedsim.engine.run``, FedAsync physical, docs/INTERNALS.md 3)
----------------------------------------------------------------------------------------
*Streams.*  Client ``i``'s delays come only from ``fedsim.rng.Streams(seed, r).client(i,
"delays")``.  They are drawn in blocks of ``B = max(4, 16 // q)`` rounds (``q = Q`` when
``delays.compute_per = "step"``, else 1), each block drawing, in this order,
``download.sample(rng, size=B)``, ``compute.sample(rng, size=B * q)``,
``upload.sample(rng, size=B)``, ``think.sample(rng, size=B)``; a ``Constant`` model draws
nothing.  Round ``j`` of a block uses entry ``j`` of each column (compute: entries
``j q .. j q + q - 1``).  When at most one of the four models is random and it is one of
``Exponential``, ``Uniform``, ``LogNormal``, ``Normal`` (one NumPy draw per number), several
blocks are drawn in one call: the numbers are the same.

*Times.*  A round that begins at ``t`` uploads at ``((t + dl) + c_1 + ... + c_q) + ul`` (the
additions in this order), the download ends (``read_at = "arrival"``: the read) at
``t + dl``, and the next round begins at ``t_up + th`` (a think-end event when ``th != 0``,
else at the upload itself).  Per client this is one sequential ``np.cumsum`` over the
interleaved sequence ``dl, c_1..c_q, ul, th, dl, ...`` from ``t0 = 0``.

*Order.*  Every event pushes at most one event, the next one of the same client.  SimPy
processes events by ``(time, eid)``, and the eids follow the order in which the pushing
events were processed, so the processing order is the order by ``(time, rank of the parent
event)``, the roots (the clients' first rounds, begun at ``t0``) in client order.  Without
ties (probability 1 for continuous delays) a stable sort by time is exact; ties are
resolved by iterating ``rank <- order of (time, rank(parent))`` to its (unique) fixed point.

*Staleness.*  ``omega`` of an uploaded round is the number of uploads processed up to its
read point (``request``: the event that began the round, i.e. the previous upload or
think-end of the same client, or 0 for the first round; ``arrival``: the download end);
``t_read`` is that event's time.  ``staleness_steps = t - 1 - omega``,
``staleness_time = time - t_read``.

*Stop.*  Uploads at ``time >= horizon.time`` are never processed; the step horizon and
divergence are applied by the consumer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fedsim.config import Scenario
from fedsim.delays import Constant, Exponential, LogNormal, Normal, Uniform
from fedsim.rng import Streams

__all__ = ["ClientDelayStream", "FedAsyncTimeline", "TimelineChunk", "ENGINE_BLOCK",
           "timeline_arrays"]

ENGINE_BLOCK = 16
_CONCAT_SAFE = (Exponential, Uniform, LogNormal, Normal)
_KINDS = ("download", "compute", "upload", "think")
EV_READ, EV_UPLOAD, EV_THINK = 0, 1, 2


class ClientDelayStream:
    """One client's delays in the engine's block order (module docstring, *Streams*)."""

    __slots__ = ("rng", "models", "q", "B", "fast")

    def __init__(self, models: dict, rng: np.random.Generator, q: int) -> None:
        self.rng = rng
        self.models = [models[k] for k in _KINDS]
        self.q = int(q)
        self.B = max(4, ENGINE_BLOCK // self.q)
        rnd = [m for m in self.models if not isinstance(m, Constant)]
        self.fast = len(rnd) == 0 or (len(rnd) == 1 and isinstance(rnd[0], _CONCAT_SAFE))

    def draw(self, blocks: int) -> np.ndarray:
        """``blocks`` blocks as an array ``(blocks * B, q + 3)``: dl, c_1..c_q, ul, th."""
        B, q = self.B, self.q
        rounds = blocks * B
        out = np.empty((rounds, q + 3))
        counts = (1, q, 1, 1)
        cols = ((0, 1), (1, 1 + q), (1 + q, 2 + q), (2 + q, 3 + q))
        if self.fast:
            for m, (a, b), c in zip(self.models, cols, counts, strict=True):
                if isinstance(m, Constant):
                    out[:, a:b] = float(m.value)
                else:
                    out[:, a:b] = m.sample(self.rng, size=rounds * c).reshape(rounds, c)
            return out
        for k in range(blocks):
            blk = out[k * B:(k + 1) * B]
            for m, (a, b), c in zip(self.models, cols, counts, strict=True):
                if isinstance(m, Constant):
                    blk[:, a:b] = float(m.value)
                else:
                    blk[:, a:b] = m.sample(self.rng, size=B * c).reshape(B, c)
        return out


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


class FedAsyncTimeline:
    """The event timeline of one replicate of a FedAsync physical scenario, in chunks.

    ``take(k)`` returns the next ``k`` server steps (fewer at the end of the time horizon)
    as a :class:`TimelineChunk`.  Memory: the pending events of each client (a few delay
    blocks) plus the current chunk.
    """

    def __init__(self, scenario: Scenario, replicate: int, *, blocks: int = 1) -> None:
        a, dc = scenario.algorithm, scenario.delays
        self.n = n = scenario.problem.n
        q = int(a.get("Q")) if dc.compute_per == "step" else 1
        self.q = q
        st = Streams(scenario.seed, replicate)
        self.streams = [ClientDelayStream(dc.for_client(i), st.client(i, "delays"), q)
                        for i in range(n)]
        self.blocks = int(blocks)
        self.arrival = dc.read_at == "arrival"
        self.H = float(scenario.horizon.time)
        # per client: the time of its last generated event (where the next round begins)
        self.t_gen = np.zeros(n)
        # pending (generated, not yet emitted) events per client: time, kind, think-flag
        self.p_time = [np.empty(0) for _ in range(n)]
        self.p_kind = [np.empty(0, dtype=np.int8) for _ in range(n)]
        self.p_flag = [np.empty(0, dtype=bool) for _ in range(n)]
        # per client: the last emitted event's global rank, uploads count, time
        self.last_rank = np.arange(n, dtype=np.int64) - n  # roots: -n..-1, client order
        self.last_ucount = np.zeros(n, dtype=np.int64)
        self.last_time = np.zeros(n)
        self.rank_base = 0
        self.steps = 0
        self.done = False
        self._up: list[tuple[np.ndarray, ...]] = []
        self._busy: list[tuple[np.ndarray, ...]] = []
        self._nbuf = 0

    # -- generation -----------------------------------------------------------------
    def _generate(self, i: int) -> None:
        """Append ``blocks`` delay blocks of client ``i`` to its pending events."""
        seq = self.streams[i].draw(self.blocks)  # (rounds, q + 3)
        rounds, w = seq.shape
        seq = seq.reshape(-1)
        seq[0] = self.t_gen[i] + seq[0]
        cum = np.cumsum(seq).reshape(rounds, w)
        self.t_gen[i] = cum[-1, -1]
        th = seq.reshape(rounds, w)[:, -1]
        thinks = th != 0.0
        if self.arrival:
            ev_t = np.stack([cum[:, 0], cum[:, w - 2], cum[:, w - 1]], axis=1)
            ev_k = np.broadcast_to(np.array([EV_READ, EV_UPLOAD, EV_THINK], np.int8),
                                   (rounds, 3))
            valid = np.ones((rounds, 3), dtype=bool)
            valid[:, 2] = thinks
            flag = np.zeros((rounds, 3), dtype=bool)
            flag[:, 1] = thinks
        else:
            ev_t = cum[:, w - 2:w]
            ev_k = np.broadcast_to(np.array([EV_UPLOAD, EV_THINK], np.int8), (rounds, 2))
            valid = np.ones((rounds, 2), dtype=bool)
            valid[:, 1] = thinks
            flag = np.zeros((rounds, 2), dtype=bool)
            flag[:, 0] = thinks
        self.p_time[i] = np.concatenate((self.p_time[i], ev_t[valid]))
        self.p_kind[i] = np.concatenate((self.p_kind[i], ev_k[valid]))
        self.p_flag[i] = np.concatenate((self.p_flag[i], flag[valid]))

    # -- one batch of merged events ---------------------------------------------------
    def _batch(self) -> None:
        n = self.n
        low = [i for i in range(n) if self.p_time[i].size < 4]
        for i in low:
            self._generate(i)
        last = np.array([p[-1] for p in self.p_time])
        front = float(last.min())
        self._generate(int(np.argmin(last)))  # progress even with ties at the front
        front = min(front, self.H) if math.isfinite(self.H) else front
        times, clients, kinds, flags, prev = [], [], [], [], []
        offset = 0
        for i in range(n):
            pt = self.p_time[i]
            k = int(np.searchsorted(pt, front, side="left"))
            if self.H <= front:  # final batch: everything before the horizon
                k = int(np.searchsorted(pt, self.H, side="left"))
            if k == 0:
                continue
            times.append(pt[:k])
            clients.append(np.full(k, i, dtype=np.int64))
            kinds.append(self.p_kind[i][:k])
            flags.append(self.p_flag[i][:k])
            pv = np.arange(offset - 1, offset + k - 1, dtype=np.int64)
            pv[0] = -1  # parent emitted earlier: the client's carried rank
            prev.append(pv)
            offset += k
            self.p_time[i] = pt[k:]
            self.p_kind[i] = self.p_kind[i][k:]
            self.p_flag[i] = self.p_flag[i][k:]
        if self.H <= front:
            self.done = True
        if not times:
            return
        t = np.concatenate(times)
        cl = np.concatenate(clients)
        kd = np.concatenate(kinds)
        fl = np.concatenate(flags)
        pv = np.concatenate(prev)
        base = self.rank_base
        carried = self.last_rank[cl]
        order = np.argsort(t, kind="stable")
        ts = t[order]
        if ts.size > 1 and bool(np.any(ts[1:] == ts[:-1])):
            order = self._resolve_ties(t, pv, carried, base, order)
        m = t.size
        pos = np.empty(m, dtype=np.int64)
        pos[order] = np.arange(m)
        # in processing order
        t, cl, kd, fl, pv = t[order], cl[order], kd[order], fl[order], pv[order]
        has_parent = pv >= 0
        ppos = np.where(has_parent, pos[np.maximum(pv, 0)], -1)  # parent's new position
        up = kd == EV_UPLOAD
        ucount = self.steps + np.cumsum(up)  # uploads processed up to and including
        p_ucount = np.where(has_parent, ucount[np.maximum(ppos, 0)], self.last_ucount[cl])
        p_time = np.where(has_parent, t[np.maximum(ppos, 0)], self.last_time[cl])
        # client carries: the last event of each client in this batch
        lastpos = np.full(n, -1, dtype=np.int64)
        np.maximum.at(lastpos, cl, np.arange(m))
        sel = lastpos >= 0
        self.last_rank[sel] = base + lastpos[sel]
        self.last_ucount[sel] = ucount[lastpos[sel]]
        self.last_time[sel] = t[lastpos[sel]]
        self.rank_base = base + m
        self.steps = int(ucount[-1]) if m else self.steps
        self._up.append((t[up], cl[up], p_ucount[up], p_time[up]))
        self._nbuf += int(up.sum())
        th_end = kd == EV_THINK
        th_start = up & fl
        b = th_end | th_start
        if b.any():
            bt = t[b]
            delta = np.where(th_start[b], 1, -1).astype(np.int64)
            gate = np.where(th_start[b], ucount[b], p_ucount[b])
            before = ucount[b]  # an end is not an upload: uploads before it
            self._busy.append((bt, delta, gate, before))

    def _resolve_ties(self, t: np.ndarray, pv: np.ndarray, carried: np.ndarray, base: int,
                      order: np.ndarray) -> np.ndarray:
        """The fixed point of ``order <- argsort by (time, rank(parent))`` (docstring)."""
        m = t.size
        for _ in range(m + 2):
            pos = np.empty(m, dtype=np.int64)
            pos[order] = np.arange(m)
            prank = np.where(pv >= 0, base + pos[np.maximum(pv, 0)], carried)
            new = np.lexsort((prank, t))
            if np.array_equal(new, order):
                return order
            order = new
        raise RuntimeError("tie resolution did not converge")  # pragma: no cover

    # -- public ---------------------------------------------------------------------
    def oldest_read(self) -> int:
        """A lower bound on ``omega`` of every upload not yet taken (a replay's ring
        buffer must keep the server models from this step on)."""
        lo = int(self.last_ucount.min())
        for part in self._up:
            if part[2].size:
                lo = min(lo, int(part[2].min()))
        return lo

    def take(self, k: int) -> TimelineChunk:
        """The next ``k`` server steps (fewer when the time horizon ends the run)."""
        while self._nbuf < k and not self.done:
            self._batch()
        up = _cat(self._up, _UP_EMPTY)
        take = min(k, up[0].size)
        step0 = self.steps - self._nbuf
        rest = tuple(c[take:] for c in up)
        self._up = [rest] if rest[0].size else []
        self._nbuf = rest[0].size
        # busy events up to the last step taken (an end belongs before its upload count)
        bz = _cat(self._busy, _BUSY_EMPTY)
        keep = bz[3] <= step0 + take
        if take < k:  # the run ended: hand over every busy event
            keep[:] = True
        cut = int(np.argmin(keep)) if not keep.all() else keep.size
        self._busy = [tuple(c[cut:] for c in bz)] if cut < keep.size else []
        return TimelineChunk(step0, up[0][:take], up[1][:take], up[2][:take], up[3][:take],
                             bz[0][:cut], bz[1][:cut], bz[2][:cut], bz[3][:cut])


_UP_EMPTY = (np.empty(0), np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0))
_BUSY_EMPTY = (np.empty(0), np.empty(0, np.int64), np.empty(0, np.int64),
               np.empty(0, np.int64))


def _cat(parts: list[tuple[np.ndarray, ...]],
         empty: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
    if not parts:
        return empty
    if len(parts) == 1:
        return parts[0]
    return tuple(np.concatenate([p[j] for p in parts]) for j in range(len(empty)))


def timeline_arrays(scenario: Scenario, replicate: int, steps: int,
                    chunk: int = 4096) -> TimelineChunk:
    """The first ``steps`` server steps in one chunk (tests and small runs)."""
    tl = FedAsyncTimeline(scenario, replicate)
    parts = []
    left = steps
    while left > 0:
        c = tl.take(min(chunk, left))
        parts.append(c)
        left -= c.time.size
        if c.time.size == 0 or (tl.done and tl._nbuf == 0):
            break
    f = parts[0]
    return TimelineChunk(f.step0, *(np.concatenate([getattr(p, name) for p in parts])
                                    for name in ("time", "client", "omega", "t_read", "b_time",
                                                 "b_delta", "b_gate", "b_before")))
