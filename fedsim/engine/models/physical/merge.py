"""A vectorised FedAsync timeline: cumulative sums of each client's renewal stream + a merge.

In the asynchronous physical model every client runs its own cycle *read -> download ->
compute -> upload -> think* with no shared resource, so the timeline of a run is the merge
of ``n`` independent renewal streams.  This module builds it with NumPy (no SimPy, no
model values), chunk by chunk so that memory stays bounded, and reproduces the engine's
event sequence bit for bit: upload times, clients, the server step read (``omega``) and
the read time of every uploaded round, and the think-time busy-fraction events.

Contract with the engine (``fedsim.engine.run``, FedAsync physical, docs/INTERNALS.md 3)
----------------------------------------------------------------------------------------
*Streams.*  Each client's delays are drawn in the engine's blocks by
:mod:`fedsim.rng.delays` (its docstring states the block order).

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

The chunks' rows (:class:`~fedsim.engine.models.physical.uploads.TimelineChunk`) and their grouping
into server steps (:func:`~fedsim.engine.models.physical.uploads.uploads_table`) are in
:mod:`fedsim.engine.models.physical.uploads`.
"""

from __future__ import annotations

import math

import numpy as np

from fedsim.config import Scenario
from fedsim.config.runtime import DELAY_KINDS
from fedsim.engine.models.physical.uploads import TimelineChunk
from fedsim.errors import check_sim_time
from fedsim.rng.delays import BLOCK as ENGINE_BLOCK
from fedsim.rng.delays import ClientDelayStream, DelayPlan
from fedsim.rng.seeding import client_bitgens

__all__ = ["ClientDelayStream", "DelayPlan", "FedAsyncTimeline", "ENGINE_BLOCK",
           "timeline_arrays"]

EV_READ, EV_UPLOAD, EV_THINK = 0, 1, 2


class FedAsyncTimeline:
    """The event timeline of one replicate of a FedAsync physical scenario, in chunks.

    ``take(k)`` returns the next ``k`` server steps (fewer at the end of the time horizon)
    as a :class:`TimelineChunk`.  All clients are handled at once: their pending events sit
    in padded ``(n, cap)`` arrays, a generation draws ``blocks`` delay blocks for a set of
    clients (one ``np.cumsum`` over their ``(m, rounds (q + 3))`` sequences: the additions
    of the per-client cumsum, row by row) and a batch emits every pending event before a
    front at most ``min_i t_gen[i]`` (no client can still produce an earlier one); the
    front moves by about the time of the uploads asked for (at least a quarter generation),
    so the merged but not yet taken uploads stay about one chunk.
    Memory: a couple of generations per client plus the current chunk.

    ``bitgens``: the clients' ``delays`` bit generators (default: built here, bitwise
    ``fedsim.rng.Streams(seed, replicate).client(i, "delays")``).
    """

    def __init__(self, scenario: Scenario, replicate: int, *, blocks: int = 4,
                 bitgens: list | None = None, plan: DelayPlan | None = None) -> None:
        dc = scenario.delays
        self.n = n = scenario.problem.n
        self.plan = plan = DelayPlan(scenario) if plan is None else plan
        self.q = q = plan.q
        if bitgens is None:
            bitgens = client_bitgens(scenario.seed, [replicate], n, "delays")[0]
        gen = np.random.Generator
        self.gens = [gen(bg) for bg in bitgens]
        self.streams = None if plan.vector else [
            ClientDelayStream(dict(zip(DELAY_KINDS, plan.models[i], strict=True)), self.gens[i], q)
            for i in range(n)]
        self.blocks = int(blocks)
        self.rounds = self.blocks * plan.B
        self.arrival = dc.read_at == "arrival"
        self.H = float(scenario.horizon.time)
        # event slots of a round: [read (arrival)], upload, [think end (unless every
        # client's think is the constant 0)]
        self.think_slot = plan.thinks()
        self.e = 1 + int(self.arrival) + int(self.think_slot)
        # per client: the time of its last generated event (where the next round begins)
        self.t_gen = np.zeros(n)
        # pending (generated, not yet emitted) events: row i holds client i's first cnt[i]
        self.cap = 0
        self.P_time = np.empty((n, 0))
        self.P_kind = np.empty((n, 0), dtype=np.int8)
        self.P_flag = np.empty((n, 0), dtype=bool)
        self.cnt = np.zeros(n, dtype=np.int64)
        self.front = 0.0
        self.delta = -1.0
        # per client: the last emitted event's global rank, uploads count, time
        self.last_rank = np.arange(n, dtype=np.int64) - n  # roots: -n..-1, client order
        self.last_ucount = np.zeros(n, dtype=np.int64)
        self.last_time = np.zeros(n)
        self.rank_base = 0
        self.steps = 0
        self.done = False
        self._up: list[tuple[np.ndarray, ...]] = []
        self.rounds_done = np.zeros(n, dtype=np.int64)
        self._busy: list[tuple[np.ndarray, ...]] = []
        self._nbuf = 0
        kinds = ([EV_READ] if self.arrival else []) + [EV_UPLOAD] + (
            [EV_THINK] if self.think_slot else [])
        self._kinds = np.array(kinds, dtype=np.int8)

    # -- generation -----------------------------------------------------------------
    def _generate(self, idx: np.ndarray) -> None:
        """Append ``blocks`` delay blocks of the clients ``idx`` to their pending events."""
        m, rounds, w, e = idx.size, self.rounds, self.q + 3, self.e
        if self.streams is None:
            seq = self.plan.draw(self.gens, idx, self.blocks)
        else:
            seq = np.empty((m, rounds, w))
            for r, i in enumerate(idx.tolist()):
                self.streams[i].draw(self.blocks, out=seq[r])
        flat = seq.reshape(m, rounds * w)
        th = seq[:, :, w - 1].copy()
        flat[:, 0] = self.t_gen[idx] + flat[:, 0]
        cum = np.cumsum(flat, axis=1).reshape(m, rounds, w)
        self.t_gen[idx] = cum[:, -1, -1]
        ev_t = np.empty((m, rounds, e))
        flag = np.zeros((m, rounds, e), dtype=bool)
        valid = np.ones((m, rounds, e), dtype=bool)
        su = int(self.arrival)  # the upload slot
        if self.arrival:
            ev_t[:, :, 0] = cum[:, :, 0]
        ev_t[:, :, su] = cum[:, :, w - 2]
        if self.think_slot:
            thinks = th != 0.0
            ev_t[:, :, su + 1] = cum[:, :, w - 1]
            flag[:, :, su] = thinks
            valid[:, :, su + 1] = thinks
        ev_t = ev_t.reshape(m, rounds * e)
        flag = flag.reshape(m, rounds * e)
        valid = valid.reshape(m, rounds * e)
        ev_k = np.broadcast_to(np.tile(self._kinds, rounds), ev_t.shape)
        nv = valid.sum(axis=1)
        c0 = self.cnt[idx]
        need = int((c0 + nv).max())
        if need > self.cap:
            cap = max(need, self.cap + self.rounds * self.e // 2)
            self.P_time = _grow(self.P_time, cap)
            if self.e > 1:  # one slot: every event is an upload that starts no think
                self.P_kind = _grow(self.P_kind, cap)
                self.P_flag = _grow(self.P_flag, cap)
            self.cap = cap
        pos = c0[:, None] + np.cumsum(valid, axis=1) - 1
        rows = np.broadcast_to(idx[:, None], pos.shape)
        if bool(valid.all()):
            self.P_time[rows, pos] = ev_t
            if self.e > 1:
                self.P_kind[rows, pos] = ev_k
                self.P_flag[rows, pos] = flag
        else:
            rv, pv = rows[valid], pos[valid]
            self.P_time[rv, pv] = ev_t[valid]
            self.P_kind[rv, pv] = ev_k[valid]
            self.P_flag[rv, pv] = flag[valid]
        self.cnt[idx] = c0 + nv

    # -- one batch of merged events ---------------------------------------------------
    def _batch(self, want: int = 0) -> None:
        """Merge the events of the next ~``max(want, n rounds / 4)`` uploads' worth of time
        (a batch costs a few passes over the ``(n, cap)`` pending arrays: not less)."""
        n = self.n
        if self.delta < 0.0:  # uploads per unit time, from the first generation
            self._generate(np.arange(n))
            mean = float(self.t_gen.mean())
            self.delta = n * self.rounds / mean if mean > 0.0 and math.isfinite(mean) else 1.0
        target = self.front + max(want, n * self.rounds // 4, 256) / self.delta
        while True:
            while True:
                low = np.flatnonzero(self.t_gen < target)
                if not low.size:
                    break
                self._generate(low)
            front = min(float(self.t_gen.min()), target)
            final = math.isfinite(self.H) and self.H <= front
            lim = self.H if final else front
            cols = np.arange(self.cap)
            live = cols[None, :] < self.cnt[:, None]
            mask = (self.P_time < lim) & live
            if final or bool(mask.any()):
                break
            # nothing before ``target``: move it just past the next event, so that times
            # too large for ``target``'s increments to move it (delays near 1e307) still
            # advance; a next event at inf (the time overflowed) ends the run with the reason
            nxt = min(float(self.t_gen.min()),
                      float(self.P_time[live].min()) if bool(live.any()) else math.inf)
            check_sim_time(nxt, self.steps)
            target = max(target, float(np.nextafter(nxt, math.inf)))
        self.front = front
        kcount = mask.sum(axis=1)
        if final:
            self.done = True
        m = int(kcount.sum())
        if m == 0:
            return
        cl, _ = np.nonzero(mask)
        t = self.P_time[mask]
        if self.e > 1:
            kd = self.P_kind[mask]
            fl = self.P_flag[mask]
        else:
            kd = np.full(m, EV_UPLOAD, dtype=np.int8)
            fl = np.zeros(m, dtype=bool)
        offs = np.cumsum(kcount) - kcount
        # each upload's round number within its client (events are client-major here)
        up0 = kd == EV_UPLOAD
        cu = np.cumsum(up0)
        has = kcount > 0
        base_c = np.zeros(n, dtype=np.int64)
        base_c[has] = cu[offs[has]] - up0[offs[has]]
        rnd = self.rounds_done[cl] + (cu - base_c[cl]) - 1
        self.rounds_done += np.bincount(cl[up0], minlength=n)
        pv = np.arange(-1, m - 1, dtype=np.int64)
        pv[offs[kcount > 0]] = -1  # parent emitted earlier: the client's carried rank
        # drop the emitted prefix of every row
        sh = np.minimum(cols[None, :] + kcount[:, None], self.cap - 1)
        self.P_time = np.take_along_axis(self.P_time, sh, axis=1)
        if self.e > 1:
            self.P_kind = np.take_along_axis(self.P_kind, sh, axis=1)
            self.P_flag = np.take_along_axis(self.P_flag, sh, axis=1)
        self.cnt -= kcount
        base = self.rank_base
        carried = self.last_rank[cl]
        order = np.argsort(t)  # without ties (the rule for continuous delays) it is exact
        ts = t[order]
        if ts.size > 1 and bool(np.any(ts[1:] == ts[:-1])):
            order = np.argsort(t, kind="stable")
            order = self._resolve_ties(t, pv, carried, base, order)
        pos = np.empty(m, dtype=np.int64)
        pos[order] = np.arange(m)
        # in processing order
        t, cl, kd, fl, pv, rnd = (t[order], cl[order], kd[order], fl[order], pv[order],
                                  rnd[order])
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
        self.steps = int(ucount[-1])
        self._up.append((t[up], cl[up], p_ucount[up], p_time[up], rnd[up]))
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
            self._batch(k - self._nbuf)
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
                             bz[0][:cut], bz[1][:cut], bz[2][:cut], bz[3][:cut],
                             up[4][:take])


_UP_EMPTY = (np.empty(0), np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0),
             np.empty(0, np.int64))
_BUSY_EMPTY = (np.empty(0), np.empty(0, np.int64), np.empty(0, np.int64),
               np.empty(0, np.int64))


def _grow(a: np.ndarray, cap: int) -> np.ndarray:
    out = np.zeros((a.shape[0], cap), dtype=a.dtype)
    out[:, :a.shape[1]] = a
    return out


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
                                                 "b_delta", "b_gate", "b_before", "round")))
