"""Violation / looseness search over a scenario family (``fedsim search``, issue 11 item 3).

Sequential, within a budget: wall-clock seconds (``budget``), or a number of point
evaluations (``evals``, ``fedsim search --evals N``), which makes the search reproducible:
the same command gives the same ``search.csv`` (grid order, differential evolution and the
confirmation seeds are all fixed by ``seed``; the per-point ``seconds`` column is then left
out of ``search.csv``, it stays in the point records):

1. **Coarse grid** (:func:`fedsim.validation.search_space.coarse_grid`, visited in a seeded random
   order so that a grid cut short by the budget still covers the space): every point is built by the
   family (bound with its status and resolved hypotheses), measured by the family's exact
   oracle when feasible, else by Monte Carlo (``method`` says which), and ranked by
   ``measured / bound`` (objective ``violation``) or ``bound / measured`` (``looseness``).
2. **Local refinement** around the ``refine`` best grid points:
   :func:`scipy.optimize.differential_evolution` on the box spanned by the neighbouring grid
   levels of every range parameter (integer parameters kept integral with ``integrality``;
   list parameters fixed at the point's value), maximising the ratio, then a compass
   (generating-set) search from the best point of the box, steps halved down to 1 for
   integers and 1/64 of the box for reals; evaluations are memoised and the budget stops it.
3. **Confirmation**: every distinct point whose measured value exceeds its bound (up to
   ``confirm`` of them, largest violation first) is simulated again, independently, by the
   engine through :func:`fedsim.validation.suites.run_cases` -- validate's machinery: Student-t 99%
   CI over ``confirm_replicates`` replicates, the same ``holds`` / ``violated`` /
   ``inconclusive`` / ``not_applicable`` verdicts, the exact value z-tested against it.

A point the family refuses (a ``ConfigError`` from building or measuring it, e.g. a
parameter combination outside a theorem's setting, or an arithmetic overflow at extreme
constants) is a row with ``status = REFUSED``, the reason in ``oracle`` and no ratio; the
search goes on.  ``summary.json`` counts them (``refused``).  The budget holds inside a
point too: each point runs in a worker process (:mod:`fedsim.validation.search_budget`; in
this process with ``workers=1``, where only SIGALRM can stop it) that is killed when the
budget runs out, even in the middle of a C call; the point is a row with ``status =
TIMEOUT`` and ``oracle`` "stopped by budget after ... s" (counted as ``timed_out``, not
stored, so a resumed search measures it again).

Every evaluated point is a row of the run directory's database (``out/store.sqlite``, table
``points``, :mod:`fedsim.validation.montecarlo_db`), one transaction each, with the sha256
of its content; an interrupted search resumes where it stopped, and a point that fails
verification (damaged, truncated, computed for another key) is recomputed and counted in
``summary.json`` (``damaged_points_recomputed``).  The search holds the run directory's
lock, as validate does.  Confirmation records live under ``out/confirm``
(:func:`fedsim.validation.montecarlo.run_tasks`' store).  ``out/search.csv`` has one row per point:
the parameters, ``bound``, ``status``, ``claim`` (tested as an upper bound by validate),
``point_verdict`` and ``note`` (the point's own verdict, :func:`fedsim.validation.verdict.judge`
on its measurement and on its simulation checks run on
:data:`fedsim.validation.verdict.CHECK_REPLICATES` engine runs: the verdict ``check_bound``
gives),
``measured``, ``error`` (exact: rigorous error bound; mc: 99% half-width), ``method``,
``ratio`` (the objective's), ``violation_ratio``, ``phase`` and, for confirmed points,
``verdict``, ``ci_low``, ``ci_high``.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from fedsim.validation.families import Family, get_family, params_digest
from fedsim.validation.montecarlo import atomic_write_json, canonical_json
from fedsim.validation.montecarlo_db import open_store
from fedsim.validation.montecarlo_store import lock_run_dir
from fedsim.validation.search_budget import PointStopped, measure_within, point_worker
from fedsim.validation.search_space import Dim, coarse_grid, levels, parse_space

from fedsim.errors import ConfigError, require
from fedsim.safefile import atomic_writer

__all__ = ["SearchSettings", "evaluate", "run_search", "OBJECTIVES"]

OBJECTIVES = ("violation", "looseness")
_COLUMNS = ["theorem", "mode", "horizon", "bound", "status", "claim", "point_verdict",
            "measured", "error", "method", "ratio", "violation_ratio", "verdict", "ci_low",
            "ci_high", "mc_mean",
            "oracle_z", "phase", "oracle", "n_oracle", "unknown_hypotheses",
            "failing_hypotheses", "note", "seconds", "point", "params"]


@dataclass(frozen=True)
class SearchSettings:
    """How points are measured and how far the search goes."""

    objective: str = "violation"
    budget: float = 600.0
    #: a budget of point evaluations instead of seconds (reproducible); ``budget`` is ignored
    evals: int | None = None
    grid: int = 60
    refine: int = 3
    refine_iter: int = 4
    confirm: int = 8
    confirm_replicates: int = 200
    replicates: int = 4000
    max_states: int = 20_000
    seed: int = 0
    workers: int | None = None
    progress: bool = True

    def __post_init__(self) -> None:
        require(self.objective in OBJECTIVES, "objective", self.objective,
                f"must be one of {OBJECTIVES}")
        require(self.budget > 0, "budget", self.budget, "must be > 0")
        require(self.evals is None or (isinstance(self.evals, int) and self.evals >= 1),
                "evals", self.evals, "must be an integer >= 1")


def _ratio(measured: float, bound: float, objective: str) -> float:
    num, den = (measured, bound) if objective == "violation" else (bound, measured)
    if not (math.isfinite(num) and math.isfinite(den)) or den <= 0:
        return math.nan
    return float(num / den)


def evaluate(family: Family, params: dict[str, Any], st: SearchSettings, out: Path | None,
             phase: str = "grid", time_left: float | None = None) -> dict[str, Any]:
    """Build, bound and measure one point (or read its record from the run directory).

    ``time_left``: seconds the point may take; a point still running then is stopped and
    returned as a row with status ``TIMEOUT`` (not stored: a resumed search with more
    budget measures it again)."""
    full = family.complete(params)
    key = {"family": family.name, "params": full, "max_states": st.max_states,
           "replicates": st.replicates, "seed": st.seed}
    digest = params_digest(key)
    store = None if out is None else open_store(out)
    row = None if store is None else _stored_row(store, digest, key)
    if row is None:
        t0 = time.perf_counter()
        try:
            fields = measure_within(time_left, family, full, st.max_states, st.replicates,
                                    st.seed)
        except PointStopped as stop:
            how = ("its worker process was killed" if stop.killed
                   else "interrupted by SIGALRM")
            row = _refused_row(full, digest, phase, f"stopped by budget after "
                               f"{stop.seconds:.1f} s ({how}): the search budget ran out "
                               "inside this point", stop.seconds, status="TIMEOUT")
            return dict(row)
        except ArithmeticError as exc:  # e.g. a bound that overflows float64 at this point
            row = _refused_row(full, digest, phase, f"{type(exc).__name__}: {exc}",
                               time.perf_counter() - t0)
            if store is not None:
                store.put_point(digest, {"key": key, "row": row})
            return dict(row)
        except ConfigError as exc:  # the family refuses this point: a row, not a crash
            row = _refused_row(full, digest, phase, str(exc), time.perf_counter() - t0)
            if store is not None:
                store.put_point(digest, {"key": key, "row": row})
            return dict(row)
        row = {**{k: v for k, v in full.items() if not isinstance(v, list)},
               "params": json.dumps(full, sort_keys=True), "point": digest, **fields,
               "phase": phase, "seconds": time.perf_counter() - t0}
        row["violation_ratio"] = _ratio(row["measured"], row["bound"], "violation")
        if store is not None:
            store.put_point(digest, {"key": key, "row": row})
    row = dict(row)
    row["ratio"] = _ratio(row["measured"], row["bound"], st.objective)
    return row


#: stored points that failed verification since the last :func:`run_search` started
_DAMAGED: dict[str, int] = {"points": 0}
_ROW_KEYS = ("point", "params", "bound", "measured", "status", "phase", "violation_ratio")


def _stored_row(store: Any, digest: str, key: dict) -> dict | None:
    """The stored row of point ``digest`` if it verifies (checksum, the key it was computed
    for, its own digest, the row's fields), else None -- and a damaged one is counted and
    recomputed."""
    body, problem = store.get_point(digest)
    if body is None and problem is None:
        return None
    if problem is None:
        row = body["row"]
        if json.loads(canonical_json(key)) != body["key"]:
            problem = "computed for another key"
        elif any(k not in row for k in _ROW_KEYS) or row["point"] != digest:
            problem = "not a point row"
    if problem is not None:
        _DAMAGED["points"] += 1
        return None
    return body["row"]


def _refused_row(full: dict[str, Any], digest: str, phase: str, reason: str,
                 seconds: float, status: str = "REFUSED") -> dict[str, Any]:
    """The row of a point the family refuses to build or measure (status ``REFUSED``, or
    ``TIMEOUT`` for a point the budget stopped; the reason in ``oracle``; no bound, no
    measurement, never a candidate)."""
    nan = math.nan
    return {**{k: v for k, v in full.items() if not isinstance(v, list)},
            "params": json.dumps(full, sort_keys=True), "point": digest, "theorem": "",
            "mode": "", "horizon": nan, "bound": nan, "status": status, "claim": False,
            "point_verdict": "", "note": "", "unknown_hypotheses": "",
            "failing_hypotheses": "", "measured": nan,
            "error": nan, "method": "refused" if status == "REFUSED" else "stopped",
            "oracle": reason.splitlines()[0],
            "n_oracle": 0, "phase": phase, "seconds": seconds, "violation_ratio": nan,
            "ratio": nan}


class _Clock:
    """What is left of the budget: seconds, or (``evals`` given) new point evaluations;
    a share's spending is also its parent's."""

    def __init__(self, budget: float, evals: int | None = None,
                 parent: _Clock | None = None) -> None:
        self.t0, self.budget, self.evals, self.used = time.perf_counter(), budget, evals, 0
        self.parent = parent

    def left(self) -> float:
        if self.evals is not None:
            return float(self.evals - self.used)
        return self.budget - (time.perf_counter() - self.t0)

    def seconds_left(self) -> float | None:
        """Seconds a point may still take (the in-point limit of :func:`evaluate`); None
        with an ``evals`` budget (no wall-clock limit: the search is reproducible)."""
        if self.evals is not None:
            return None
        return self.left()

    def spend(self) -> None:
        """One new point evaluated."""
        self.used += 1
        if self.parent is not None:
            self.parent.spend()

    def share(self, k: int) -> _Clock:
        """An equal ``1/k`` share of what is left."""
        if self.evals is not None:
            return _Clock(math.inf, int(self.left()) // k, parent=self)
        return _Clock(self.left() / k, parent=self)


def _bar(total: int, desc: str, on: bool) -> Any:
    if not on:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="point", file=sys.stderr, dynamic_ncols=True)


def _score(row: dict) -> float:
    r = row.get("ratio", math.nan)
    return -math.inf if r is None or not math.isfinite(r) else float(r)


def _refine(family: Family, dims: list[Dim], best: dict, st: SearchSettings, out: Path,
            clock: _Clock, rows: dict[str, dict], bar: Any,
            user_fixed: dict[str, Any] | None = None) -> None:
    """Differential evolution on the grid cell around ``best`` (see the module docstring)."""
    from scipy.optimize import differential_evolution

    ranges = [d for d in dims if d.kind == "range" and d.high > d.low]
    if not ranges:
        return
    bounds, integ = [], []
    k = max(2, round(st.grid ** (1.0 / max(1, len(ranges)))))
    for d in ranges:
        lv = levels(d, k)
        v = best[d.name]
        j = int(np.argmin([abs(x - v) for x in lv]))
        lo, hi = lv[max(0, j - 1)], lv[min(len(lv) - 1, j + 1)]
        bounds.append((float(lo), float(hi) if hi > lo else float(lo) + 1e-9))
        integ.append(d.integer)
    fixed = {**(user_fixed or {}), **{d.name: best[d.name] for d in dims if d not in ranges}}

    class _Stop(Exception):
        pass

    def f(x: np.ndarray) -> float:
        if clock.left() <= 0:
            raise _Stop
        if not np.all(np.isfinite(x)):  # scipy's box scaling overflowed (bounds near 1.8e308)
            return 1e300
        q = dict(fixed)
        for d, v in zip(ranges, x, strict=True):
            q[d.name] = int(round(v)) if d.integer else float(v)
        row = evaluate(family, q, st, out, phase="refine", time_left=clock.seconds_left())
        if row["point"] not in rows:
            rows[row["point"]] = row
            clock.spend()
            if bar is not None:
                bar.update(1)
        s = _score(row)
        return -s if math.isfinite(s) else 1e300

    try:
        differential_evolution(f, bounds, integrality=integ, maxiter=st.refine_iter,
                               popsize=5, polish=False, seed=st.seed, tol=0.0, init="sobol")
        # compass (generating-set) polish from the best point seen in this cell
        inside = [r for r in rows.values()
                  if all(lo - 1e-12 <= r[d.name] <= hi + 1e-12
                         for d, (lo, hi) in zip(ranges, bounds, strict=True))
                  and all(r.get(k) == v for k, v in fixed.items() if not isinstance(v, list))]
        x = np.array([max(inside, key=_score)[d.name] for d in ranges], dtype=float)
        fx = f(x)
        steps = np.array([max(1.0, round((hi - lo) / 4)) if d.integer else (hi - lo) / 4
                          for d, (lo, hi) in zip(ranges, bounds, strict=True)])
        floor = np.array([1.0 if d.integer else (hi - lo) / 64
                          for d, (lo, hi) in zip(ranges, bounds, strict=True)])
        while True:
            moved = False
            for j in range(len(ranges)):
                for sgn in (1.0, -1.0):
                    y = x.copy()
                    y[j] = min(max(y[j] + sgn * steps[j], bounds[j][0]), bounds[j][1])
                    if y[j] == x[j]:
                        continue
                    fy = f(y)
                    if fy < fx:
                        x, fx, moved = y, fy, True
                        break
            if not moved:
                if np.all(steps <= floor):
                    break
                steps = np.maximum(floor, np.where(floor == 1.0, np.floor(steps / 2), steps / 2))
    except _Stop:
        pass


def _confirm(family: Family, rows: list[dict], st: SearchSettings, out: Path) -> dict[str, dict]:
    """Validate's verdicts for the violating points (module docstring, step 3)."""
    from fedsim.validation.suites import run_cases

    cands = sorted((r for r in rows if math.isfinite(r["violation_ratio"])
                    and r["violation_ratio"] > 1.0),
                   key=lambda r: -r["violation_ratio"])[: st.confirm]
    if not cands:
        return {}
    cases = []
    for r in cands:
        inst = family.build(json.loads(r["params"]))
        exact = r["measured"] if r["method"] == "exact" else math.nan
        cases.append(inst.case(st.confirm_replicates, key=f"{family.name}-{r['point']}",
                               exact=exact))
    table = run_cases(cases, out / "confirm", workers=st.workers, progress=st.progress,
                      desc="confirmation replicates")
    res = {}
    for r, c in zip(cands, cases, strict=True):
        t = table[table["scenario"] == c.scenario].iloc[0]
        res[r["point"]] = {"verdict": t["verdict"], "ci_low": float(t["ci_low"]),
                           "ci_high": float(t["ci_high"]), "mc_mean": float(t["mean"]),
                           "oracle_z": float(t["oracle_z"])}
    return res


def run_search(family_name: str, space: str, settings: SearchSettings | None = None, *,
               out: str | os.PathLike = "runs/search", fixed: dict[str, Any] | None = None,
               theorem: str | None = None) -> pd.DataFrame:
    """Search ``space`` of ``family_name``; writes ``out/search.csv`` and returns it sorted
    by ``ratio`` (largest first).  ``fixed`` sets parameters outside the space."""
    st = settings or SearchSettings()
    fam = get_family(family_name)
    if theorem is not None:
        require(theorem == fam.theorem, "theorem", theorem,
                f"does not match family {fam.name!r} (theorem {fam.theorem!r})")
    dims = parse_space(space, fam)
    fixed = {k: fam.param(k).coerce(v) for k, v in (fixed or {}).items()}
    both = sorted(set(fixed) & {d.name for d in dims})
    require(not both, "fixed", both, "must not name a parameter that space searches")
    out = Path(out)
    # one writer per run directory, as validate; points in a killable worker process
    # unless workers=1 (search_budget)
    with lock_run_dir(out), point_worker(enabled=st.workers != 1 and st.evals is None):
        return _run_search(fam, dims, space, st, out, fixed)


def _run_search(fam: Family, dims: list, space: str, st: SearchSettings, out: Path,
                fixed: dict[str, Any]) -> pd.DataFrame:
    _DAMAGED["points"] = 0
    atomic_write_json(out / "search.json", {"family": fam.name, "theorem": fam.theorem,
                                            "space": space, "fixed": fixed,
                                            "settings": {**st.__dict__}})
    clock = _Clock(st.budget, st.evals)
    rows: dict[str, dict] = {}
    grid = coarse_grid(dims, st.grid)
    # a seeded random order: a grid cut short by the budget still covers the whole space
    grid = [grid[i] for i in np.random.default_rng(st.seed).permutation(len(grid))]
    bar = _bar(len(grid), f"{fam.name} grid", st.progress)
    stopped = False
    for q in grid:
        if clock.left() <= 0:
            stopped = True
            break
        row = evaluate(fam, {**fixed, **q}, st, out, "grid", time_left=clock.seconds_left())
        if row["point"] not in rows:
            rows[row["point"]] = row
            clock.spend()
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    if not stopped and st.refine > 0:
        top = sorted(rows.values(), key=_score, reverse=True)[: st.refine]
        bar = _bar(st.refine * st.refine_iter * 4 * len(dims), f"{fam.name} refine",
                   st.progress)
        for j, best in enumerate(top):
            if clock.left() <= 0:
                break
            share = clock.share(len(top) - j)   # equal shares of what is left
            _refine(fam, dims, {**best, **fixed}, st, out, share, rows, bar, fixed)
        if bar is not None:
            bar.close()
    conf = _confirm(fam, list(rows.values()), st, out) if st.confirm > 0 else {}
    # a budget spent before the first point leaves no rows: keep the columns (the table, the
    # summary and the page still describe an empty search)
    df = pd.DataFrame(list(rows.values()), columns=None if rows else
                      list(dict.fromkeys([p.name for p in fam.params if p.kind != "list"]
                                         + _COLUMNS)))
    for col in ("verdict", "ci_low", "ci_high", "mc_mean", "oracle_z"):
        df[col] = [conf.get(p, {}).get(col, "" if col == "verdict" else math.nan)
                   for p in df["point"]]
    lead = [p.name for p in fam.params if p.name in df.columns]
    df = df[lead + [c for c in _COLUMNS if c in df.columns and c not in lead]
            + sorted(c for c in df.columns if c not in lead and c not in _COLUMNS)]
    df = df.sort_values(["ratio", "point"], ascending=[False, True], na_position="last",
                        kind="stable")
    if st.evals is not None:  # reproducible: no wall-clock column
        df = df.drop(columns=["seconds"], errors="ignore")
    with atomic_writer(out / "search.csv") as fh:
        df.to_csv(fh, index=False, float_format="%.10g")
    atomic_write_json(out / "summary.json", {
        "points": int(len(df)),
        "refused": int((df["status"] == "REFUSED").sum()) if len(df) else 0,
        "timed_out": int((df["status"] == "TIMEOUT").sum()) if len(df) else 0,
        "seconds": time.perf_counter() - clock.t0,
        "budget_exhausted": clock.left() <= 0,
        "violations": int((df["violation_ratio"] > 1).sum()),
        "confirmed": {k: v["verdict"] for k, v in conf.items()},
        "unconfirmed_violations": int((df["violation_ratio"] > 1).sum()) - len(conf),
        "damaged_points_recomputed": _DAMAGED["points"]})
    return df
