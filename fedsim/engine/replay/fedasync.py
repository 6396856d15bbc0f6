"""FedAsync (physical model, Option A, quadratic) replayed along R timelines at once.

[P] Algorithm 1 line 4 / Algorithm 2 lines 5-7: at server step ``t`` the uploading client
``i_t`` sends ``Delta = beta (w^{Omega} - w_{i,Q})``, ``w_{i,Q}`` being Q local SGD steps
from the model ``w^{Omega}`` it read, and the server sets ``w^{t+1} = w^t - Delta``.

For a batch of replicates ``r_1..r_R`` (run in groups of ``group`` rows) this module runs
the steps in lockstep, ``chunk`` steps at a time:

1. the schedule of each replicate comes from :class:`fedsim.engine.replay.timeline.FedAsyncTimeline`
   (uploader, ``omega``, times, and the uploader's round number);
2. the noise of every round comes from the replicate's own streams:
   ``fedsim.rng.Streams(seed, r).client(i, "noise")`` (built in bulk by
   :mod:`fedsim.engine.replay.seeding`, same bits), ``Q d`` standard normals per round, round
   after round in the order of the client's uploads -- the engine draws a round's noise at
   its read and a client's rounds are sequential, so its k-th uploaded round takes numbers
   ``k Q d .. (k+1) Q d - 1`` of its stream whatever the other clients do.  A chunk draws
   each (replicate, client) stream once, into rows placed by the round numbers (no sort);
3. with a shared Hessian and isotropic (or no) noise a round folds into
   ``w_Q = w_0 @ (R^Q)^T + u``, ``u = s0_i (z @ M) + cbar_i``
   (:meth:`~fedsim.engine.replay.quadratic.QuadBatchKernel.composed`; one GEMM per piece of the
   chunk's normals), so a server step is 5 NumPy calls on ``(R, d)`` arrays; otherwise the
   Q local steps run per server step (:meth:`QuadBatchKernel.round`);
4. the read models come from a ring buffer ``(H, R, d)`` of the last ``H`` server models
   (``H`` a power of two above the chunk plus its largest staleness, grown when needed);
   the new model is written into the ring in place.

Divergence is per replicate, with the engine's rule (``not w.w <= DIVERGE_NORM^2``),
checked per chunk on the ring: the replicate is marked at its first such step, its
metrics at that step are recorded, its model and counts are frozen there, and the later
steps of its row (still computed, row-wise) are discarded; the other rows never see it
(every operation is row-wise).  A row's numbers do not depend on the batch size, the
group, the chunk, nor its position in the batch (tested bitwise).  They equal the engine's
to rounding (GEMM instead of GEMV; the folded round): ~1e-16 relative per step, tested to
1e-10 on every recorded metric.

Metrics and ``BatchResult``: :mod:`fedsim.engine.replay.fedasync_result`.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from time import perf_counter as _clock
from typing import Any

import numpy as np

from fedsim.config import Scenario, build_problem
from fedsim.engine.replay.fedasync_result import BatchMetrics, BatchResult, merge_results
from fedsim.engine.replay.quadratic import QuadBatchKernel, composed_noise
from fedsim.engine.replay.seeding import client_bitgens
from fedsim.engine.replay.timeline import DelayPlan, FedAsyncTimeline
from fedsim.errors import require
from fedsim.trace import DIVERGE_NORM

__all__ = ["BatchResult", "replay_fedasync", "supports", "QUAD_METRICS"]

QUAD_METRICS = ("grad_sq", "dist_sq", "f_gap")
_DIV2 = DIVERGE_NORM * DIVERGE_NORM
_PROBLEMS: dict[str, Any] = {}


def _problem(scenario: Scenario):
    key = repr(sorted(scenario.problem.to_dict().items()))
    p = _PROBLEMS.get(key)
    if p is None:
        if len(_PROBLEMS) > 8:
            _PROBLEMS.clear()
        p = _PROBLEMS[key] = build_problem(scenario.problem)
    return p


def supports(scenario: Scenario) -> bool:
    """Whether :func:`replay_fedasync` implements ``scenario`` exactly."""
    a = scenario.algorithm
    if not (a.name == "fedasync" and a.model == "physical" and a.client_rule == "sgd"):
        return False
    if scenario.problem.kind != "quadratic" or scenario.trigger.kind != "every_upload":
        return False
    return all(m in QUAD_METRICS for m in scenario.record.metrics)


def _initial_model(scenario: Scenario, d: int) -> np.ndarray:
    w0 = scenario.algorithm.w0
    if w0 is None:
        return np.zeros(d)
    if isinstance(w0, tuple):
        return np.array(w0, dtype=np.float64)
    return np.full(d, float(w0))


def replay_fedasync(scenario: Scenario, replicates: Sequence[int], *, chunk: int | None = None,
                    keep_timeline: bool = False, mem_mb: float = 128.0,
                    group: int | None = None, w0: np.ndarray | None = None) -> BatchResult:
    """Replay ``scenario`` for ``replicates`` in lockstep (module docstring).

    The replicates run in groups of ``group`` rows (default: about ``sqrt`` of the rows
    whose noise of a whole chunk fits in ``mem_mb`` megabytes, balancing per-step NumPy
    calls against per-stream noise draws); ``chunk``: server steps per chunk (default: as
    many as keep the noise of a group's chunk under ``mem_mb``, between 64 and 8192).
    Every replicate's numbers are those of ``fedsim.engine.run(scenario, r)`` up to
    rounding (~1e-16 relative per step); its timeline is the engine's bit for bit; neither
    depends on ``group``, ``chunk`` nor the other replicates.  ``w0`` (R, d) overrides the
    initial model row by row (a test hook: e.g. a non-finite row to make one replicate
    diverge).
    """
    require(supports(scenario), "scenario", scenario.name,
            "is not a FedAsync physical Option A run on a quadratic (use fedsim.engine.run)")
    reps = [int(r) for r in replicates]
    require(len(reps) >= 1, "replicates", reps, "must hold at least one replicate")
    problem = _problem(scenario)
    d = problem.dim
    qd = max(int(scenario.algorithm.get("Q")) * d, 1)
    kern = QuadBatchKernel(problem, scenario.algorithm.get("eta"), scenario.algorithm.get("Q"),
                           scenario.algorithm.get("batch"))
    if kern.composable:  # per round: d folded numbers (twice), per step: R d ring + copy
        budget = max(mem_mb, 1.0) * 1e6 / (8.0 * d * 4)
        if group is None:
            group = 1024
    else:  # per round: Q d normals
        budget = max(mem_mb, 1.0) * 1e6 / (8.0 * qd)
        if group is None:
            group = int(max(16, min(1024, math.sqrt(budget / 2.0))))
    if chunk is None:
        chunk = int(min(8192, max(64, budget // min(group, len(reps)))))
    if w0 is not None:
        w0 = np.array(w0, dtype=np.float64).reshape(len(reps), d)
    parts = []
    for g in range(0, len(reps), group):
        sub = None if w0 is None else w0[g:g + group]
        parts.append(_replay_group(scenario, problem, reps[g:g + group], chunk, keep_timeline,
                                   sub))
    return parts[0] if len(parts) == 1 else merge_results(parts)


def _replay_group(scenario: Scenario, problem, reps: list[int], chunk: int,
                  keep_timeline: bool, w0: np.ndarray | None) -> BatchResult:
    c_setup = _clock()
    a = scenario.algorithm
    n, d = problem.n, problem.dim
    kern = QuadBatchKernel(problem, a.get("eta"), a.get("Q"), a.get("batch"))
    qd = kern.draws_per_round
    Q = kern.Q
    beta = float(a.get("beta"))
    R = len(reps)
    T = scenario.horizon.steps
    T = int(T) if T is not None else None
    every = int(scenario.record.every)
    names = list(scenario.record.metrics)
    met = BatchMetrics(problem, names)
    dbg = client_bitgens(scenario.seed, reps, n, "delays")
    # delay blocks per generation: ~1.2x a client's share of the step horizon, at most 8
    B = max(4, 16 // (int(a.get("Q")) if scenario.delays.compute_per == "step" else 1))
    blocks = 8 if T is None else int(min(8, max(1, math.ceil(1.2 * T / (n * B)))))
    plan = DelayPlan(scenario)
    timelines = [FedAsyncTimeline(scenario, r, blocks=blocks, bitgens=dbg[k], plan=plan)
                 for k, r in enumerate(reps)]
    del dbg
    draw = None
    if qd:
        gen = np.random.Generator
        draw = [gen(bg).standard_normal
                for row in client_bitgens(scenario.seed, reps, n, "noise") for bg in row]

    if w0 is None:
        W0 = np.tile(_initial_model(scenario, d), (R, 1))
    else:
        W0 = np.array(w0, dtype=np.float64).reshape(R, d)
    H = 64
    hist = np.empty((H, R, d))
    hist[0] = W0
    ar = np.arange(R)
    active = np.ones(R, dtype=bool)
    diverged_step = np.full(R, -1, dtype=np.int64)
    final_w = W0.copy()
    sim_time = np.zeros(R)
    steps_done = np.zeros(R, dtype=np.int64)
    stop_by_time = np.zeros(R, dtype=bool)
    counts = np.zeros(R * n, dtype=np.int64)
    max_st = np.zeros(R, dtype=np.int64)
    # the metric grid (metrics, R, columns): preallocated under a step horizon, else chunks
    ncol = 1 + (T // every if T is not None else 0)
    gbuf = np.full((len(names), R, ncol), np.nan) if T is not None else None
    grid_parts: list[np.ndarray] = []
    g0 = met(W0)
    if gbuf is not None:
        gbuf[:, :, 0] = g0
    else:
        grid_parts.append(g0[:, :, None])
    gfill = 1
    last_step = np.full(R, -1, dtype=np.int64)
    last_vals = np.full((len(names), R), np.nan)
    keep: list[dict[str, list]] | None = (
        [{k: [] for k in ("time", "client", "omega", "t_read", "b_time", "b_delta", "b_gate",
                          "b_before")} for _ in reps] if keep_timeline else None)
    Hh = float(scenario.horizon.time)
    RT = kern.RT0 if kern.shared else None
    pad = R == 1  # a one-row product goes to GEMV (another summation order): use two rows
    Ab = np.empty((2 if pad else R, d))
    Bb = np.empty_like(Ab)
    bufs = (Ab, Bb)
    comp = kern.composable
    if comp:
        RQT, Mq, cbar = kern.composed()
    D = np.empty((R, d))

    sec = {"setup": _clock() - c_setup, "timeline": 0.0, "noise": 0.0, "steps": 0.0,
           "bookkeeping": 0.0}
    t = 0
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        while active.any() and (T is None or t < T):
            S = chunk if T is None else min(chunk, T - t)
            t0 = t
            CL = np.zeros((R, S), dtype=np.int64)
            OM = np.full((R, S), t0, dtype=np.int64)
            TM = np.zeros((R, S))
            RN = np.zeros((R, S), dtype=np.int64)
            lens = np.zeros(R, dtype=np.int64)
            c0 = _clock()
            for k, tl in enumerate(timelines):
                if not active[k]:
                    continue
                c = tl.take(S)
                m = c.time.size
                lens[k] = m
                CL[k, :m], OM[k, :m], TM[k, :m], RN[k, :m] = c.client, c.omega, c.time, c.round
                if keep is not None:
                    for name in keep[k]:
                        keep[k][name].append(getattr(c, name))
            valid = np.arange(S)[None, :] < lens[:, None]  # (R, S)
            c1 = _clock()
            sec["timeline"] += c1 - c0
            empty = np.flatnonzero(active & (lens == 0))
            for k in empty.tolist():  # a time horizon before any upload
                active[k] = False
                final_w[k] = hist[t0 % H, k]
                steps_done[k] = t0
                stop_by_time[k] = True
                sim_time[k] = Hh
                if t0 % every != 0 and t0 > 0:
                    last_step[k] = t0
                    last_vals[:, k] = met(final_w[k:k + 1])[:, 0]
            if not active.any():
                break
            # rounds of the chunk grouped by (replicate, client), each in step order
            # (no sort: a round's row is its key's start plus its round number past the
            # key's rounds before this chunk; padding rows go last)
            key = np.where(valid, ar[:, None] * n + CL, R * n).ravel()
            cnt = np.bincount(key, minlength=R * n + 1)[:R * n]
            total = int(cnt.sum())
            start = np.cumsum(cnt) - cnt
            vflat = valid.ravel()
            kv = key[vflat]
            inv = np.empty(R * S, dtype=np.int64)
            inv[vflat] = start[kv] + RN.ravel()[vflat] - counts[kv]
            inv[~vflat] = np.arange(total, R * S)
            inv = inv.reshape(R, S)
            clsorted = np.zeros(R * S, dtype=np.int64)
            clsorted[:total] = np.repeat(np.arange(R * n) % n, cnt)
            if comp:
                U = composed_noise(draw, cnt, clsorted, total, R * S, qd, Q, d, kern, Mq,
                                   cbar)
                Us = U[inv.T]  # (S, R, d): step j's rows, contiguous
                del U
            elif qd:
                buf = np.empty((R * S, qd))
                buf[total:] = 0.0
                nz = np.flatnonzero(cnt)
                ends = np.cumsum(cnt)[nz].tolist()
                for kk, e, c in zip(nz.tolist(), ends, cnt[nz].tolist(), strict=True):
                    draw[kk](out=buf[e - c:e])
                V = kern.step_rows(buf, clsorted).reshape(R * S, Q, d)
            else:
                V = kern.step_rows(None, clsorted)
            c2 = _clock()
            sec["noise"] += c2 - c1
            # the ring must keep every model a round still in flight (or in this chunk) read
            need = min([int(OM[k, :lens[k]].min()) for k in range(R) if lens[k]] +
                       [tl.oldest_read() for k, tl in enumerate(timelines) if active[k]] +
                       [t0])
            if t0 + S - need + 2 > H:
                H2 = 1 << int(t0 + S - need + 2).bit_length()
                new = np.empty((H2, R, d))
                for s_ in range(max(0, t0 - H + 1), t0 + 1):
                    new[s_ % H2] = hist[s_ % H]
                hist, H = new, H2
            hflat = hist.reshape(H * R, d)
            GI = (OM % H) * R + ar[:, None]  # rows of the read models in the flat ring
            W = hist[t0 % H]
            if comp:
                GIt = np.ascontiguousarray(GI.T)
                for j in range(S):
                    X0 = hflat[GIt[j]]
                    if pad:
                        Ab[0] = X0[0]
                        Ab[1] = X0[0]
                        np.matmul(Ab, RQT, out=Bb)
                        Xq = Bb[:1]
                    else:
                        np.matmul(X0, RQT, out=Ab)
                        Xq = Ab
                    np.add(Xq, Us[j], out=Xq)
                    np.subtract(X0, Xq, out=D)
                    if beta != 1.0:
                        np.multiply(D, beta, out=D)
                    Wn = hist[(t0 + j + 1) % H]
                    np.subtract(W, D, out=Wn)
                    W = Wn
                del Us
            for j in range(S if not comp else 0):
                step = t0 + j + 1
                X0 = hflat[GI[:, j]]
                Vj = V[inv[:, j]]
                if RT is not None:
                    if pad:
                        Ab[0] = X0[0]
                        Ab[1] = X0[0]
                        src = Ab
                    else:
                        src = X0
                    for q in range(Q):
                        dst = bufs[(q + pad) & 1]
                        np.matmul(src, RT, out=dst)
                        np.add(dst, Vj[:, q], out=dst)
                        src = dst
                    Xq = src[:R]
                else:
                    Xq = kern.round(X0.copy(), Vj, CL[:, j])
                np.subtract(X0, Xq, out=D)
                if beta != 1.0:
                    np.multiply(D, beta, out=D)
                Wn = hist[step % H]
                np.subtract(W, D, out=Wn)
                W = Wn
            c3 = _clock()
            sec["steps"] += c3 - c2
            # chunk bookkeeping, vectorised: divergence, ends, metrics, counts
            steps_c = t0 + 1 + np.arange(S)
            Wc = hist[steps_c % H]  # (S, R, d)
            nrm = np.einsum("srd,srd->sr", Wc, Wc)
            live0 = valid.T & active[None, :]  # (S, R)
            bad = live0 & ~(nrm <= _DIV2)
            anyb = bad.any(axis=0)
            jb = np.where(anyb, bad.argmax(axis=0), S)
            live = live0 & (np.arange(S)[:, None] < jb[None, :])
            gsel = np.flatnonzero(steps_c % every == 0)
            if gsel.size:
                G = gsel.size
                vals = met(Wc[gsel].reshape(G * R, d)).reshape(len(names), G, R)
                vals[:, ~live[gsel]] = np.nan
                if gbuf is not None:
                    gbuf[:, :, gfill:gfill + G] = vals.transpose(0, 2, 1)
                else:
                    grid_parts.append(vals.transpose(0, 2, 1))
                gfill += G
            used = live | (np.arange(S)[:, None] == jb[None, :])  # (S, R), to the stop
            st = np.where(used.T, steps_c[None, :] - 1 - OM, 0)
            max_st = np.maximum(max_st, st.max(axis=1))
            counts += np.bincount(key[used.T.ravel()], minlength=R * n)[:R * n]
            for k in np.flatnonzero(anyb).tolist():
                j = int(jb[k])
                s_ = t0 + 1 + j
                diverged_step[k] = s_
                last_step[k] = s_
                final_w[k] = Wc[j, k]
                last_vals[:, k] = met(Wc[j, k:k + 1])[:, 0]
                active[k] = False
                steps_done[k] = s_
                sim_time[k] = TM[k, j]
            ended = active & ((lens < S) | (T is not None and t0 + S == T))
            for k in np.flatnonzero(ended).tolist():
                j = int(lens[k]) - 1
                s_ = t0 + 1 + j
                by_time = bool(lens[k] < S)
                active[k] = False
                final_w[k] = Wc[j, k]
                steps_done[k] = s_
                stop_by_time[k] = by_time
                sim_time[k] = Hh if by_time else TM[k, j]
                if s_ % every != 0:
                    last_step[k] = s_
                    last_vals[:, k] = met(Wc[j, k:k + 1])[:, 0]
            t = t0 + S
            sec["bookkeeping"] += _clock() - c3
    gs = np.arange(gfill, dtype=np.int64) * every
    gv = gbuf[:, :, :gfill] if gbuf is not None else np.concatenate(grid_parts, axis=2)
    res = BatchResult(
        replicates=reps, metric_names=names, grid_steps=gs,
        grid={m: gv[i] for i, m in enumerate(names)}, last_step=last_step,
        last={m: last_vals[i] for i, m in enumerate(names)}, steps_done=steps_done,
        diverged_step=diverged_step, final_w=final_w, sim_time=sim_time,
        client_updates=counts.reshape(R, n), max_staleness=max_st, n=n,
        stop_by_time=stop_by_time, info={"seconds": sec, "chunk": chunk, "group": R})
    if keep is not None:
        res.timeline = [{k: np.concatenate(v) if v else np.empty(0) for k, v in kk.items()}
                        for kk in keep]
    return res
