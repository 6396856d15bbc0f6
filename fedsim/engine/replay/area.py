"""AREA's Appendix A iterate model replayed along its event tables, one replicate at a time.

[A] Appendix A, eqs. (5)-(7) with ``G^M`` (THEORY_SPEC 2.2; the engine's
:mod:`fedsim.engine.area`, ``model = "iterate_model"``): the events of client i form a
renewal process (its ``compute`` delays), the server's a Poisson timer, all independent.
The replay applies the rules the SimPy engine calls, compiled, along each replicate's event
table:

* the table (time, kind client/server, client, staleness, fill) is
  :mod:`fedsim.engine.replay.area_timeline`'s, bitwise the engine's (a replicate whose
  table holds tied times is run by ``fedsim.engine.run``);
* :func:`area_events` walks it: a client event is
  :func:`fedsim.local.area.area_update` (``m_i = x_i - y_i``, ``y_i <- x_i``, ``x_i <-
  G^M_{i,alpha_k}[x_s]`` by :func:`fedsim.local.sgd.sgd_round` on the problem's compiled
  oracle) then the server's :func:`fedsim.servers.area.area_apply` arrival; a server event is
  ``area_apply``'s aggregation.  The loop holds no rule arithmetic, only the order of the
  calls, the engine's divergence test and the records;
* the problem's compiled view (:func:`fedsim.problems.compiled.compiled_view`: ``grad``,
  ``data``, ``metrics``, ``mdata``), one whose steps draw standard normals
  (``normal_block``): [A] Theorem 8's norm family (:mod:`fedsim.problems.norm_view`, no
  draws) and Theorem 7's quadratics (:mod:`fedsim.problems.quadratic_view`).  The noise of
  a quadratic is drawn as the engine draws it: client i's k-th event takes the next ``M
  draws`` standard normals of ``Streams(seed, r).client(i, "noise")`` (built in bulk by
  :mod:`fedsim.engine.replay.seeding`); a replicate draws each client's events with one
  ``standard_normal(out=...)`` call, the same numbers in the same order;
* the step sizes ``alpha_k`` are :meth:`fedsim.servers.area.StepSizes.table`'s.

Records, as the engine's :class:`fedsim.engine.steplog.StepLog` makes them: the metrics
(the view's compiled ``metrics``, the functions behind the problem's ``f_gap``/``dist_sq``/
``grad_f_sq``) at step 0, at every multiple of ``record.every`` and at the last step; the
ergodic gap ``f(xbar_t) - f*`` with ``xbar_t = (sum_{k<t} x_{s,k}) / t`` ([A] Theorem 8's
``xbar_K``), the running sum kept in step order (at an off-grid last step the engine's
``(S + x_K) - x_K``).  Divergence (``not x_s . x_s <= DIVERGE_NORM^2``) freezes the
replicate at that step, its metrics recorded there.  The Trace is assembled by
:meth:`fedsim.trace.Recorder.finish` (running averages, concurrency).  Every replicate is
computed on its own, so its numbers do not depend on the others, on their number or on the
chunking of the caller; they equal ``fedsim.engine.run``'s bit for bit.  The replicates of a
call run in one compiled call (:func:`area_replicates`, each replicate's state set afresh
from ``x_{s,0}``), their normals drawn a group of replicates at a time (at most
``_GROUP_NUMBERS`` numbers held).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from fedsim.algorithms import get_algorithm
from fedsim.config import Scenario
from fedsim.engine.area import step_schedule
from fedsim.engine.replay.area_timeline import K_CLIENT, AreaTables, area_tables
from fedsim.engine.replay.seeding import client_bitgens
from fedsim.engine.setup import initial_model, problem_for
from fedsim.errors import require
from fedsim.jit import cache_closure, jit
from fedsim.local.area import area_update
from fedsim.local.sgd import sgd_round
from fedsim.problems.compiled import CompiledView, compiled_view
from fedsim.servers.area import area_apply
from fedsim.trace import DIVERGE_NORM, Recorder, Trace

__all__ = ["supports_area", "replay_area", "area_events", "area_replicates"]

_DIV2 = DIVERGE_NORM * DIVERGE_NORM
_ERGODIC = "ergodic_f_gap"
#: at most this many round normals are held at once (replicates run in groups)
_GROUP_NUMBERS = 4_000_000


@jit(cache=False, inline=True)
def _record(metrics, mview, codes, fcode, w, S, t, tmp, out, ergodic):
    """``out[:len(codes)]`` = the metrics at ``w``; with ``ergodic``, ``out[-1]`` = the f_gap
    of ``S / t`` (NaN at ``t = 0``)."""
    metrics(mview, codes, w, out)
    if ergodic:
        if t == 0:
            out[out.shape[0] - 1] = np.nan
        else:
            for k in range(w.shape[0]):
                tmp[k] = S[k] / t
            metrics(mview, fcode, tmp, out[out.shape[0] - 1:])
    return 0


@jit(cache=False, inline=True)
def area_events(client_update, client_round, grad, server_apply, metrics, view, mview, codes,
                fcode, kind, client, alphas, Z, zrow, M, x_s, u_s, state, m, g, S, tmp, nf,
                every, grid, last, ergodic, div2, k_client):
    """Steps ``1..len(kind)`` of one replicate (module docstring): the client rule
    ``client_update`` (with ``client_round``, ``grad``, ``view``) and the server rule
    ``server_apply`` along the event table, the metrics at the multiples of ``every`` into
    ``grid[t // every]``.  ``S`` enters as ``x_{s,0}``.  Returns the number of steps done, or
    ``-t`` when ``x_s`` diverges at step ``t`` (its metrics then in ``last``); after the
    last step ``t = K`` off the grid, its metrics are in ``last``."""
    K = kind.shape[0]
    d = x_s.shape[0]
    for j in range(K):
        t = j + 1
        if kind[j] == k_client:
            c = client[j]
            client_update(client_round, grad, view, c, x_s, state[0, c], state[1, c], m,
                          Z[zrow[j]], alphas[j], M, g, True)
            server_apply(x_s, u_s, m, nf, True)
        else:
            server_apply(x_s, u_s, m, nf, False)
        nrm = 0.0
        for k in range(d):
            nrm += x_s[k] * x_s[k]
        if not nrm <= div2:
            _record(metrics, mview, codes, fcode, x_s, S, t, tmp, last, ergodic)
            return -t
        if t % every == 0:
            _record(metrics, mview, codes, fcode, x_s, S, t, tmp, grid[t // every], ergodic)
        for k in range(d):
            S[k] += x_s[k]
    if K % every != 0:
        for k in range(d):  # the engine's (S_{K-1} + x_K) - x_K (Recorder.finish)
            S[k] = S[k] - x_s[k]
        _record(metrics, mview, codes, fcode, x_s, S, K, tmp, last, ergodic)
    return K


@jit(cache=False, inline=True)
def area_replicates(client_update, client_round, grad, server_apply, metrics, view, mview,
                    codes, fcode, kind, client, alphas, Z, zlo, zhi, zrow, M, w0, n, every,
                    grid, last, final, done, skip, ergodic, div2, k_client, work, state):
    """Every replicate ``r`` of the tables (rows of ``kind``, ``client``, ``zrow``) but the
    ``skip`` ones, each on its own: the state from ``w0``, the step-0 record into ``grid[r,
    0]``, then :func:`area_events` with the round normals ``Z[zlo[r]:zhi[r]]``; its
    records into ``grid[r]``, ``last[r]``, its model into ``final[r]``, its return value
    into ``done[r]``.  ``work`` (5, d) and ``state`` (2, n, d) are scratch (nothing is
    allocated)."""
    d = w0.shape[0]
    m = work[0]
    g = work[1]
    tmp = work[2]
    S = work[3]
    u_s = work[4]
    for r in range(kind.shape[0]):
        if skip[r]:
            continue
        x_s = final[r]
        for k in range(d):
            x_s[k] = w0[k]
            u_s[k] = 0.0
            S[k] = w0[k]
        for c in range(n):
            for k in range(d):
                state[0, c, k] = w0[k]
                state[1, c, k] = w0[k]
        _record(metrics, mview, codes, fcode, x_s, S, 0, tmp, grid[r, 0], ergodic)
        done[r] = area_events(client_update, client_round, grad, server_apply, metrics, view,
                              mview, codes, fcode, kind[r, 1:], client[r, 1:], alphas,
                              Z[zlo[r]:zhi[r]], zrow[r], M, x_s, u_s, state, m, g, S, tmp,
                              float(n), every, grid[r], last[r], ergodic, div2, k_client)
    return 0


def _view(scenario: Scenario, problem) -> CompiledView | None:
    """The compiled view the replay runs ``scenario`` on: ``problem``'s for the rule's
    batch, when its steps draw standard normals and it compiles every recorded metric
    (``ergodic_f_gap`` from its ``f_gap``); else ``None``."""
    cv = compiled_view(problem, int(scenario.algorithm.get("batch")))
    names = [m for m in scenario.record.metrics if m != _ERGODIC]
    if _ERGODIC in scenario.record.metrics:
        names.append("f_gap")
    if cv is None or not cv.normal_block or not cv.has_metrics(names):
        return None
    return cv


def supports_area(scenario: Scenario) -> bool:
    """Whether :func:`replay_area` implements ``scenario``: the algorithm's model runs on the
    AREA runner as the iterate model, step horizon only, a Poisson timer,
    ``read_at = "request"``, a problem with a compiled view (:func:`_view`)."""
    a, h = scenario.algorithm, scenario.horizon
    if get_algorithm(a.name).runners.get(a.model) != "area" or a.model != "iterate_model":
        return False
    if (h.steps is None or math.isfinite(h.time) or scenario.delays.read_at != "request"
            or scenario.trigger.kind != "poisson"):
        return False
    return _view(scenario, problem_for(scenario)) is not None


@functools.cache
def _loop(grad: Any, metrics: Any) -> Any:
    """:func:`area_replicates` with the AREA rules and the oracle pair as closure constants
    (so numba inlines them, as :func:`fedsim.engine.replay.kernel.table_kernel` does; the
    loop allocates nothing and runs without reference counting), built once per pair and
    process and cached on disk (:func:`fedsim.jit.cache_closure`)."""
    @jit(nrt=False)
    def replicates(view, mview, codes, fcode, kind, client, alphas, Z, zlo, zhi, zrow, M, w0,
                   n, every, grid, last, final, done, skip, ergodic, div2, k_client, work,
                   state):
        return area_replicates(area_update, sgd_round, grad, area_apply, metrics, view,
                               mview, codes, fcode, kind, client, alphas, Z, zlo, zhi, zrow,
                               M, w0, n, every, grid, last, final, done, skip, ergodic, div2,
                               k_client, work, state)

    return cache_closure(replicates)


@jit
def _rounds(cl, nxt, zrow):
    """``zrow[j] = nxt[cl[j]]++`` at the client steps (the row of the client's next round)."""
    for j in range(cl.shape[0]):
        c = cl[j]
        if c >= 0:
            zrow[j] = nxt[c]
            nxt[c] += 1
    return 0


def _noise(kind: np.ndarray, client: np.ndarray, rows: range, bitgens, n: int, M: int,
           draws: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(Z, zlo, zhi, zrow)`` of the replicates ``rows`` of the tables: replicate ``r``'s
    rounds' normals ``Z[zlo[r]:zhi[r]]``, grouped by client in event order (client i's from
    its own ``noise`` stream, one ``standard_normal`` call), and the row of each step
    ``zrow[r]`` (module docstring).  Without draws, one empty round for all."""
    R, K = len(rows), kind.shape[1] - 1
    zrow = np.zeros((R, K), dtype=np.int64)
    if draws == 0:
        return (np.empty((1, M, 0)), np.zeros(R, dtype=np.int64), np.ones(R, dtype=np.int64),
                zrow)
    cnts = [np.bincount(client[r, 1:][kind[r, 1:] == K_CLIENT], minlength=n) for r in rows]
    zhi = np.cumsum([int(c.sum()) for c in cnts], dtype=np.int64)
    zlo = zhi - np.array([int(c.sum()) for c in cnts], dtype=np.int64)
    Z = np.empty((max(int(zhi[-1]), 1), M, draws))
    for q, r in enumerate(rows):
        cnt = cnts[q]
        first = zlo[q] + np.cumsum(cnt) - cnt
        _rounds(client[r, 1:], first - zlo[q], zrow[q])
        for i in np.flatnonzero(cnt).tolist():
            np.random.Generator(bitgens[r][i]).standard_normal(
                out=Z[first[i]:first[i] + cnt[i]])
    return Z, zlo, zhi, zrow


def replay_area(scenario: Scenario, replicates: Sequence[int], problem,
                staleness_bound: float = math.inf) -> list[Trace]:
    """One Trace per replicate (module docstring); equal to ``fedsim.engine.run``'s."""
    require(supports_area(scenario), "scenario", scenario.name,
            "is not an AREA iterate-model run on a problem with a compiled view "
            "(use fedsim.engine.run)")
    reps = [int(r) for r in replicates]
    a, rc = scenario.algorithm, scenario.record
    n, d = problem.n, problem.dim
    K = int(scenario.horizon.steps)
    M = int(a.get("M"))
    cv = _view(scenario, problem)
    draws = cv.draws
    loop = _loop(cv.grad, cv.metrics)
    names = list(rc.metrics)
    ergodic = _ERGODIC in names
    codes = cv.codes([m for m in names if m != _ERGODIC])
    fcode = cv.codes(["f_gap"]) if ergodic else codes[:0]
    width = codes.size + int(ergodic)
    every = int(rc.every)
    alphas = step_schedule(scenario, problem).table(K)
    tabs = area_tables(scenario, reps)
    nbg = client_bitgens(scenario.seed, reps, n, "noise") if draws else None
    w0 = initial_model(problem, scenario)
    R = len(reps)
    grid = np.full((R, K // every + 1, width), np.nan)
    last = np.full((R, width), np.nan)
    final = np.empty((R, d))
    done = np.zeros(R, dtype=np.int64)
    group = max(1, int(_GROUP_NUMBERS // max(1, K * M * draws)))  # noise of a group
    work, state = np.empty((5, d)), np.empty((2, n, d))
    for g0 in range(0, R, group):
        rows = range(g0, min(R, g0 + group))
        Z, zlo, zhi, zrow = _noise(tabs.kind, tabs.client, rows, nbg, n, M, draws)
        sl = slice(rows.start, rows.stop)
        loop(cv.data, cv.mdata, codes, fcode, tabs.kind[sl], tabs.client[sl], alphas, Z, zlo, zhi,
             zrow, M, w0, n, every, grid[sl], last[sl], final[sl], done[sl], tabs.tie[sl],
             ergodic, _DIV2, K_CLIENT, work, state)
    rec = _Assembler(scenario, problem, names, codes.size, ergodic, staleness_bound)
    out: list[Trace] = []
    for k in range(R):
        if tabs.tie[k]:
            from fedsim.engine.dispatch import run
            out.append(run(scenario, reps[k]))
        else:
            out.append(rec.trace(tabs, k, grid[k], last[k], int(done[k]), final[k]))
    return out


class _Assembler:
    """Builds a replicate's Trace with :meth:`fedsim.trace.Recorder.finish` (one Recorder
    per call, its columns and records set per replicate)."""

    def __init__(self, scenario: Scenario, problem, names: list[str], nc: int, ergodic: bool,
                 bound: float) -> None:
        rc = scenario.record
        self.every = int(rc.every)
        self.n, self.nc, self.ergodic, self.bound = problem.n, nc, ergodic, bound
        self.rec = Recorder(problem, names, self.every, problem.n, 2, rc.maml_alpha, rc.me_lam)

    def trace(self, tabs: AreaTables, k: int, grid: np.ndarray, last: np.ndarray, done: int,
              w: np.ndarray) -> Trace:
        """Replicate ``k``'s Trace: its table's first ``T + 1`` entries and its records."""
        T = -done if done < 0 else done
        every, nc = self.every, self.nc
        on_grid = T // every + 1 if done > 0 else (T - 1) // every + 1
        steps = list(range(0, on_grid * every, every))
        vals = grid[:on_grid]
        if steps[-1] != T:
            steps.append(T)
            vals = np.vstack((vals, last))
        rec = self.rec
        rec.time, rec.kind, rec.client = tabs.time[k], tabs.kind[k], tabs.client[k]
        rec.st_steps, rec.st_time, rec.fill = (tabs.stale_steps[k], tabs.stale_time[k],
                                               tabs.fill[k])
        rec.m_steps = steps
        rec.m_vals = [vals[:, c] for c in range(nc)]
        if self.ergodic:
            rec.m_ergo = vals[:, nc]
        cl = tabs.client[k, 1:T + 1]
        rec.client_updates = np.bincount(cl[cl >= 0], minlength=self.n).astype(np.int64)
        rec.conc_t, rec.conc_b = [], []
        rec.busy(0.0, 1.0)
        rec.info = {"k": T}
        sim_time = float(tabs.time[k, T])
        return rec.finish(T, w, sim_time, T if done < 0 else None, self.bound)
