"""Function classes by their interpolation conditions, as rows of linear constraints in
the Gram matrix and the function values (one row per ordered pair of points).

* L-smooth mu-strongly convex (0 <= mu < L): Taylor, Hendrickx & Glineur (2017), "Smooth
  strongly convex interpolation and exact worst-case performance of first-order methods",
  Math. Program. 161, Theorem 4 -- for every pair ``(a, b)``
  ``f_a >= f_b + <g_b, x_a - x_b> + ||g_a - g_b||^2 / (2L)
  + mu / (2 (1 - mu/L)) ||x_a - x_b - (g_a - g_b)/L||^2``
  (PEPit 0.5.1, ``SmoothStronglyConvexFunction.set_smoothness_strong_convexity_constraint_i_j``);
* L-smooth (nonconvex): the same paper's smooth class as PEPit 0.5.1's ``SmoothFunction``
  writes it (its ``set_smoothness_i_j``, citing Taylor et al. 2017 [1, Theorem 3.10]):
  ``f_a - f_b >= -L/4 ||x_a - x_b||^2 + <g_a + g_b, x_a - x_b>/2 + ||g_a - g_b||^2/(4L)``.

* convex and L-Lipschitz (``convex_lipschitz``; ``L`` is the Lipschitz constant, a bound
  on every subgradient's norm): Taylor, Hendrickx & Glineur (2017), "Exact worst-case
  performance of first-order methods for composite convex optimization", SIAM J. Optim.
  27(3), Theorem 3.5, as PEPit
  0.5.1's ``ConvexLipschitzFunction`` writes it -- ``f_a >= f_b + <g_b, x_a - x_b>`` for every
  pair and ``||g_i||^2 <= L^2`` at every point (:meth:`FunctionClass.point_rows`); the
  oracle is a subgradient, one per point (a deterministic oracle, as fedsim's problems
  have: PEPit's ``reuse_gradient=True``; PEPit's default for this class draws a new
  subgradient at every call).

A row is ``q_ab . vec(G) - f_a + f_b <= 0``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedsim.errors import require
from fedsim.worstcase.gram import Point

__all__ = ["FunctionClass", "CLASSES"]


def _outer_rows(U: np.ndarray, V: np.ndarray) -> np.ndarray:
    """Row ``r``: ``vec(U[r] V[r]^T)``, so that ``row . vec(G) = U[r]^T G V[r]``."""
    return (U[:, :, None] * V[:, None, :]).reshape(U.shape[0], -1)


@dataclass(frozen=True)
class FunctionClass:
    """``kind`` ``"strongly_convex"`` (needs ``0 <= mu < L``), ``"nonconvex"`` (L-smooth;
    ``mu`` ignored) or ``"convex_lipschitz"`` (``L`` the Lipschitz constant; ``mu``
    ignored)."""

    kind: str
    L: float
    mu: float = 0.0

    def __post_init__(self) -> None:
        require(self.kind in CLASSES, "function_class", self.kind, f"must be one of {CLASSES}")
        require(self.L > 0 and np.isfinite(self.L), "L", self.L, "must be finite and > 0")
        if self.kind == "strongly_convex":
            require(0 <= self.mu < self.L, "mu", self.mu, f"must be in [0, L = {self.L})")

    def rows(self, points: list[Point], m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(QG, fa, fb)`` for every ordered pair of distinct points: the Gram rows and the
        value indices (``-1``: the value 0)."""
        P = len(points)
        if P < 2:
            return np.zeros((0, m * m)), np.zeros(0, np.int64), np.zeros(0, np.int64)
        a, b = np.nonzero(~np.eye(P, dtype=bool))
        X = np.array([p.x.dense(m) for p in points])
        Gr = np.array([p.g.dense(m) for p in points])
        fidx = np.array([p.f for p in points])
        dx = X[a] - X[b]
        dg = Gr[a] - Gr[b]
        L, mu = self.L, self.mu
        if self.kind == "convex_lipschitz":
            QG = _outer_rows(Gr[b], dx)
        elif self.kind == "strongly_convex":
            c = mu / (2.0 * (1.0 - mu / L))
            w = dx - dg / L
            QG = (_outer_rows(Gr[b], dx) + _outer_rows(dg, dg) / (2.0 * L)
                  + c * _outer_rows(w, w))
        else:
            QG = (-L / 4.0 * _outer_rows(dx, dx) + 0.5 * _outer_rows(Gr[a] + Gr[b], dx)
                  + _outer_rows(dg, dg) / (4.0 * L))
        return QG, fidx[a], fidx[b]

    def point_rows(self, points: list[Point], m: int) -> tuple[np.ndarray, np.ndarray]:
        """``(QG, rhs)``: the class's conditions on single points, ``QG . vec(G) <= rhs``
        (convex Lipschitz: ``||g_i||^2 <= L^2``; the other classes have none)."""
        if self.kind != "convex_lipschitz" or not points:
            return np.zeros((0, m * m)), np.zeros(0)
        Gr = np.array([p.g.dense(m) for p in points])
        return _outer_rows(Gr, Gr), np.full(len(points), self.L ** 2)


CLASSES = ("strongly_convex", "nonconvex", "convex_lipschitz")
