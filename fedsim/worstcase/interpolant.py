"""The Gram-interpolant witness: a concrete function of the class built from a solved PEP.

The PEP's Gram matrix ``G`` and values ``F`` describe points ``(x_i, g_i, f_i)`` of each
client's function (:mod:`fedsim.worstcase.gram`).  Factoring ``G = V^T V`` gives them as
vectors of ``R^r``; this module builds a function of the class through them and returns
it with its exact minimum.

* **Reduction to smooth convex interpolation.**  ``f`` is L-smooth and mu-strongly convex
  iff ``phi = f - mu ||x||^2/2`` is convex and ``(L - mu)``-smooth (Taylor, Hendrickx &
  Glineur 2017, Math. Program. 161, section 3.1 and Theorem 4); ``f`` is L-smooth
  (nonconvex) iff ``phi = f + L ||x||^2/2`` is convex and ``2L``-smooth (both ``L||x||^2/2 +/-
  f`` convex; cocoercivity of ``grad phi`` with ``M = 2L`` gives
  ``||grad f(x) - grad f(y)|| <= L ||x - y||``, and its interpolation inequality is exactly
  PEPit 0.5.1's ``SmoothFunction`` condition, :mod:`fedsim.worstcase.classes`).
* **Smooth convex interpolant** (``F_{0,M}``, the conjugate route of Taylor et al. 2017,
  Theorem 1: ``phi`` is ``M``-smooth convex iff ``phi^*`` is ``1/M``-strongly convex).
  With ``gamma_i = grad phi(x_i)``, ``s_i = x_i - gamma_i / M`` and
  ``c_i = <gamma_i, x_i> - phi_i - ||gamma_i||^2/(2M) - <s_i, gamma_i>``, the function
  ``h(y) = max_i (c_i + <s_i, y>)`` is convex and ``phi^* = h + ||.||^2/(2M)``, so
  ``phi(x) = min_{a in simplex} M/2 ||x - S a||^2 - c^T a`` and ``grad phi(x) = M (x - S a*)``.
  It is a member of ``F_{0,M}`` whatever the data (a conjugate of a ``1/M``-strongly convex
  function); it passes through the data (``phi(x_i) = phi_i``, ``grad phi(x_i) = gamma_i``)
  when the data satisfy the interpolation conditions -- the PEP's constraints, to solver
  tolerance.  So the witness is always a genuine function of the class; that it
  reproduces the PEP value is what the tests check.
* **Exact minimum.**  Strongly convex: ``f_* = min_a (M mu / (2 (M + mu))) ||S a||^2 - c^T a``
  at ``x_* = M S a / (M + mu)`` (a convex QP in ``a``).  Nonconvex (``M = 2L``):
  ``min_x f = min_a (-L ||S a||^2 - c^T a)``, concave in ``a``, hence ``min_j (-L ||s_j||^2
  - c_j)`` at ``x = 2 s_j``: exact, no search.

The inner problem (a QP over the simplex with one variable per point) is solved by cvxpy
with Clarabel and then polished on its support by the KKT linear system.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fedsim.errors import require
from fedsim.worstcase.classes import FunctionClass
from fedsim.worstcase.pep import SOLVERS

__all__ = ["ConvexInterpolant", "ClassInterpolant", "gram_vectors", "interpolants_of",
           "interpolation_data", "class_interpolant"]

#: eigenvalues of G below this fraction of the largest are dropped (solver noise)
RANK_RTOL = 1e-10


def gram_vectors(gram: np.ndarray) -> np.ndarray:
    """``V`` (``r x m``) with ``V^T V ~= G``: the basis vectors as columns of ``R^r``."""
    w, U = np.linalg.eigh(0.5 * (gram + gram.T))
    keep = w > RANK_RTOL * max(float(w.max()), 1e-300)
    return (U[:, keep] * np.sqrt(w[keep])).T


def _simplex_qp(H: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``argmin_{a >= 0, sum a = 1} a^T H a / 2 + q^T a`` (Clarabel, then a KKT polish on the
    support: exact when the support is right, else Clarabel's point)."""
    import cvxpy as cp

    P = len(q)
    if P == 1:
        return np.ones(1)
    a = cp.Variable(P)
    Hs = 0.5 * (H + H.T) + 1e-14 * np.trace(H) / P * np.eye(P)
    prob = cp.Problem(cp.Minimize(0.5 * cp.quad_form(a, cp.psd_wrap(Hs)) + q @ a),
                      [a >= 0, cp.sum(a) == 1])
    prob.solve(solver=cp.CLARABEL, **SOLVERS["CLARABEL"])
    a0 = np.clip(np.asarray(a.value, dtype=np.float64), 0.0, None)
    a0 /= a0.sum()
    sup = np.nonzero(a0 > 1e-7)[0]
    k = len(sup)
    A = np.zeros((k + 1, k + 1))
    A[:k, :k] = H[np.ix_(sup, sup)]
    A[:k, k] = A[k, :k] = 1.0
    sol = np.linalg.lstsq(A, np.concatenate([-q[sup], [1.0]]), rcond=None)[0]
    if np.all(sol[:k] >= -1e-12):
        a1 = np.zeros(P)
        a1[sup] = np.clip(sol[:k], 0.0, None)
        a1 /= a1.sum()
        obj = lambda v: 0.5 * v @ H @ v + q @ v  # noqa: E731
        if obj(a1) <= obj(a0) + 1e-14 * (1.0 + abs(obj(a0))):
            return a1
    return a0


@dataclass(frozen=True)
class ConvexInterpolant:
    """``phi(x) = min_{a in simplex} M/2 ||x - S a||^2 - c^T a`` (module doc): ``S`` holds the
    ``s_i`` as columns."""

    M: float
    S: np.ndarray
    c: np.ndarray

    @classmethod
    def through(cls, M: float, X: np.ndarray, Gm: np.ndarray, Fv: np.ndarray
                ) -> ConvexInterpolant:
        """The interpolant of the points ``X[i]`` with gradients ``Gm[i]`` and values
        ``Fv[i]`` (rows)."""
        S = X - Gm / M
        c = (np.einsum("ij,ij->i", Gm, X) - Fv - np.einsum("ij,ij->i", Gm, Gm) / (2 * M)
             - np.einsum("ij,ij->i", S, Gm))
        return cls(M=float(M), S=S.T.copy(), c=c)

    def evaluate(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """``(phi(x), grad phi(x))``."""
        H = self.M * self.S.T @ self.S
        q = -self.M * self.S.T @ x - self.c
        a = _simplex_qp(H, q)
        p = self.S @ a
        return float(self.M / 2 * (x - p) @ (x - p) - self.c @ a), self.M * (x - p)


@dataclass(frozen=True)
class ClassInterpolant:
    """A function of ``fclass`` (module doc): ``f = phi + shift ||x||^2 / 2`` with ``shift = mu``
    (strongly convex) or ``-L`` (nonconvex); ``scale`` multiplies values and gradients (the PEP
    is solved at ``L = 1``, :func:`fedsim.worstcase.pep.solve_pep`)."""

    phi: ConvexInterpolant
    shift: float
    scale: float = 1.0
    kind: str = "strongly_convex"
    _memo: dict = field(default_factory=dict, repr=False, compare=False)

    def evaluate(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """``(f(x), grad f(x))`` (memoised on the point)."""
        x = np.asarray(x, dtype=np.float64)
        k = x.tobytes()
        if k not in self._memo:
            v, g = self.phi.evaluate(x)
            self._memo[k] = (self.scale * (v + self.shift / 2 * x @ x),
                             self.scale * (g + self.shift * x))
        return self._memo[k]

    def value(self, x: np.ndarray) -> float:
        return self.evaluate(x)[0]

    def grad(self, x: np.ndarray) -> np.ndarray:
        return self.evaluate(x)[1]

    def minimum(self) -> tuple[float, np.ndarray]:
        """``(f_*, a minimiser)``, exact (module doc)."""
        S, c, M = self.phi.S, self.phi.c, self.phi.M
        if self.kind == "nonconvex":
            L = -self.shift
            vals = -L * np.einsum("ij,ij->j", S, S) - c
            j = int(np.argmin(vals))
            return self.scale * float(vals[j]), 2.0 * S[:, j]
        mu = self.shift
        a = _simplex_qp(M * mu / (M + mu) * S.T @ S, -c)
        p = S @ a
        return (self.scale * float(M * mu / (2 * (M + mu)) * p @ p - c @ a),
                M * p / (M + mu))


def interpolation_data(pep: Any) -> tuple[list[tuple[np.ndarray, np.ndarray, np.ndarray]],
                                          np.ndarray]:
    """The points of a solved PEP (:class:`~fedsim.worstcase.pep.PEPResult`) as vectors of
    ``R^r``: per function ``(X, Gr, Fv)`` (rows ``x_i``, ``g_i`` and the values ``f_i``, the
    PEP's own scale ``L = 1``), and ``V`` (the basis vectors, :func:`gram_vectors`)."""
    require(pep.gram is not None and pep.values is not None and pep.points is not None,
            "pep", pep.status, "must be a solved PEP with its Gram matrix and points")
    V = gram_vectors(pep.gram)
    out = []
    for pts in pep.points.per_function:
        X = np.array([V @ p.x.dense(V.shape[1]) for p in pts])
        Gr = np.array([V @ p.g.dense(V.shape[1]) for p in pts])
        Fv = np.array([0.0 if p.f < 0 else float(pep.values[p.f]) for p in pts])
        out.append((X, Gr, Fv))
    return out, V


def class_interpolant(X: np.ndarray, Gr: np.ndarray, Fv: np.ndarray,
                      fclass: FunctionClass) -> ClassInterpolant:
    """The :class:`ClassInterpolant` of ``fclass`` through the points ``X`` with gradients
    ``Gr`` and values ``Fv`` given at ``L = 1`` (:func:`interpolation_data`; the function
    returned is scaled by ``fclass.L``)."""
    L = fclass.L
    mu1 = fclass.mu / L if fclass.kind == "strongly_convex" else 0.0
    M, shift = ((1.0 - mu1, mu1) if fclass.kind == "strongly_convex" else (2.0, -1.0))
    sq = np.einsum("ij,ij->i", X, X)
    phi = ConvexInterpolant.through(M, X, Gr - shift * X, Fv - shift / 2 * sq)
    return ClassInterpolant(phi=phi, shift=shift, scale=L, kind=fclass.kind)


def interpolants_of(pep: Any, fclass: FunctionClass) -> tuple[list[ClassInterpolant],
                                                              np.ndarray]:
    """One :class:`ClassInterpolant` per function of a solved PEP
    (:class:`~fedsim.worstcase.pep.PEPResult`) and ``V`` (the basis vectors): the PEP was
    solved at ``L = 1`` with ``mu / L``, the functions returned are of ``fclass``."""
    data, V = interpolation_data(pep)
    return [class_interpolant(X, Gr, Fv, fclass) for X, Gr, Fv in data], V
