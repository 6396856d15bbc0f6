"""The performance-estimation SDP of a method along a schedule, solved by cvxpy.

``worst = max  metric(G, F)  s.t.  interpolation rows <= 0,  initial condition <= 1,
(heterogeneity <= zeta^2),  G >= 0`` (Taylor, Hendrickx & Glineur 2017, section 3; the
same problem PEPit 0.5.1 builds point by point, here assembled as a few vectorised
constraints so that the K = 40 cell is cheap).  Measures (``x_*`` minimises
``f = (1/n) sum_i f_i``):

* ``dist_sq``: ``||x_K - x_*||^2`` over ``||x_0 - x_*||^2 <= 1``;
* ``f_gap``: ``f(x_K) - f_*`` over ``f(x_0) - f_* <= 1`` (strongly convex only);
* ``f_gap_over_dist``: ``f(x_K) - f_*`` over ``||x_0 - x_*||^2 <= 1`` (strongly convex,
  convex Lipschitz); ``min_f_gap_over_dist``: ``min_{k <= K} f(x_k) - f_*`` over the same
  (PEPit's ``subgradient_method`` example; for the convex Lipschitz class the value at
  ``||x_0 - x_*|| = R`` is ``R`` times this one, for the smooth classes ``R^2`` times);
* ``min_grad_sq``: the minimum of ``||grad f(x_k)||^2`` over ``k = 0..K`` (PEPit's
  example); ``avg_grad_sq``: ``(1/K) sum_{k<K} ||grad f(x_k)||^2`` ([P]'s Theorem 1
  quantity, THEORY_SPEC 3.a); both over ``f(x_0) - f_* <= 1`` (strongly convex) or
  ``f(x_0) - f(x_K) <= 1``
  (nonconvex, PEPit's ``examples/nonconvex_optimization/gradient_descent.py``; since
  ``f(x_K) >= f_*`` the value bounds the worst case over ``f(x_0) - f_* <= 1`` from above).
  ``nonconvex_norm = "f_star"`` (nonconvex only) normalises by ``f(x_0) - f_* <= 1``
  instead: one more point ``x_*`` with ``grad f(x_*) = 0`` and value ``f_*`` (the origin,
  value 0), its interpolation rows with every other point, and at every point, ``x_K``
  included, ``f_* <= f(x_i) - ||grad f(x_i)||^2 / (2L)`` (the descent lemma at
  ``x_i - grad f(x_i)/L``: every L-smooth function has a point that low, so its infimum
  is too).  Every L-smooth function with a minimiser satisfies these constraints, so the value
  is again an upper bound of the worst case over ``f(x_0) - inf f <= 1``, and no larger than
  ``"f_K"``'s (``f_* <= f(x_K)``).  It is a **relaxation**: ``f_*`` is asked to be below
  what the method's points and the descent lemma force, not below the function everywhere.

Heterogeneity at ``x_*`` (``zeta_sq``): one function per client with
``(1/n) sum_i ||grad f_i(x_*)||^2 <= zeta^2``, PEPit's ``stochastic_and_randomized_convex_
minimization/sgd.py`` constraint.

The result carries the solver, its status (cvxpy's: ``optimal``, ``optimal_inaccurate``,
``infeasible``, ... or ``solver_error``), the wall time, the dual certificate (the
multipliers of every constraint and the PSD dual) and the primal Gram matrix.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fedsim.errors import require
from fedsim.worstcase.classes import FunctionClass
from fedsim.worstcase.gram import Lin, Points
from fedsim.worstcase.schedule import Schedule

__all__ = ["Certificate", "PEPResult", "MEASURES", "NONCONVEX_NORMS", "SOLVERS", "solve_pep",
           "build_pep"]

MEASURES = ("dist_sq", "f_gap", "f_gap_over_dist", "min_f_gap_over_dist", "min_grad_sq",
            "avg_grad_sq")
#: the nonconvex class's normalisations (module doc)
NONCONVEX_NORMS = ("f_K", "f_star")
#: solver name -> cvxpy keyword arguments.  Clarabel 0.11 factors its KKT system with faer
#: on every core by default; on a shared machine its two threads wait for each other at
#: every synchronisation (benchmarks/worst_case.py, docs/theory/worst-case.md "Solver
#: time"), and one thread costs the same CPU time and gives the same bits run to run.
SOLVERS: dict[str, dict[str, Any]] = {
    "CLARABEL": {"max_threads": 1},
    "SCS": {"eps_abs": 1e-7, "eps_rel": 1e-7, "max_iters": 200_000},
}


@dataclass(frozen=True)
class Certificate:
    """The dual of the PEP: ``interpolation[r] >= 0`` multiplies row ``r`` (pair
    ``pairs[r] = (function, a, b)``), ``initial`` the initial condition, ``heterogeneity``
    the zeta constraint, ``metrics`` the measure's epigraph rows, ``psd`` the dual matrix of
    ``G >= 0``.  ``value = initial + heterogeneity * zeta^2`` is the dual bound."""

    interpolation: np.ndarray
    pairs: np.ndarray
    initial: float
    heterogeneity: float
    metrics: np.ndarray
    psd: np.ndarray
    value: float


@dataclass(frozen=True)
class PEPResult:
    """One solve: ``value`` (NaN when the solver gave none), ``status``, ``solver``,
    ``seconds`` (set-up and solve), ``certificate`` (``None`` without duals), the primal
    ``gram`` and ``values`` (function values), the problem's size (``gram``: its dimension,
    ``values``, ``interpolation_rows``, ``constraints``: the scalar rows cvxpy hands the
    solver, the PSD cone's triangle included) and ``timing`` (``assembly``: the Gram rows,
    ``canonicalisation``: cvxpy's, ``solve``: the solver's own, in seconds)."""

    value: float
    status: str
    solver: str
    seconds: float
    certificate: Certificate | None
    gram: np.ndarray | None = field(repr=False, default=None)
    values: np.ndarray | None = field(repr=False, default=None)
    size: dict[str, int] = field(default_factory=dict)
    #: the interpolation points the Gram matrix's basis describes (solved at ``L = 1``)
    points: Points | None = field(repr=False, default=None)
    timing: dict[str, float] = field(default_factory=dict)

    @property
    def accurate(self) -> bool:
        """The solver reports ``optimal`` (not ``optimal_inaccurate`` or a failure)."""
        return self.status == "optimal"


@dataclass
class PEPData:
    """The assembled problem: interpolation rows, the metric rows and the initial
    condition, all as ``(Gram coefficients (·, m*m), value coefficients (·, nF))``."""

    m: int
    nF: int
    QG: np.ndarray
    QF: np.ndarray
    pairs: np.ndarray
    metric_G: np.ndarray
    metric_F: np.ndarray
    init_G: np.ndarray
    init_F: np.ndarray
    zeta_G: np.ndarray | None
    zeta_sq: float
    #: the interpolation points (:class:`~fedsim.worstcase.gram.Points`): what the Gram
    #: matrix's basis means (:mod:`fedsim.worstcase.interpolant` reads it)
    points: Points | None = None
    #: ``nonconvex_norm = "f_star"``: rows ``||g_i||^2/(2L) - f_i <= 0`` (``f_* = 0``)
    star_G: np.ndarray | None = None
    star_F: np.ndarray | None = None
    #: the class's single-point rows ``point_G . vec(G) <= point_rhs``
    #: (:meth:`~fedsim.worstcase.classes.FunctionClass.point_rows`)
    point_G: np.ndarray | None = None
    point_rhs: np.ndarray | None = None


def _vec(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return np.outer(u, v).ravel()


def build_pep(method: Any, fclass: FunctionClass, schedule: Schedule, measure: str,
              zeta_sq: float | None = None, nonconvex_norm: str = "f_K") -> PEPData:
    """The PEP of ``method`` along ``schedule`` over ``fclass`` (module doc)."""
    require(measure in MEASURES, "measure", measure, f"must be one of {MEASURES}")
    require(nonconvex_norm in NONCONVEX_NORMS, "nonconvex_norm", nonconvex_norm,
            f"must be one of {NONCONVEX_NORMS}")
    if fclass.kind == "nonconvex":
        require(measure in ("min_grad_sq", "avg_grad_sq"), "measure", measure,
                "must be min_grad_sq or avg_grad_sq for the nonconvex class")
    if fclass.kind == "convex_lipschitz":
        require(measure in ("f_gap_over_dist", "min_f_gap_over_dist"), "measure", measure,
                "must be f_gap_over_dist or min_f_gap_over_dist for the convex Lipschitz "
                "class")
    hetero = zeta_sq is not None
    nonconvex = fclass.kind == "nonconvex"
    star_bound = nonconvex and nonconvex_norm == "f_star"
    if hetero:
        require(zeta_sq >= 0 and not nonconvex, "zeta_sq", zeta_sq,
                "must be >= 0, and only with the strongly convex class")
    pts = Points(functions=schedule.n if hetero else 1, star=not nonconvex or star_bound)
    xs = method.iterates(schedule, pts.grad, pts.x0)
    K = len(xs) - 1
    # the measure's points first, so that they exist when the sizes are fixed
    metric_lins: list[tuple[Lin | None, Any]] = []
    if measure == "dist_sq":
        metric_lins = [(xs[K], None)]
    elif measure in ("f_gap", "f_gap_over_dist"):
        metric_lins = [(None, pts.mean_value(xs[K]))]
    elif measure == "min_f_gap_over_dist":
        metric_lins = [(None, pts.mean_value(x)) for x in xs]
    elif measure == "min_grad_sq":
        metric_lins = [(pts.mean_grad(x), None) for x in xs]
    else:
        metric_lins = [(pts.mean_grad(x), None) for x in xs[:K]]
    init_f = None
    if measure not in ("dist_sq", "f_gap_over_dist", "min_f_gap_over_dist"):
        init_f = [pts.mean_value(xs[0])]
        if nonconvex and not star_bound:
            init_f.append(pts.mean_value(xs[K]))
        elif star_bound:  # x_K a point too, so that f_* <= f(x_K): no looser than "f_K"
            pts.mean_value(xs[K])
    m, nF = pts.size, pts.n_values

    blocks = [fclass.rows(p, m) for p in pts.per_function]
    QG = np.concatenate([b[0] for b in blocks])
    fa = np.concatenate([b[1] for b in blocks])
    fb = np.concatenate([b[2] for b in blocks])
    QF = np.zeros((QG.shape[0], nF))
    r = np.arange(QG.shape[0])
    ok = fa >= 0
    QF[r[ok], fa[ok]] -= 1.0
    ok = fb >= 0
    QF[r[ok], fb[ok]] += 1.0
    pairs = np.concatenate([np.column_stack([np.full(len(b[1]), i), b[1], b[2]])
                            for i, b in enumerate(blocks)])

    def f_row(w_idx):
        row = np.zeros(nF)
        w, idx = w_idx
        np.add.at(row, idx[idx >= 0], w[idx >= 0])
        return row

    mG, mF = [], []
    for lin, fv in metric_lins:
        if lin is not None:
            v = lin.dense(m)
            mG.append(_vec(v, v))
            mF.append(np.zeros(nF))
        else:
            mG.append(np.zeros(m * m))
            mF.append(f_row(fv))
    metric_G, metric_F = np.array(mG), np.array(mF)
    if measure == "avg_grad_sq":
        metric_G = metric_G.mean(axis=0, keepdims=True)
        metric_F = metric_F.mean(axis=0, keepdims=True)
    if init_f is None:
        e0 = pts.x0.dense(m)
        init_G, init_F = _vec(e0, e0), np.zeros(nF)
    else:
        init_G = np.zeros(m * m)
        init_F = f_row(init_f[0]) - (f_row(init_f[1]) if len(init_f) > 1 else 0.0)
    pr = [fclass.point_rows(p, m) for p in pts.per_function]
    point_G = np.concatenate([r[0] for r in pr])
    point_rhs = np.concatenate([r[1] for r in pr])
    star_G, star_F = [], []
    for p in (pts.per_function[0] if star_bound else []):
        if p.f >= 0:  # f_* <= f_i - ||g_i||^2 / (2L), the descent lemma (module doc)
            gv = p.g.dense(m)
            star_G.append(_vec(gv, gv) / (2.0 * fclass.L))
            row = np.zeros(nF)
            row[p.f] = -1.0
            star_F.append(row)
    star_G, star_F = np.array(star_G).reshape(-1, m * m), np.array(star_F).reshape(-1, nF)
    zeta_G = None
    if hetero:
        zeta_G = np.zeros(m * m)
        for p in pts.per_function:
            g = p[0].g.dense(m)
            zeta_G += _vec(g, g) / pts.functions
    return PEPData(m=m, nF=nF, QG=QG, QF=QF, pairs=pairs, metric_G=metric_G,
                   metric_F=metric_F, init_G=init_G, init_F=init_F, zeta_G=zeta_G,
                   zeta_sq=float(zeta_sq or 0.0), points=pts,
                   star_G=star_G if star_bound else None, star_F=star_F if star_bound else None,
                   point_G=point_G if len(point_rhs) else None, point_rhs=point_rhs)


def solve_data(data: PEPData, solver: str = "CLARABEL") -> PEPResult:
    """Solve an assembled PEP with ``solver`` (:data:`SOLVERS`)."""
    import cvxpy as cp

    require(solver in SOLVERS, "solver", solver, f"must be one of {list(SOLVERS)}")
    t0 = time.perf_counter()
    m, nF = data.m, data.nF
    G = cp.Variable((m, m), symmetric=True)
    F = cp.Variable(nF)
    t = cp.Variable()
    g = cp.vec(G, order="C")
    cons = [data.QG @ g + data.QF @ F <= 0,
            t <= data.metric_G @ g + data.metric_F @ F,
            data.init_G @ g + data.init_F @ F <= 1.0,
            G >> 0]
    if data.zeta_G is not None:
        cons.append(data.zeta_G @ g <= data.zeta_sq)
    if data.star_G is not None:
        cons.append(data.star_G @ g + data.star_F @ F <= 0)
    if data.point_G is not None:
        cons.append(data.point_G @ g <= data.point_rhs)
    prob = cp.Problem(cp.Maximize(t), cons)
    size = {"gram": m, "values": nF, "interpolation_rows": int(data.QG.shape[0])}
    timing: dict[str, float] = {}
    try:
        with warnings.catch_warnings():  # "may be inaccurate": the status says so
            warnings.simplefilter("ignore", UserWarning)
            t1 = time.perf_counter()
            stuff = prob.get_problem_data(getattr(cp, solver))[0]
            timing["canonicalisation"] = time.perf_counter() - t1
            size["constraints"] = int(stuff["A"].shape[0])
            prob.solve(solver=getattr(cp, solver), **SOLVERS[solver])  # reuses the cache
        status = str(prob.status)
        timing["solve"] = float(prob.solver_stats.solve_time or float("nan"))
    except cp.error.SolverError as exc:
        status = f"solver_error: {str(exc).splitlines()[0] if str(exc) else exc!r}"
    seconds = time.perf_counter() - t0
    value = float(prob.value) if status.startswith("optimal") and prob.value is not None \
        else float("nan")
    cert = None
    if status.startswith("optimal") and cons[0].dual_value is not None:
        lam_init = float(cons[2].dual_value)
        lam_zeta = float(cons[4].dual_value) if data.zeta_G is not None else 0.0
        cert = Certificate(interpolation=np.asarray(cons[0].dual_value, dtype=np.float64),
                           pairs=data.pairs, initial=lam_init, heterogeneity=lam_zeta,
                           metrics=np.atleast_1d(np.asarray(cons[1].dual_value, np.float64)),
                           psd=np.asarray(cons[3].dual_value, dtype=np.float64),
                           value=lam_init + lam_zeta * data.zeta_sq)
    gram = None if G.value is None else np.asarray(G.value, dtype=np.float64)
    vals = None if F.value is None else np.asarray(F.value, dtype=np.float64)
    return PEPResult(value=value, status=status, solver=solver, seconds=seconds,
                     certificate=cert, gram=gram, values=vals, size=size, points=data.points,
                     timing=timing)


#: measures whose value scales like L under f -> f / L (the others are invariant)
SCALE_WITH_L = ("f_gap_over_dist", "min_f_gap_over_dist", "min_grad_sq", "avg_grad_sq")


def solve_pep(method: Any, fclass: FunctionClass, schedule: Schedule, measure: str = "dist_sq",
              zeta_sq: float | None = None, solver: str = "CLARABEL",
              nonconvex_norm: str = "f_K") -> PEPResult:
    """Build and solve the PEP (:func:`build_pep`, :func:`solve_data`); the time includes
    the assembly.

    Solved at ``L = 1``: ``f`` is in the class of ``(L, mu)`` iff ``f / L`` is in that of
    ``(1, mu/L)``, and the method's iterates on ``f`` with step ``eta`` are its iterates on
    ``f / L`` with step ``eta L``; ``dist_sq`` and ``f_gap`` are invariant, the other measures
    (:data:`SCALE_WITH_L`) and ``zeta^2`` scale like ``L`` -- an unscaled ``L = 1e-3`` is
    badly conditioned for both solvers.  The returned Gram matrix and certificate are the
    ``L = 1`` problem's."""
    from dataclasses import replace

    t0 = time.perf_counter()
    L = fclass.L
    unit = FunctionClass(kind=fclass.kind, L=1.0, mu=fclass.mu / L)
    m1 = replace(method, eta=method.eta * L)
    z1 = None if zeta_sq is None else zeta_sq / (L * L)
    data = build_pep(m1, unit, schedule, measure, z1, nonconvex_norm)
    assembly = time.perf_counter() - t0
    res = solve_data(data, solver)
    value = res.value * (L if measure in SCALE_WITH_L else 1.0)
    return PEPResult(value=value, status=res.status, solver=res.solver,
                     seconds=time.perf_counter() - t0, certificate=res.certificate,
                     gram=res.gram, values=res.values, size=res.size, points=res.points,
                     timing={"assembly": assembly, **res.timing})
