"""The weighted softmax kernel, its Newton-CG solver and the client-array checks.

Parts of :class:`fedsim.problems.softmax.SoftmaxProblem` (see that module's
docstring for the objective, its derivatives and the constants): ``SoftmaxData``
evaluates ``sum_j c_j [lse(W^T x_j) - (W^T x_j)_{y_j}] + reg/2 ||W||_F^2`` and its
gradient / Hessian / Hessian-vector products stably (``logsumexp``, ``softmax``);
``newton_cg`` minimises it plus ``lam/2 ||t - w||^2`` (the Moreau inner problem,
THEORY_SPEC 9.4), with the dense damped Newton of
:func:`fedsim.problems.newton.newton_minimize` as fallback; :class:`SoftmaxSolution`
carries the strong-convexity certificate ``||xhat - x*|| <= g/reg``,
``0 <= f(xhat) - f* <= g^2/(2 reg)``; ``softmax_client_arrays`` validates per-client inputs.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fedsim.errors import ConfigError, check_finite, require
from fedsim.problems.newton import newton_minimize

__all__ = ["SoftmaxSolution", "EPS", "SoftmaxData", "row_logsumexp", "row_softmax", "newton_cg",
           "solve_softmax", "softmax_client_arrays"]

EPS = float(np.finfo(np.float64).eps)

# ----------------------------------------------------------------------------------------
# the weighted kernel shared by f_i, f and the inner Moreau problems
# ----------------------------------------------------------------------------------------
def row_logsumexp(Z: np.ndarray) -> np.ndarray:
    """``log sum_c exp(Z[j, c])`` for every row ``j``, shifted by the row's largest entry
    (0 where that is not finite), as ``scipy.special.logsumexp(Z, axis=1)`` computes it
    but without its array-API dispatch (a third of its time on the digits' (1437, 10)
    logits; the values agree to rounding).  The row maxima are taken column by column
    (``np.maximum``; a maximum is exact, so the same numbers as ``Z.max(axis=1)``, a third
    faster on ten classes)."""
    m = Z[:, 0].copy()
    for c in range(1, Z.shape[1]):
        np.maximum(m, Z[:, c], out=m)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(np.exp(Z - m[:, None]).sum(axis=1)) + m


def row_softmax(Z: np.ndarray) -> np.ndarray:
    """``exp(Z[j] - max Z[j]) / sum_c exp(Z[j, c] - max Z[j])`` for every row ``j``: the
    operations of ``scipy.special.softmax(Z, axis=1)``, in its order, so the same numbers
    bit for bit, without its array-API dispatch (most of its time on a client's few rows,
    where the metrics of a personalised run call it once per client and recorded step)."""
    e = np.exp(Z - np.max(Z, axis=1, keepdims=True))
    return e / np.sum(e, axis=1, keepdims=True)


class SoftmaxData:
    """``sum_j c_j [lse(W^T x_j) - (W^T x_j)_{y_j}] + reg/2 ||W||^2`` on flat ``w``."""

    def __init__(self, X: np.ndarray, y: np.ndarray, wts: np.ndarray, reg: float,
                 n_classes: int) -> None:
        self.X = X
        self.y = y
        self.wts = wts
        self.reg = reg
        self.C = n_classes
        self.d = X.shape[1]
        self.dim = self.d * n_classes
        self.row_norms = np.linalg.norm(X, axis=1)
        self._rows = np.arange(X.shape[0])

    def _W(self, w: np.ndarray) -> np.ndarray:
        return w.reshape(self.d, self.C)

    def value(self, w: np.ndarray) -> float:
        Z = self.X @ self._W(w)
        per = row_logsumexp(Z) - Z[self._rows, self.y]
        return float(self.wts @ per + 0.5 * self.reg * (w @ w))

    def residual(self, w: np.ndarray) -> np.ndarray:
        """``p_j - e_{y_j}`` per row (m x C)."""
        R = row_softmax(self.X @ self._W(w))
        R[self._rows, self.y] -= 1.0
        return R

    def grad(self, w: np.ndarray) -> np.ndarray:
        R = self.residual(w)
        return (self.X.T @ (self.wts[:, None] * R)).ravel() + self.reg * w

    def hvp(self, w: np.ndarray, v: np.ndarray) -> np.ndarray:
        P = row_softmax(self.X @ self._W(w))
        U = self.X @ self._W(v)
        AU = P * U - P * np.sum(P * U, axis=1, keepdims=True)
        return (self.X.T @ (self.wts[:, None] * AU)).ravel() + self.reg * v

    def hess(self, w: np.ndarray) -> np.ndarray:
        P = row_softmax(self.X @ self._W(w))
        d, C = self.d, self.C
        # diagonal-in-class part: sum_j c_j x x^T p_c  -> block (k, c), (l, c)
        H = np.zeros((d, C, d, C))
        for c in range(C):
            H[:, c, :, c] = (self.X.T * (self.wts * P[:, c])) @ self.X
        Y = (self.X[:, :, None] * P[:, None, :]).reshape(-1, d * C)  # rows x_j kron p_j
        H = H.reshape(d * C, d * C) - (Y.T * self.wts) @ Y
        H = 0.5 * (H + H.T)
        H[np.diag_indices_from(H)] += self.reg
        return H

    def grad_error_bound(self, w: np.ndarray) -> float:
        """Round-off allowance for the computed gradient (summation bound, as in logistic)."""
        k = self.X.shape[0] + self.dim + 10
        scale = math.sqrt(2.0) * float(self.wts @ self.row_norms) + self.reg * float(
            np.linalg.norm(w))
        return 2.0 * k * EPS * scale


def newton_cg(data: SoftmaxData, w: np.ndarray, lam: float, x0: np.ndarray, *,
              gtol_rel: float = 1e-13, max_iter: int = 100) -> tuple[np.ndarray, float]:
    """Minimise ``data(t) + lam/2 ||t - w||^2`` by Newton-CG (matrix-free); returns (t, ||g||).

    ``lam >= 0`` (0: minimise the data objective itself).  The objective is
    ``(reg + lam)``-strongly convex; each Newton system is solved by
    conjugate gradients to a relative residual ``min(0.1, sqrt||g||)`` (superlinear
    convergence), with a backtracking line search.  Falls back to the dense damped
    Newton of ``newton_minimize`` if CG or the line search stalls.
    """
    def fun(t: np.ndarray) -> float:
        u = t - w
        return data.value(t) + 0.5 * lam * float(u @ u)

    def grd(t: np.ndarray) -> np.ndarray:
        return data.grad(t) + lam * (t - w)

    t = np.array(x0, dtype=np.float64, copy=True)
    g = grd(t)
    gn = float(np.linalg.norm(g))
    target = gtol_rel * max(1.0, gn)
    ft = fun(t)
    n = t.size
    for _ in range(max_iter):
        if gn <= target:
            return t, gn
        # CG on (H + lam I) p = -g
        tol = min(0.1, math.sqrt(gn)) * gn
        p = np.zeros(n)
        r = -g.copy()
        q = r.copy()
        rr = float(r @ r)
        for _cg in range(2 * n):
            Hq = data.hvp(t, q) + lam * q
            qHq = float(q @ Hq)
            if qHq <= 0.0:
                break
            a = rr / qHq
            p += a * q
            r -= a * Hq
            rr_new = float(r @ r)
            if math.sqrt(rr_new) <= tol:
                rr = rr_new
                break
            q = r + (rr_new / rr) * q
            rr = rr_new
        slope = float(g @ p)
        if not slope < 0.0:
            break
        step = 1.0
        ok = False
        for _ls in range(40):
            tn = t + step * p
            fn = fun(tn)
            if fn <= ft + 1e-4 * step * slope:
                ok = True
            elif fn <= ft + 16.0 * EPS * max(1.0, abs(ft)):
                gtry = grd(tn)
                ok = float(np.linalg.norm(gtry)) < gn
            if ok:
                break
            step *= 0.5
        if not ok:
            break
        t, ft = tn, fn
        g = grd(t)
        gn = float(np.linalg.norm(g))
    if gn <= target:
        return t, gn

    def hes(x: np.ndarray) -> np.ndarray:
        H = data.hess(x)
        H[np.diag_indices_from(H)] += lam
        return H

    res = newton_minimize(fun, grd, hes, t, gtol_rel=gtol_rel)
    return res.x, res.grad_norm


class SoftmaxSolution:
    """A Newton minimiser with its strong-convexity certificate (see the module doc)."""

    __slots__ = ("x", "f", "grad_norm", "dist_bound", "f_gap_bound", "converged")

    def __init__(self, x: np.ndarray, f: float, grad_norm: float, mu: float,
                 converged: bool) -> None:
        self.x = x
        self.f = f
        self.grad_norm = grad_norm
        self.dist_bound = grad_norm / mu
        self.f_gap_bound = grad_norm * grad_norm / (2.0 * mu)
        self.converged = converged


def solve_softmax(data: SoftmaxData) -> SoftmaxSolution:
    """Minimise one weighted objective from 0 by Newton-CG (dense Newton as fallback)."""
    zero = np.zeros(data.dim)
    x, gn = newton_cg(data, zero, 0.0, zero)
    target = 1e-13 * max(1.0, float(np.linalg.norm(data.grad(zero))))
    g = float(np.linalg.norm(data.grad(x))) + data.grad_error_bound(x)
    return SoftmaxSolution(x, data.value(x), g, data.reg, gn <= target)


# ----------------------------------------------------------------------------------------
# input checks
# ----------------------------------------------------------------------------------------
def softmax_client_arrays(X_list: Any, y_list: Any, n_classes: int, field_x: str,
                          field_y: str, d: int | None, allow_empty: bool
                          ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per-client float64 features and integer labels in ``[0, n_classes)``, checked
    (ConfigError naming ``field_x[i]``/``field_y[i]``); ``d`` fixes the column count."""
    for name, obj in ((field_x, X_list), (field_y, y_list)):
        require(isinstance(obj, (list, tuple)), name, type(obj).__name__,
                "must be a list with one array per client")
    require(len(X_list) >= 1, field_x, len(X_list), "must hold at least one client")
    require(len(y_list) == len(X_list), f"len({field_y})", len(y_list),
            f"must equal len({field_x}) = {len(X_list)}")
    Xs: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    for i, (Xi, yi) in enumerate(zip(X_list, y_list, strict=True)):
        try:
            Xi = np.array(Xi, dtype=np.float64)
            yr = np.array(yi)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{field_x}[{i}] and {field_y}[{i}] must be numeric arrays "
                              f"({exc})") from None
        require(Xi.ndim == 2, f"{field_x}[{i}].ndim", Xi.ndim, "must be 2 (rows x features)")
        require(allow_empty or Xi.shape[0] >= 1, f"{field_x}[{i}].shape", Xi.shape,
                "must have at least one row")
        require(Xi.shape[1] >= 1, f"{field_x}[{i}].shape", Xi.shape,
                "must have at least one column")
        if d is None:
            d = Xi.shape[1]
        require(Xi.shape[1] == d, f"{field_x}[{i}].shape", Xi.shape, f"must have d = {d} columns")
        require(yr.shape == (Xi.shape[0],), f"{field_y}[{i}].shape", yr.shape,
                f"must be ({Xi.shape[0]},) to match {field_x}[{i}]")
        check_finite(f"{field_x}[{i}]", Xi)
        if yr.size:
            ok = np.issubdtype(yr.dtype, np.integer) or (
                np.issubdtype(yr.dtype, np.floating) and bool(np.all(np.isfinite(yr)))
                and bool(np.all(yr == np.round(yr))))
            require(ok and not np.issubdtype(yr.dtype, np.bool_), f"{field_y}[{i}]",
                    yr[:5], "must hold integer class labels")
            bad = yr[(yr < 0) | (yr >= n_classes)]
            require(bad.size == 0, f"{field_y}[{i}]", bad[:5].tolist(),
                    f"must hold labels in 0..{n_classes - 1}")
        Xs.append(np.ascontiguousarray(Xi))
        ys.append(yr.astype(np.int64))
    return Xs, ys
