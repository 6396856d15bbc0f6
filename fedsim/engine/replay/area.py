"""AREA's Appendix A iterate model on the norm family, replayed along R timelines at once.

[A] Appendix A, eqs. (5)-(7) with ``G^M`` (THEORY_SPEC 2.2; the engine's
:mod:`fedsim.engine.area`, ``model = "iterate_model"``): client i's events form a renewal
process (its ``compute`` delays; the model ignores download, upload and think), the
server's a Poisson timer (``trigger.rate``), all independent.  At global iteration k a client
event sends ``m_i = x_i - y_i`` (``u_s += m_i / n``), sets ``y_i <- x_i`` and computes
``x_i <- G^M_{i,alpha_k}[x_s]``; a server event sets ``x_s <- x_s + u_s, u_s <- 0``.  On
[A] Theorem 8's norm family ``f_i(x) = B ||x - c_i||`` (:class:`fedsim.problems.NormProblem`)
the oracle is deterministic (the subgradient ``B (x - c_i)/||x - c_i||``, 0 at the kink;
no noise is drawn), so the only randomness is the timeline.

Schedule: :mod:`fedsim.engine.replay.area_timeline` (the merged renewal timelines, bitwise
the engine's; a replicate with tied event times is run by ``fedsim.engine.run``).

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
from fedsim.engine.replay.area_timeline import (
    K_CLIENT,
    AreaTimeline,
    area_timeline,
    area_timelines,
)
from fedsim.engine.replay.seeding import client_bitgens
from fedsim.engine.replay.timeline import DelayPlan
from fedsim.engine.setup import initial_model
from fedsim.errors import require
from fedsim.trace import DIVERGE_NORM, Trace, metric_functions

__all__ = ["supports_area", "replay_area", "AreaTimeline", "area_timeline", "area_timelines"]

_DIV2 = DIVERGE_NORM * DIVERGE_NORM


def supports_area(scenario: Scenario) -> bool:
    """Whether :func:`replay_area` implements ``scenario`` (AREA iterate model, norm family,
    step horizon only, a Poisson or periodic aggregation timer)."""
    a, h = scenario.algorithm, scenario.horizon
    return (a.name == "area" and a.model == "iterate_model" and a.client_rule == "area"
            and scenario.problem.kind == "norm" and h.steps is not None
            and not math.isfinite(h.time) and scenario.trigger.kind in ("poisson", "period")
            and scenario.delays.read_at == "request")


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
    met = _Metrics(problem, list(scenario.record.metrics), scenario.record.maml_alpha,
                   scenario.record.me_lam)
    for q, k in enumerate(rows):
        out[k] = _trace(tls[k], q, n, rec_steps, snap_w, snap_s, div_w, int(diverged[q]), K,
                        staleness_bound, met)
    return out  # type: ignore[return-value]


class _Metrics:
    """The recorded metrics of rows of ``x_s`` (the engine's functions; ``f_gap`` and the
    ergodic gap of the norm family batched: ``f(w) = mean_i B ||w - c_i||``)."""

    def __init__(self, problem, names: list[str], maml_alpha: float | None = None,
                 me_lam: float | None = None) -> None:
        self.names = names
        self.ergodic = "ergodic_f_gap" in names
        plain = [m for m in names if m != "ergodic_f_gap"]
        self.fns = dict(metric_functions(problem, plain, maml_alpha, me_lam))
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
