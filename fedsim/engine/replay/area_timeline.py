"""The event timelines of AREA's Appendix A iterate model (no SimPy, no model values).

Per replicate, client i's event times are the running sums ``t = t + c`` of the
first compute draw of each of its rounds, drawn from ``Streams(seed, r).client(i,
"delays")`` in the engine's blocks (:class:`~fedsim.engine.replay.timeline.ClientDelayStream`);
the timer's are the running sums of ``Streams(seed, r).server("timer")``'s
``exponential(1/rate)`` draws (or of the period).  The events are merged by time, clients
before the timer and in client order on equal times; a replicate whose first K+1 merged
times hold a tie (probability 0 under continuous delays, but SimPy's order then depends on
event ids) is run by ``fedsim.engine.run`` instead, so every returned timeline is the
engine's bit for bit.  Staleness of a client event: steps and time since the client's
previous event (the model it computed from was read then); buffer fill: client events
since the last aggregation.

:func:`area_timeline` builds one replicate's (either delay-draw path); :func:`area_timelines`
those of a batch at once (one draw per client stream, one cumulative sum and one sort per
batch); they agree bit for bit (tested), and both equal the engine's event sequence.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fedsim.config import Scenario
from fedsim.engine.replay.seeding import client_bitgens, server_bitgens
from fedsim.engine.replay.timeline import ClientDelayStream, DelayPlan
from fedsim.rng import Streams
from fedsim.trace import KINDS

__all__ = ["AreaTimeline", "area_timeline", "area_timelines", "K_CLIENT", "K_SERVER"]

K_CLIENT = KINDS.index("client")
K_SERVER = KINDS.index("server")


class AreaTimeline:
    """The first ``K`` events of one replicate: ``time``, ``kind`` (``K_CLIENT`` /
    ``K_SERVER``), ``client`` (-1 for the server), ``stale_steps``, ``stale_time``,
    ``fill``; ``tie``: equal times among the first K+1 events (the replay then defers to
    the engine)."""

    __slots__ = ("time", "kind", "client", "stale_steps", "stale_time", "fill", "tie")


def area_timeline(scenario: Scenario, replicate: int, bitgens: Sequence | None = None,
                  plan: DelayPlan | None = None) -> AreaTimeline:
    """The event timeline of ``replicate`` (module docstring, *Schedule*); ``plan``: the
    scenario's :class:`DelayPlan` (shared by its replicates)."""
    n = scenario.problem.n
    K = int(scenario.horizon.steps)
    dc, tr = scenario.delays, scenario.trigger
    M = int(scenario.algorithm.get("M"))
    q = M if dc.compute_per == "step" else 1
    if bitgens is None:
        bitgens = client_bitgens(scenario.seed, [replicate], n, "delays")[0]
    gens = [np.random.Generator(bg) for bg in bitgens]
    if plan is None or not plan.vector or plan.q != q:
        streams = [ClientDelayStream(dc.for_client(i), gens[i], q) for i in range(n)]
        Bk = streams[0].B

        def more(idx: np.ndarray, blocks: int) -> np.ndarray:
            return np.stack([streams[i].draw(blocks)[:, 1] for i in idx.tolist()])
    else:
        Bk = plan.B

        def more(idx: np.ndarray, blocks: int) -> np.ndarray:
            return plan.draw(gens, idx, blocks)[:, :, 1]
    timer = Streams(scenario.seed, replicate).server("timer")
    every_c = np.arange(n)
    L = -(-(int(1.5 * K / (n + 1)) + 8) // Bk)  # blocks per client, grown until complete
    Dc = more(every_c, L)
    Ls = int(1.5 * K / (n + 1)) + 8
    sdraw = (timer.exponential(1.0 / tr.rate, size=Ls) if tr.kind == "poisson"
             else np.full(Ls, float(tr.period)))
    while True:
        Tc = np.cumsum(Dc, axis=1)  # sequential along each row: the engine's t = t + c
        Ts = np.cumsum(sdraw)
        allt = np.concatenate((Tc.ravel(), Ts))
        if allt.size > K:
            order = np.argsort(allt, kind="stable")[:K + 1]
            tK = allt[order[K]]
            grow_c = bool(np.any(Tc[:, -1] <= tK))
            grow_s = bool(Ts[-1] <= tK)
        else:
            grow_c = grow_s = True
        if not (grow_c or grow_s):
            break
        if grow_c:
            Dc = np.concatenate((Dc, more(every_c, -(-Dc.shape[1] // Bk))), axis=1)
        if grow_s:
            m = sdraw.size
            sdraw = np.concatenate((sdraw, timer.exponential(1.0 / tr.rate, size=m)
                                    if tr.kind == "poisson" else np.full(m, float(tr.period))))
    Lc = Dc.shape[1]
    src = np.concatenate((np.repeat(np.arange(n, dtype=np.int64), Lc),
                          np.full(Ts.size, n, dtype=np.int64)))
    t = allt[order[:K]]
    s = src[order[:K]]
    out = AreaTimeline()
    out.tie = bool(np.any(np.diff(allt[order]) == 0.0))
    out.time = t
    isc = s < n
    out.kind = np.where(isc, K_CLIENT, K_SERVER).astype(np.int8)
    out.client = np.where(isc, s, -1).astype(np.int64)
    # per client, in step order: steps and time since its previous event (k_read = that
    # event's step - 1; the first event reads step 0 at time 0)
    steps = np.arange(1, K + 1, dtype=np.int64)
    o = np.argsort(s, kind="stable")
    so, sto, to = s[o], steps[o], t[o]
    first = np.concatenate(([True], so[1:] != so[:-1]))
    prev_step = np.where(first, 1, np.concatenate(([1], sto[:-1])))
    prev_t = np.where(first, 0.0, np.concatenate(([0.0], to[:-1])))
    st_steps = np.zeros(K, dtype=np.int64)
    st_time = np.zeros(K)
    st_steps[o] = sto - prev_step
    st_time[o] = to - prev_t
    st_steps[~isc] = 0
    st_time[~isc] = 0.0
    out.stale_steps, out.stale_time = st_steps, st_time
    # buffer fill: client events since the last aggregation, counting this one (a server
    # event: the count it aggregates)
    cum = np.cumsum(isc)
    at_srv = np.maximum.accumulate(np.where(isc, 0, cum))
    before = np.concatenate(([0], at_srv[:-1]))
    out.fill = (cum - before).astype(np.int64)
    return out


def area_timelines(scenario: Scenario, replicates: Sequence[int], bitgens: Sequence,
                   plan: DelayPlan) -> list[AreaTimeline]:
    """:func:`area_timeline` of every replicate, computed for all at once (a ``vector``
    plan: one draw per client stream, one cumulative sum and one sort per batch)."""
    reps = [int(r) for r in replicates]
    R, n = len(reps), scenario.problem.n
    K = int(scenario.horizon.steps)
    tr = scenario.trigger
    gens = [np.random.Generator(bg) for row in bitgens for bg in row]
    timers = [np.random.Generator(bg) for bg in server_bitgens(scenario.seed, reps, "timer")]
    allc = np.arange(R * n)
    cl = np.tile(np.arange(n), R)
    Bk = plan.B

    def more(blocks: int) -> np.ndarray:
        return plan.draw(gens, allc, blocks, cl)[:, :, 1].reshape(R, n, -1)

    def more_s(m: int) -> np.ndarray:
        if tr.kind != "poisson":
            return np.full((R, m), float(tr.period))
        out = np.empty((R, m))
        for k, g in enumerate(timers):
            out[k] = g.exponential(1.0 / tr.rate, size=m)
        return out

    Dc = more(-(-(int(1.5 * K / (n + 1)) + 8) // Bk))
    Ds = more_s(int(1.5 * K / (n + 1)) + 8)
    while True:
        Tc = np.cumsum(Dc, axis=2)  # sequential along each row: the engine's t = t + c
        Ts = np.cumsum(Ds, axis=1)
        allt = np.concatenate((Tc.reshape(R, -1), Ts), axis=1)
        if allt.shape[1] > K:
            tK = np.partition(allt, K, axis=1)[:, K:K + 1]  # (R, 1): the (K+1)-th time
            grow_c = bool(np.any(Tc[:, :, -1] <= tK))
            grow_s = bool(np.any(Ts[:, -1:] <= tK))
        else:
            grow_c = grow_s = True
        if not (grow_c or grow_s):
            break
        if grow_c:
            Dc = np.concatenate((Dc, more(-(-Dc.shape[2] // Bk))), axis=2)
        if grow_s:
            Ds = np.concatenate((Ds, more_s(Ds.shape[1])), axis=1)
    # every source has an event after the (K+1)-th: the first K+1 are complete.  Equal
    # times among them (probability 0) are flagged and deferred to the engine, so the sort
    # need not be stable
    order = np.argsort(allt, axis=1)[:, :K + 1]
    Lc = Dc.shape[2]
    src_row = np.concatenate((np.repeat(np.arange(n, dtype=np.int64), Lc),
                              np.full(Ts.shape[1], n, dtype=np.int64)))
    tt = np.take_along_axis(allt, order, axis=1)
    tie = np.any(np.diff(tt, axis=1) == 0.0, axis=1)
    t = tt[:, :K]
    s = src_row[order[:, :K]]
    isc = s < n
    kind = np.where(isc, K_CLIENT, K_SERVER).astype(np.int8)
    client = np.where(isc, s, -1).astype(np.int64)
    steps = np.broadcast_to(np.arange(1, K + 1, dtype=np.int64), (R, K))
    o = np.argsort(s, axis=1, kind="stable")
    so = np.take_along_axis(s, o, axis=1)
    sto = np.take_along_axis(steps, o, axis=1)
    to = np.take_along_axis(t, o, axis=1)
    first = np.concatenate((np.ones((R, 1), dtype=bool), so[:, 1:] != so[:, :-1]), axis=1)
    prev_step = np.where(first, 1, np.concatenate((np.ones((R, 1), dtype=np.int64),
                                                   sto[:, :-1]), axis=1))
    prev_t = np.where(first, 0.0, np.concatenate((np.zeros((R, 1)), to[:, :-1]), axis=1))
    st_steps = np.empty((R, K), dtype=np.int64)
    st_time = np.empty((R, K))
    np.put_along_axis(st_steps, o, sto - prev_step, axis=1)
    np.put_along_axis(st_time, o, to - prev_t, axis=1)
    st_steps[~isc] = 0
    st_time[~isc] = 0.0
    cum = np.cumsum(isc, axis=1)
    at_srv = np.maximum.accumulate(np.where(isc, 0, cum), axis=1)
    before = np.concatenate((np.zeros((R, 1), dtype=cum.dtype), at_srv[:, :-1]), axis=1)
    fill = (cum - before).astype(np.int64)
    out = []
    for k in range(R):
        a = AreaTimeline()
        a.time, a.kind, a.client = t[k], kind[k], client[k]
        a.stale_steps, a.stale_time, a.fill = st_steps[k], st_time[k], fill[k]
        a.tie = bool(tie[k])
        out.append(a)
    return out
