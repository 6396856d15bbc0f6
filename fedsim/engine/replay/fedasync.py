"""FedAsync (physical model, Option A) on a problem with a compiled view, along R timelines.

[P] Algorithm 1 line 4 / Algorithm 2 lines 5-7: at server step ``t`` the uploading client
``i_t`` sends ``Delta = w^{Omega} - w_{i,Q}``, ``w_{i,Q}`` being Q local SGD steps from
the model ``w^{Omega}`` it read, and the server sets ``w^{t+1} = w^t - beta Delta``.

Each replicate is replayed on its own (so its numbers cannot depend on the others, on
their number, on ``group`` nor on ``chunk``), ``chunk`` steps at a time:

1. the schedule (uploader, ``omega``, times, the uploader's round number), bitwise the
   SimPy engine's, comes from :class:`fedsim.engine.replay.event_timeline.EventTimeline`
   (the engine's event loop compiled; Constant/Exponential delays) or else from
   :class:`fedsim.engine.replay.timeline.FedAsyncTimeline` (the vectorised merge);
2. the randomness of every round comes from the replicate's own streams
   (``fedsim.rng.Streams(seed, r).client(i, "noise")``, as PCG64 state rows built in bulk
   by :mod:`fedsim.engine.replay.streams`, same bits): the problem's compiled ``draw``
   (:mod:`fedsim.problems.compiled`) takes a step's numbers, Q steps a round, inside the
   loop at the round's upload; a client's rounds are sequential, so it consumes its
   stream round after round as the engine does (which draws a round at its read);
3. the loop of :func:`fedsim.engine.replay.kernel.replay_kernel` applies the client rule
   (:func:`fedsim.local.sgd.sgd_round` with the view's compiled oracle) and the server
   rule (:func:`fedsim.servers.fedasync.fedasync_apply`) along the chunk -- the very
   functions the SimPy engine calls, so the iterates are the engine's bit for bit; the
   metrics are the view's compiled ones (for quadratics the closed forms
   :func:`~fedsim.problems.quadratic_view.quadratic_metrics` that
   ``QuadraticProblem.grad_f_sq`` etc. call too).

Divergence is per replicate, with the engine's rule (``not w.w <= DIVERGE_NORM^2``): the
replicate is marked at its first such step, its metrics at that step recorded, its model
and counts frozen there.

``BatchResult``: :mod:`fedsim.engine.replay.fedasync_result`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from time import perf_counter as _clock

import numpy as np

from fedsim.algorithms import get_algorithm
from fedsim.config import Scenario
from fedsim.engine.replay.event_timeline import EventTimeline, delay_params, supports_plan
from fedsim.engine.replay.fedasync_result import BatchResult, merge_results
from fedsim.engine.replay.kernel import replay_kernel
from fedsim.engine.replay.seeding import client_bitgens
from fedsim.engine.replay.streams import client_states
from fedsim.engine.replay.timeline import DelayPlan, FedAsyncTimeline
from fedsim.engine.setup import problem_for
from fedsim.errors import require
from fedsim.local.registry import get_client_rule
from fedsim.local.sgd import sgd_round
from fedsim.problems.compiled import CompiledView, compiled_view, has_compiled_view
from fedsim.servers.fedasync import fedasync_apply
from fedsim.trace import DIVERGE_NORM

__all__ = ["BatchResult", "replay_fedasync", "supports"]

_DIV2 = DIVERGE_NORM * DIVERGE_NORM


def supports(scenario: Scenario) -> bool:
    """Whether :func:`replay_fedasync` implements ``scenario`` exactly, read from the
    registries and the problem (no algorithm or problem name is compared): the algorithm's
    model runs on the one-upload-per-step runner (``"fedasync_fast"``, whose server step is
    :func:`~fedsim.servers.fedasync.fedasync_apply`), its client rule's round is the
    compiled :func:`~fedsim.local.sgd.sgd_round` (``compiled_round``), the problem has a
    compiled view (:mod:`fedsim.problems.compiled`) for the rule's batch size, the trigger
    is every upload and every recorded metric is one of the view's."""
    a = scenario.algorithm
    if get_algorithm(a.name).runners.get(a.model) != "fedasync_fast":
        return False
    if getattr(get_client_rule(a.client_rule).cls, "compiled_round", None) is not sgd_round:
        return False
    if scenario.trigger.kind != "every_upload":
        return False
    problem = problem_for(scenario)
    if not has_compiled_view(problem):
        return False
    cv = compiled_view(problem, int(a.get("batch")))
    return cv is not None and cv.has_metrics(scenario.record.metrics)


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
    problem = problem_for(scenario)
    d = problem.dim
    qd = max(int(scenario.algorithm.get("Q")) * d, 1)
    if group is None:
        group = 256
    if chunk is None:  # the noise of a chunk of one replicate under mem_mb
        chunk = int(min(65536, max(64, max(mem_mb, 1.0) * 1e6 / (8.0 * qd))))
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
    """Replicates ``reps``, one after the other (module docstring)."""
    c_setup = _clock()
    a = scenario.algorithm
    n, d = problem.n, problem.dim
    Q, eta, beta = int(a.get("Q")), float(a.get("eta")), float(a.get("beta"))
    cv = compiled_view(problem, int(a.get("batch")))
    k_draw = cv.draws
    R = len(reps)
    T = scenario.horizon.steps
    T = int(T) if T is not None else None
    every = int(scenario.record.every)
    names = list(scenario.record.metrics)
    codes = cv.codes(names)
    nm = len(names)
    plan = DelayPlan(scenario)
    compiled_tl = supports_plan(plan)
    if compiled_tl:
        dst = client_states(scenario.seed, reps, n, "delays")
        params = delay_params(plan)
    else:
        dbg = client_bitgens(scenario.seed, reps, n, "delays")
    states = client_states(scenario.seed, reps, n, "noise")
    Z = np.empty((Q, k_draw), dtype=cv.dtype)
    B = max(4, 16 // (Q if scenario.delays.compute_per == "step" else 1))
    blocks = 8 if T is None else int(min(8, max(1, math.ceil(1.2 * T / (n * B)))))
    Hh = float(scenario.horizon.time)
    g, new = np.empty(d), np.empty(d)
    lastbuf = np.empty(nm)
    out = {"final_w": np.empty((R, d)), "sim_time": np.zeros(R),
           "steps_done": np.zeros(R, dtype=np.int64),
           "diverged_step": np.full(R, -1, dtype=np.int64),
           "stop_by_time": np.zeros(R, dtype=bool), "counts": np.zeros((R, n), dtype=np.int64),
           "max_st": np.zeros(R, dtype=np.int64), "last_step": np.full(R, -1, dtype=np.int64),
           "last": np.full((nm, R), np.nan)}
    grids: list[np.ndarray] = []
    keep: list[dict[str, np.ndarray]] | None = [] if keep_timeline else None
    sec = {"setup": _clock() - c_setup, "timeline": 0.0, "steps": 0.0,
           "bookkeeping": 0.0}
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        for k, r in enumerate(reps):
            start = (_initial_model(scenario, d) if w0 is None
                     else np.array(w0[k], dtype=np.float64))
            if compiled_tl:
                tl = EventTimeline(scenario, r, plan=plan, states=dst[k], params=params)
            else:
                tl = FedAsyncTimeline(scenario, r, blocks=blocks, bitgens=dbg[k], plan=plan)
            grid, parts = _replay_one(scenario, problem, cv, codes, tl, states[k], start,
                                      T, every, chunk, Q, eta, beta, Z, g, new, lastbuf,
                                      out, k, Hh, sec)
            grids.append(grid)
            if keep is not None:
                keep.append({c: np.concatenate([getattr(p, c) for p in parts])
                             if parts else np.empty(0) for c in _KEEP})
    c0 = _clock()
    ncol = max(gr.shape[0] for gr in grids)
    gv = np.full((nm, R, ncol), np.nan)
    for k, gr in enumerate(grids):
        gv[:, k, :gr.shape[0]] = gr.T
    res = BatchResult(
        replicates=reps, metric_names=names,
        grid_steps=np.arange(ncol, dtype=np.int64) * every,
        grid={m: gv[i] for i, m in enumerate(names)}, last_step=out["last_step"],
        last={m: out["last"][i] for i, m in enumerate(names)}, steps_done=out["steps_done"],
        diverged_step=out["diverged_step"], final_w=out["final_w"], sim_time=out["sim_time"],
        client_updates=out["counts"], max_staleness=out["max_st"], n=n,
        stop_by_time=out["stop_by_time"], info={"seconds": sec, "chunk": chunk, "group": R})
    sec["bookkeeping"] += _clock() - c0
    if keep is not None:
        res.timeline = keep
    return res


_KEEP = ("time", "client", "omega", "t_read", "b_time", "b_delta", "b_gate", "b_before")


def _replay_one(scenario, problem, cv: CompiledView, codes, tl, states, w0, T, every, chunk, Q,
                eta, beta, Z, g, new, lastbuf, out, k, Hh,
                sec) -> tuple[np.ndarray, list]:
    """One replicate along its timeline, ``chunk`` steps at a time; fills row ``k`` of
    ``out`` and returns its metric grid (columns: steps 0, every, ...) and its chunks."""
    n, d = problem.n, problem.dim
    nm = codes.size
    kernel = replay_kernel(sgd_round, cv.grad, cv.draw, fedasync_apply, cv.metrics)
    ncol0 = 1 + (T // every if T is not None else 0)
    grid = np.full((max(ncol0, 1), nm), np.nan)
    cv.metrics(cv.mdata, codes, w0, grid[0])
    H = 64
    hist = np.empty((H, d))
    hist[0] = w0
    parts = []
    t = 0
    max_st = 0
    dstep = -1
    by_time = False
    while T is None or t < T:
        S = chunk if T is None else min(chunk, T - t)
        c0 = _clock()
        c = tl.take(S)
        m = c.time.size
        parts.append(c)
        c1 = _clock()
        sec["timeline"] += c1 - c0
        if m == 0:
            by_time = True
            break
        cl = c.client
        need = min(int(c.omega.min()), tl.oldest_read(), t)
        if t + m - need + 2 > H:  # the ring keeps every model a round still reads
            H2 = 1 << int(t + m - need + 2).bit_length()
            h2 = np.empty((H2, d))
            for s_ in range(max(0, t - H + 1), t + 1):
                h2[s_ % H2] = hist[s_ % H]
            hist, H = h2, H2
        if grid.shape[0] <= (t + m) // every:
            grid = np.concatenate((grid, np.full((max(grid.shape[0], (t + m) // every + 1
                                                      - grid.shape[0]), nm), np.nan)))
        c2 = _clock()
        done = kernel(cv.data, cv.mdata, codes, hist, t, cl, c.omega, states, Z,
                            eta, Q, beta, every, g, new, grid, lastbuf, _DIV2)
        sec["steps"] += _clock() - c2
        used = -done if done < 0 else done
        st = np.arange(t, t + used) - c.omega[:used]
        max_st = max(max_st, int(st.max()))
        out["counts"][k] += np.bincount(cl[:used], minlength=n)
        if done < 0:
            dstep = t + used
            out["sim_time"][k] = c.time[used - 1]
            t = dstep
            break
        t += m
        if m < S:
            by_time = True
            break
    H1 = H - 1
    out["final_w"][k] = hist[t & H1]
    out["steps_done"][k] = t
    out["max_st"][k] = max_st
    out["stop_by_time"][k] = by_time and dstep < 0
    if dstep >= 0:
        out["diverged_step"][k] = dstep
        out["last_step"][k] = dstep
        out["last"][:, k] = lastbuf  # the kernel wrote no grid column at or past it
    else:
        out["sim_time"][k] = Hh if by_time else float(parts[-1].time[-1])
        if t % every != 0 and t > 0:
            out["last_step"][k] = t
            cv.metrics(cv.mdata, codes, hist[t & H1], lastbuf)
            out["last"][:, k] = lastbuf
    ncol = t // every + 1
    return grid[:ncol], parts
