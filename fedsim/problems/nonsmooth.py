"""A convex, B-Lipschitz, non-smooth objective: ``f_i(x) = B * ||x - c_i||``.

This is the problem behind the exact Theorem 8 counterexample of THEORY_SPEC
section 7.d (there ``d = 1``, every ``c_i = 0``, so ``f_i(x) = B|x|``).  It
satisfies [A] Theorem 8's hypotheses exactly: each f_i is convex and
B-Lipschitz (every subgradient has norm <= B, with equality off ``c_i``), a
minimiser exists, and the oracle is deterministic (sigma = 0; declare a tiny
sigma if a theorem insists on sigma > 0).

Subgradient selection (fixed, [A] Asm 1): ``B (x - c)/||x - c||`` for
``x != c`` and ``0`` at ``x = c``.  In one dimension this is ``B*sign(x - c)``.

The oracles ``loss``, ``grad`` and the recorded metrics ``grad_f_sq``, ``dist_sq``,
``f_gap`` are the compiled functions of :mod:`fedsim.problems.norm_view` (written once;
the rules and the replay call the same functions on the problem's view), and
:meth:`NormProblem.compiled_view` hands them to the compiled rules and the replay.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from fedsim.errors import check_finite, check_integer, check_number, require
from fedsim.problems.compiled import CompiledView
from fedsim.problems.constants import Constant, ConstantsTable, Tag
from fedsim.problems.deterministic import DeterministicProblem
from fedsim.problems.norm_view import (
    norm_compiled_view,
    norm_f,
    norm_loss,
    norm_metric_view,
    norm_metrics,
    norm_sample_grad,
    norm_view,
)
from fedsim.problems.quadratic_view import METRIC_CODES

__all__ = ["NormProblem"]

#: one-metric code arrays for :func:`norm_metrics` (grad_sq, dist_sq, f_gap)
_CODE_ARRAYS = tuple(np.array([k], dtype=np.int64) for k in range(len(METRIC_CODES)))


class NormProblem(DeterministicProblem):
    """``f_i(x) = B ||x - c_i||_2``; ``centers`` is an (n, dim) array (default all zeros).

    With all centers equal, x* = c and f* = 0 exactly.  For distinct centers the
    global minimiser is the geometric median of the centers; it is computed by
    Weiszfeld's iteration (tag NUMERIC).
    """

    def __init__(self, B: float = 1.0, n: int = 2, dim: int = 1,
                 centers: np.ndarray | None = None) -> None:
        check_number("B", B, allow_inf=True)
        require(np.isfinite(B) and B > 0, "B", B, "must be finite and > 0")
        check_integer("n", n, low=1)
        check_integer("dim", dim, low=1)
        self.B = float(B)
        self.n = int(n)
        self.dim = int(dim)
        if centers is None:
            centers = np.zeros((self.n, self.dim))
        centers = np.asarray(centers, dtype=np.float64)
        require(centers.shape == (self.n, self.dim), "centers", centers.shape,
                f"must have shape (n, dim) = ({self.n}, {self.dim})")
        check_finite("centers", centers)
        self.centers = centers
        self._identical = bool(np.all(centers == centers[0]))
        self._x_star: np.ndarray | None = None
        self._table: ConstantsTable | None = None
        self._view = norm_view(self)
        self._mviews: dict[int, tuple] = {}
        self._z = np.empty(0)

    # deterministic oracles (compiled, fedsim.problems.norm_view) ----------------------
    def loss(self, i: int, w: np.ndarray) -> float:
        """``f_i(w) = B ||w - c_i||``."""
        return float(norm_loss(self._view, int(i), np.ascontiguousarray(w, dtype=np.float64)))

    def grad(self, i: int, w: np.ndarray) -> np.ndarray:
        """The fixed subgradient selection (zero at the kink)."""
        g = np.empty(self.dim)
        norm_sample_grad(self._view, int(i), np.ascontiguousarray(w, dtype=np.float64),
                         self._z, g)
        return g

    def f(self, w: np.ndarray) -> float:
        """``f(w) = mean_i f_i(w)`` (summed in client order)."""
        return float(norm_f(self._view, np.ascontiguousarray(w, dtype=np.float64)))

    def compiled_view(self, batch: int = 1) -> CompiledView:
        """The compiled oracles for the rules and the replay
        (:func:`fedsim.problems.norm_view.norm_compiled_view`): :func:`norm_sample_grad` on
        ``(B, C)`` (no draws, whatever ``batch``) and :func:`norm_metrics` on a fresh metric
        view."""
        return norm_compiled_view(self, norm_metric_view(self))

    def _metric(self, code: int, w: np.ndarray) -> float:
        # per thread: one metric view (it holds the scratch rows)
        mv = self._mviews.get(threading.get_ident())
        if mv is None:
            mv = self._mviews[threading.get_ident()] = norm_metric_view(self)
        out = np.empty(1)
        norm_metrics(mv, _CODE_ARRAYS[code], np.ascontiguousarray(w, dtype=np.float64), out)
        return float(out[0])

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the per-thread metric views (rebuilt on use)."""
        state = self.__dict__.copy()
        state["_mviews"] = {}
        return state

    def grad_f_sq(self, w: np.ndarray) -> float:
        """``||mean_i g_i(w)||^2`` of the subgradient selection."""
        return self._metric(0, w)

    def dist_sq(self, w: np.ndarray) -> float:
        """``||w - x*||^2``."""
        return self._metric(1, w)

    def f_gap(self, w: np.ndarray) -> float:
        """``f(w) - f*``."""
        return self._metric(2, w)

    def hess(self, i: int, w: np.ndarray) -> np.ndarray:
        """Hessian where it exists: ``B/r (I - u u^T)`` (r = ||w-c||, u = unit); 0 at the kink."""
        v = np.asarray(w, dtype=np.float64) - self.centers[i]
        nv = float(np.linalg.norm(v))
        if nv == 0.0:
            return np.zeros((self.dim, self.dim))
        u = v / nv
        return (self.B / nv) * (np.eye(self.dim) - np.outer(u, u))

    # stochastic oracles: deterministic (sigma = 0), sample_batch and batch_grad from
    # DeterministicProblem ---------------------------------------------------------------
    def batch_hvp(self, i: int, w: np.ndarray, v: np.ndarray, batch: Any) -> np.ndarray:
        return self.hess(i, w) @ v

    def theta_hat(self, i: int, w: np.ndarray, lam: float) -> np.ndarray:
        """prox of f_i/lam at w: block soft-thresholding towards c_i by B/lam."""
        require(lam > 0, "lam", lam, "must be > 0")
        v = np.asarray(w, dtype=np.float64) - self.centers[i]
        nv = float(np.linalg.norm(v))
        shrink = self.B / lam
        if nv <= shrink:
            return self.centers[i].copy()
        return self.centers[i] + (1.0 - shrink / nv) * v

    # minimiser -------------------------------------------------------------------------
    @property
    def x_star(self) -> np.ndarray:
        """Global minimiser (exact when centers coincide, else Weiszfeld to 1e-13)."""
        if self._x_star is None:
            if self._identical:
                self._x_star = self.centers[0].copy()
            else:
                x = self.centers.mean(axis=0)
                for _ in range(100000):
                    dist = np.linalg.norm(self.centers - x, axis=1)
                    if np.any(dist == 0.0):
                        break
                    wts = 1.0 / dist
                    x_new = (wts[:, None] * self.centers).sum(axis=0) / wts.sum()
                    if np.linalg.norm(x_new - x) <= 1e-13 * max(1.0, np.linalg.norm(x)):
                        x = x_new
                        break
                    x = x_new
                self._x_star = x
        return self._x_star

    @property
    def f_star(self) -> float:
        """min f."""
        return self.f(self.x_star)

    def _build_table(self) -> ConstantsTable:
        """The constants table (``constants``, cached by the base class)."""
        tag_x = Tag.EXACT if self._identical else Tag.NUMERIC
        why_x = ("all centers equal: x* = c, f* = 0" if self._identical
                 else "geometric median by Weiszfeld's iteration to 1e-13")
        return ConstantsTable([
            Constant("B", self.B, Tag.EXACT, "||subgradient|| = B off the kink"),
            Constant("G", self.B, Tag.EXACT, "[P] Asm 6: ||grad f_i|| <= B, attained"),
            Constant("L", np.inf, Tag.INFINITE, "not differentiable at c_i: no smoothness"),
            Constant("mu", 0.0, Tag.EXACT, "linear growth: not strongly convex"),
            Constant("sigma_g2", 0.0, Tag.EXACT, "deterministic oracle"),
            Constant("f_star_A", self.f_star, tag_x, why_x),
            Constant("f_star_P", 0.0, Tag.EXACT, "f_i(c_i) = 0 = min f_i"),
            Constant("zeta", float(np.max(np.linalg.norm(self.centers - self.x_star, axis=1))),
                     tag_x, "max_i ||x* - c_i||"),
        ])
