"""Rate certificates for time-invariant schedules: a Lyapunov SDP (issue 32, item 3).

For a periodic delay pattern ``d_0, ..., d_{p-1}`` in steady state (``tau = max d``), the
state at step ``k`` is ``s_k = (x_{k - tau}, ..., x_k)``; one period maps it to
``s_{k+p}`` with step ``k + i`` applying the method to ``x_{k + i - d_i}``
(:mod:`fedsim.worstcase.methods`, with the window as history).  A quadratic Lyapunov
function with function-value terms (Taylor, Van Scoy & Lessard 2018, "Lyapunov functions
for first-order methods: tight automated convergence guarantees", ICML, section 3)

    ``V(s) = sum_{ij} P_ij <s_i - x_*, s_j - x_*> + sum_j p_j (f(s_j) - f_*)``,
    ``P >= e e^T`` (``e`` selects ``x_k``), ``p >= 0``,

certifies ``||x_{k} - x_*||^2 <= V(s_k) <= rho^(k/p) V(s_0)`` if
``V(s_{k+p}) - rho V(s_k) - sum_ab lambda_ab c_ab`` is a non-positive quadratic form with no
function-value terms, for some ``lambda >= 0`` multiplying the interpolation conditions
``c_ab <= 0`` (:mod:`fedsim.worstcase.classes`) of all pairs of points met in the period
(the window, the new iterates, local iterates and ``x_*``): an S-procedure, so every
function of the class obeys it.  ``rho`` is found by bisection on feasibility.  With
``x_j = x_0`` for ``j < 0`` (issue 32's convention) ``s_0 = (x_0, ..., x_0)`` and
``V(s_0) <= C ||x_0 - x_*||^2`` with ``C = 1^T P 1 + (L/2) sum p``.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np

from fedsim.errors import require
from fedsim.worstcase.classes import FunctionClass
from fedsim.worstcase.gram import Lin, Points
from fedsim.worstcase.pep import SOLVERS
from fedsim.worstcase.schedule import Contribution

__all__ = ["RateCertificate", "rate_certificate"]


@dataclass(frozen=True)
class RateCertificate:
    """``rho``: the certified per-server-step rate of ``||x_k - x_*||^2`` (``nan``: none
    certified below 1); ``period_rho`` the per-period factor; ``P``, ``p``, ``C`` the
    Lyapunov function and its constant; ``status`` the solver's at ``rho``; ``solves`` and
    ``seconds`` the bisection's cost."""

    rho: float
    period_rho: float
    status: str
    seconds: float
    solves: int
    P: np.ndarray | None
    p: np.ndarray | None
    C: float
    pattern: tuple[int, ...]


def _lyapunov_data(method: Any, fclass: FunctionClass, pattern: Sequence[int]):
    tau = max(pattern)
    pts = Points(functions=1, star=True)
    hist = [pts.x0] + [Lin({pts.new_basis(): 1.0}) for _ in range(tau)]  # x_{k-tau}..x_k
    steps = tuple((Contribution(client=0, read=tau + i - d, stale=d),)
                  for i, d in enumerate(pattern))
    xs = method.iterates(SimpleNamespace(steps=steps), pts.grad, None, history=hist)
    old, new = xs[:tau + 1], xs[len(xs) - tau - 1:]
    f_old = [pts.point(0, x).f for x in old]
    f_new = [pts.point(0, x).f for x in new]
    m, nF = pts.size, pts.n_values
    S = tau + 1

    def gram_basis(states):
        vs = [x.dense(m) for x in states]
        return np.array([np.outer(vs[i], vs[j]).ravel() for i in range(S) for j in range(S)])

    def value_basis(fidx):
        B = np.zeros((S, nF))
        B[np.arange(S), fidx] = 1.0
        return B

    QG, fa, fb = fclass.rows(pts.per_function[0], m)
    QF = np.zeros((QG.shape[0], nF))
    r = np.arange(QG.shape[0])
    QF[r[fa >= 0], fa[fa >= 0]] -= 1.0
    QF[r[fb >= 0], fb[fb >= 0]] += 1.0
    return dict(m=m, S=S, Bold=gram_basis(old), Bnew=gram_basis(new), Cold=value_basis(f_old),
                Cnew=value_basis(f_new), QG=QG, QF=QF)


def _feasible(d: dict, rho: float, solver: str) -> tuple[bool, str, Any, Any]:
    import cvxpy as cp

    m, S = d["m"], d["S"]
    P = cp.Variable((S, S), symmetric=True)
    p = cp.Variable(S, nonneg=True)
    lam = cp.Variable(d["QG"].shape[0], nonneg=True)
    vP = cp.vec(P, order="C")
    Mvec = d["Bnew"].T @ vP - rho * (d["Bold"].T @ vP) - d["QG"].T @ lam
    M = cp.reshape(Mvec, (m, m), order="C")
    e = np.zeros((S, S))
    e[S - 1, S - 1] = 1.0
    cons = [(M + M.T) / 2 << 0, P - e >> 0,
            d["Cnew"].T @ p - rho * (d["Cold"].T @ p) - d["QF"].T @ lam == 0]
    prob = cp.Problem(cp.Minimize(0), cons)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            prob.solve(solver=getattr(cp, solver), **SOLVERS[solver])
        status = str(prob.status)
    except cp.error.SolverError as exc:
        status = f"solver_error: {exc}"
    ok = status == "optimal"
    return ok, status, (P.value if ok else None), (p.value if ok else None)


def rate_certificate(method: Any, fclass: FunctionClass, pattern: Sequence[int],
                     tol: float = 1e-6, solver: str = "CLARABEL") -> RateCertificate:
    """The smallest ``rho`` (to ``tol``) the Lyapunov SDP certifies for the periodic delay
    pattern ``pattern`` (``[tau]``: constant tau), strongly convex class (module doc)."""
    require(fclass.kind == "strongly_convex" and fclass.mu > 0, "function_class", fclass.kind,
            "must be strongly convex with mu > 0 for a rate certificate")
    pat = tuple(int(x) for x in pattern)
    require(len(pat) > 0 and min(pat) >= 0, "pattern", list(pat), "must be delays >= 0")
    t0 = time.perf_counter()
    d = _lyapunov_data(method, fclass, pat)
    solves = 1
    ok, status, P, p = _feasible(d, 1.0, solver)
    if not ok:
        return RateCertificate(rho=float("nan"), period_rho=float("nan"), status=status,
                               seconds=time.perf_counter() - t0, solves=solves, P=None,
                               p=None, C=float("nan"), pattern=pat)
    lo, hi = 0.0, 1.0
    best = (status, P, p)
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        ok, st, Pm, pm = _feasible(d, mid, solver)
        solves += 1
        if ok:
            hi, best = mid, (st, Pm, pm)
        else:
            lo = mid
    status, P, p = best
    C = float(np.sum(P) + fclass.L / 2 * np.sum(p))
    return RateCertificate(rho=float(hi ** (1.0 / len(pat))), period_rho=float(hi),
                           status=status, seconds=time.perf_counter() - t0, solves=solves,
                           P=np.asarray(P), p=np.asarray(p), C=C, pattern=pat)
