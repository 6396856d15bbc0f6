"""AREA's Appendix A iterate model on the norm family, replayed along R timelines at once.

[A] Appendix A, eqs. (5)-(7) with ``G^M`` (THEORY_SPEC 2.2; the engine's
:mod:`fedsim.engine.area`, ``model = "iterate_model"``): client i's events form a renewal
process (its ``compute`` delays; the model ignores download, upload and think), the
server's a Poisson (or periodic) timer, all independent.  At global iteration k a client
event sends ``m_i = x_i - y_i`` (``u_s += m_i / n``), sets ``y_i <- x_i`` and computes
``x_i <- G^M_{i,alpha_k}[x_s]``; a server event sets ``x_s <- x_s + u_s, u_s <- 0``.  On
[A] Theorem 8's norm family ``f_i(x) = B ||x - c_i||`` (:class:`fedsim.problems.NormProblem`)
the oracle is deterministic (the subgradient ``B (x - c_i)/||x - c_i||``, 0 at the kink;
no noise is drawn), so the only randomness is the timeline.

Schedule.  Per replicate, client i's event times are the running sums ``t = t + c`` of the
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

Replay.  The R replicates step in lockstep as ``(R, d)`` server arrays and ``(R, n, d)``
client memories; at each step every row takes its own event (row-wise ``where`` masks, the
client rows gathered by index), the M subgradient steps run on all rows at once.  Rows are
independent (every operation is row-wise), so a replicate's numbers do not depend on the
batch.  They equal the engine's to rounding (the norm as a row sum instead of ``dot``).
Divergence (``not x_s . x_s <= DIVERGE_NORM^2``) is per replicate: the row's trace ends at
that step, as the engine's does; the others are untouched.  Metrics are the engine's own
functions (:func:`fedsim.trace.metric_functions`) on the recorded rows; the ergodic average
([A] Theorem 8's ``xbar_K``) is the row-wise running sum of ``x_s`` in step order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from fedsim.config import Scenario
from fedsim.engine.area import step_schedule
from fedsim.engine.replay.seeding import client_bitgens, server_bitgens
from fedsim.engine.replay.timeline import ClientDelayStream, DelayPlan
from fedsim.engine.setup import initial_model
from fedsim.errors import require
from fedsim.rng import Streams
from fedsim.trace import DIVERGE_NORM, KINDS, Trace, metric_functions

__all__ = ["supports_area", "replay_area", "AreaTimeline", "area_timeline", "area_timelines"]

K_CLIENT = KINDS.index("client")
K_SERVER = KINDS.index("server")
_DIV2 = DIVERGE_NORM * DIVERGE_NORM


def supports_area(scenario: Scenario) -> bool:
    """Whether :func:`replay_area` implements ``scenario`` (AREA iterate model, norm family,
    step horizon only, a Poisson or periodic aggregation timer)."""
    a, h = scenario.algorithm, scenario.horizon
    return (a.name == "area" and a.model == "iterate_model" and a.client_rule == "area"
            and scenario.problem.kind == "norm" and h.steps is not None
            and not math.isfinite(h.time) and scenario.trigger.kind in ("poisson", "period")
            and scenario.delays.read_at == "request")


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


def replay_area(scenario: Scenario, replicates: Sequence[int], problem,
                staleness_bound: float = math.inf) -> list[Trace]:
    """One Trace per replicate (module docstring); equal to ``fedsim.engine.run``'s."""
    require(supports_area(scenario), "scenario", scenario.name,
            "is not an AREA iterate-model run on the norm family (use fedsim.engine.run)")
    reps = [int(r) for r in replicates]
    n, d = problem.n, problem.dim
    K = int(scenario.horizon.steps)
    M = int(scenario.algorithm.get("M"))
    alpha = step_schedule(scenario, problem)
    bg = client_bitgens(scenario.seed, reps, n, "delays")
    plan = DelayPlan(scenario, q=M if scenario.delays.compute_per == "step" else 1)
    if plan.vector:
        tls = area_timelines(scenario, reps, bg, plan)
    else:
        tls = [area_timeline(scenario, r, bg[k], plan) for k, r in enumerate(reps)]
    rows = [k for k, tl in enumerate(tls) if not tl.tie]
    out: list[Trace | None] = [None] * len(reps)
    if len(rows) < len(reps):
        from fedsim.engine.dispatch import run
        for k in range(len(reps)):
            if tls[k].tie:
                out[k] = run(scenario, reps[k])
    if not rows:
        return out  # type: ignore[return-value]
    R = len(rows)
    kinds = np.stack([tls[k].kind for k in rows])          # (R, K)
    clients = np.stack([tls[k].client for k in rows]).clip(0)
    w0 = initial_model(problem, scenario)
    B = float(problem.B)
    C = np.asarray(problem.centers, dtype=np.float64)
    Xs = np.tile(w0, (R, 1))
    Us = np.zeros((R, d))
    Xc = np.tile(w0, (R, n, 1))
    Yc = Xc.copy()
    ergodic = "ergodic_f_gap" in scenario.record.metrics
    every = int(scenario.record.every)
    rec_steps = sorted({0, *range(every, K + 1, every), K})
    snap_w: dict[int, np.ndarray] = {0: Xs.copy()}
    snap_s: dict[int, np.ndarray] = {}
    Wsum = Xs.copy() if ergodic else None
    diverged = np.full(R, -1, dtype=np.int64)
    div_w: dict[int, tuple[np.ndarray, np.ndarray | None]] = {}
    ar = np.arange(R)
    nn = float(n)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        for j in range(K):
            t = j + 1
            isc = kinds[:, j] == K_CLIENT
            cl = clients[:, j]
            xi = Xc[ar, cl]
            yi = Yc[ar, cl]
            us_c = Us + (xi - yi) / nn
            Yc[ar, cl] = np.where(isc[:, None], xi, yi)
            a = alpha(j)
            w = Xs.copy()
            Ci = C[cl]
            for _ in range(M):
                v = w - Ci
                nv = np.sqrt(np.einsum("ij,ij->i", v, v))
                coef = np.where(nv == 0.0, 0.0, B / nv)
                w = w - a * (coef[:, None] * v)
            Xc[ar, cl] = np.where(isc[:, None], w, xi)
            Xs = np.where(isc[:, None], Xs, Xs + Us)
            Us = np.where(isc[:, None], us_c, 0.0)
            bad = ~(np.einsum("ij,ij->i", Xs, Xs) <= _DIV2) & (diverged < 0)
            if bad.any():
                for k in np.flatnonzero(bad).tolist():
                    diverged[k] = t
                    div_w[k] = (Xs[k].copy(), None if Wsum is None else Wsum[k].copy())
            if t % every == 0 or t == K:
                snap_w[t] = Xs.copy()
                if Wsum is not None:
                    snap_s[t] = Wsum.copy()  # sum of x_s over steps 0..t-1
            if Wsum is not None:
                np.add(Wsum, Xs, out=Wsum)
            if (diverged >= 0).all():
                break
        if Wsum is not None and K % every != 0 and K in snap_s:
            # the engine's off-grid last record: (S_{K-1} + x_K) - x_K (Recorder.finish)
            snap_s[K] = (snap_s[K] + snap_w[K]) - snap_w[K]
    met = _Metrics(problem, list(scenario.record.metrics))
    for q, k in enumerate(rows):
        out[k] = _trace(tls[k], q, n, rec_steps, snap_w, snap_s, div_w, int(diverged[q]), K,
                        staleness_bound, met)
    return out  # type: ignore[return-value]


class _Metrics:
    """The recorded metrics of rows of ``x_s`` (the engine's functions; ``f_gap`` and the
    ergodic gap of the norm family batched: ``f(w) = mean_i B ||w - c_i||``)."""

    def __init__(self, problem, names: list[str]) -> None:
        self.names = names
        self.ergodic = "ergodic_f_gap" in names
        plain = [m for m in names if m != "ergodic_f_gap"]
        self.fns = dict(metric_functions(problem, plain, None, None))
        self.C = np.asarray(problem.centers, dtype=np.float64)
        self.B = float(problem.B)
        self.fstar = float(problem.f_star)

    def f_gap(self, W: np.ndarray) -> np.ndarray:
        V = W[:, None, :] - self.C[None, :, :]
        nv = np.sqrt(np.einsum("rnd,rnd->rn", V, V))
        return np.mean(self.B * nv, axis=1) - self.fstar

    def rows(self, names: list[str], W: np.ndarray) -> dict[str, np.ndarray]:
        out = {}
        for m in names:
            if m == "f_gap":
                out[m] = self.f_gap(W)
            else:
                out[m] = np.array([self.fns[m](w) for w in W])
        return out


def _trace(tl: AreaTimeline, q: int, n: int, rec_steps: list[int], snap_w: dict, snap_s: dict,
           div_w: dict, dstep: int, K: int, bound: float, met: _Metrics) -> Trace:
    """Row ``q`` as the engine's Trace (``fedsim.trace.Recorder.finish``'s arithmetic)."""
    T = dstep if dstep >= 0 else K
    steps = [s for s in rec_steps if s < T] if dstep >= 0 else list(rec_steps)
    W = [snap_w[s][q] for s in steps]
    S: list[np.ndarray | None] = [snap_s[s][q] if s in snap_s else None for s in steps]
    if dstep >= 0:
        w, ws = div_w[q]
        steps.append(T)
        W.append(w)
        S.append(ws)
        final = w
    else:
        final = snap_w[K][q]
    Wa = np.array(W)
    plain = [m for m in met.names if m != "ergodic_f_gap"]
    vals = met.rows(plain, Wa) if plain else {}
    metrics: dict[str, np.ndarray] = {m: np.asarray(vals[m], dtype=np.float64) for m in plain}
    if met.ergodic:
        erg = np.full(len(steps), np.nan)
        idx = [j for j, st in enumerate(steps) if st > 0 and S[j] is not None]
        if idx:
            Xb = np.array([S[j] / steps[j] for j in idx])
            erg[idx] = met.f_gap(Xb)
        metrics["ergodic_f_gap"] = erg
    for name in list(metrics):  # Recorder.finish
        if name == "ergodic_f_gap":
            continue
        v = metrics[name]
        csum = np.concatenate(([0.0], np.cumsum(v)[:-1]))
        cnt = np.arange(v.size, dtype=np.float64)
        metrics[f"avg_{name}"] = np.where(cnt > 0, csum / np.maximum(cnt, 1), np.nan)
    ordered = {}
    for name in met.names:  # the Recorder's key order: metric functions, ergodic, averages
        if name != "ergodic_f_gap":
            ordered[name] = metrics[name]
    if met.ergodic:
        ordered["ergodic_f_gap"] = metrics["ergodic_f_gap"]
    for name in metrics:
        ordered.setdefault(name, metrics[name])
    cl = tl.client[:T]
    sim_time = float(tl.time[T - 1]) if T else 0.0
    z = np.zeros(1)
    return Trace(
        time=np.concatenate((z, tl.time[:T])), kind_code=np.concatenate(([0], tl.kind[:T])
                                                                       ).astype(np.int8),
        client=np.concatenate(([-1], tl.client[:T])).astype(np.int64),
        staleness_steps=np.concatenate(([0], tl.stale_steps[:T])).astype(np.int64),
        staleness_time=np.concatenate((z, tl.stale_time[:T])),
        buffer_fill=np.concatenate(([0], tl.fill[:T])).astype(np.int64),
        metric_steps=np.asarray(steps, dtype=np.int64), metrics=ordered,
        client_updates=np.bincount(cl[cl >= 0], minlength=n).astype(np.int64),
        concurrency_time=np.zeros(1), concurrency_busy=np.ones(1), concurrency_mean=1.0,
        diverged=dstep >= 0, diverged_step=dstep if dstep >= 0 else None,
        final_w=np.array(final, dtype=np.float64), steps_done=T, sim_time=sim_time,
        staleness_bound=float(bound), info={"k": T})
