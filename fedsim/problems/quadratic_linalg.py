"""Symmetric PSD matrix helpers for the quadratic problems (THEORY_SPEC 9.1).

Validation of the client matrices (symmetric to 1e-12, positive semidefinite), their
eigen-decompositions, minimum-norm solves for singular ``Abar``, the mean client value
``mean_i c_i + 0.5 (w - b_i)^T H_i (w - b_i)`` shared by f, F^(b) and F^(c), and the exact
trust-region maximum of a convex quadratic on a ball (THEORY_SPEC 9.1 "Optional local
diagnostic").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from fedsim.errors import ConfigError, check_finite, check_number, require

__all__ = ["matrix_list", "symmetric_psd_eigen", "readonly", "from_eigen", "psd_solve",
           "sqrt_factor", "all_equal", "mean_quadratic_value", "mean_of_forms",
           "max_quadratic_on_ball",
           "DistinctMatrices", "distinct_matrices", "symmetric_psd_eigen_stack",
           "sqrt_factor_stack", "StackRows", "materialize"]

SYMMETRY_TOL = 1e-12
PSD_TOL = 1e-12


def matrix_list(field: str, x: Any) -> list[np.ndarray]:
    """``x`` as a list of float64 square matrices (no symmetry check here)."""
    try:
        items = list(x)
        mats = [np.asarray(a, dtype=np.float64) for a in items]
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{field} must be a list of numeric square matrices, got "
                          f"{type(x).__name__}") from exc
    require(len(mats) >= 1, field, x, "must hold at least one matrix")
    for i, a in enumerate(mats):
        require(a.ndim == 2 and a.shape[0] == a.shape[1], f"{field}[{i}].shape", a.shape,
                "must be a square matrix shape (d, d)")
        check_finite(f"{field}[{i}]", a)
    return mats


class StackRows(Sequence):
    """The rows of a stack as a read-only sequence (``rows[i]`` is ``stack[i]``, a view;
    ``np.asarray(rows)`` is the stack), without one array object per client."""

    __slots__ = ("stack",)

    def __init__(self, stack: np.ndarray) -> None:
        self.stack = stack

    def __len__(self) -> int:
        return int(self.stack.shape[0])

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self.stack[j] for j in range(*i.indices(len(self)))]
        return self.stack[i]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self.stack if dtype is None else self.stack.astype(dtype, copy=False)

    def __eq__(self, other: object) -> bool:
        return list(self) == other if isinstance(other, list) else NotImplemented

    __hash__ = None  # type: ignore[assignment]


class DistinctMatrices:
    """n client matrices as their ``k`` distinct values: ``values`` ``(k, d, d)`` (in order
    of first appearance), ``index`` ``(n,)`` (client ``i`` holds ``values[index[i]]``) and
    ``first`` ``(k,)`` (the first client holding each)."""

    __slots__ = ("values", "index", "first")

    def __init__(self, values: np.ndarray, index: np.ndarray, first: np.ndarray) -> None:
        self.values, self.index, self.first = values, index, first

    @property
    def n(self) -> int:
        """The number of clients."""
        return int(self.index.shape[0])

    def expand(self, values: np.ndarray) -> np.ndarray:
        """Per-distinct ``values`` ``(k, ...)`` as the per-client stack ``(n, ...)``: a
        read-only broadcast view when all clients share one value, else a new array."""
        k = values.shape[0]
        if k == 1:
            return np.broadcast_to(values[0], (self.n, *values.shape[1:]))
        if k == self.n:
            return values
        return values[self.index]

    def map(self, fn: Any) -> DistinctMatrices:
        """The same grouping with ``values`` replaced by ``fn(values)``."""
        return DistinctMatrices(fn(self.values), self.index, self.first)


def materialize(dm: DistinctMatrices) -> np.ndarray:
    """The per-client stack ``(n, ...)`` of ``dm``'s values as a new C-contiguous array
    (row ``i`` a copy of ``values[index[i]]``: the bits a client-by-client loop writes)."""
    v = dm.values
    if v.shape[0] == dm.n:
        return np.ascontiguousarray(v)
    if v.shape[0] == 1:
        out = np.empty((dm.n, *v.shape[1:]), dtype=v.dtype)
        out[...] = v[0]
        return out
    return v[dm.index]


def distinct_matrices(field: str, x: Any, n: int | None = None,
                      dim: int | None = None) -> DistinctMatrices:
    """``x`` (a sequence of square matrices or an ``(n, d, d)`` array; with ``n``, one
    matrix that all ``n`` clients share) as :class:`DistinctMatrices`, with the checks and
    messages of :func:`matrix_list` plus the shape check (``dim``: every matrix must be
    ``(dim, dim)``; else as the first); the first offending client is named.

    Clients holding the same object, or bitwise-equal matrices when all are equal, share
    one value; each distinct matrix is converted and checked once (O(n) identity tests for
    the rest), so a shared Hessian costs one decomposition however many clients hold it.
    """
    if n is not None:
        items: list[Any] = [x]
        index = np.zeros(int(n), dtype=np.intp)
        first = np.zeros(1, dtype=np.intp)
    elif isinstance(x, np.ndarray) and x.ndim == 3 and x.dtype != object:
        items = list(np.asarray(x, dtype=np.float64))
        index = np.arange(len(items), dtype=np.intp)
        first = index.copy()
    else:
        try:
            raw = list(x)
        except TypeError as exc:
            raise ConfigError(f"{field} must be a list of numeric square matrices, got "
                              f"{type(x).__name__}") from exc
        # clients holding the same object share a slot, numbered in order of first
        # appearance (one C pass over the objects' ids, not a Python loop over n)
        ids = np.fromiter(map(id, raw), dtype=np.uint64, count=len(raw))
        _, first_at, inverse = np.unique(ids, return_index=True, return_inverse=True)
        order = np.argsort(first_at, kind="stable")
        rank = np.empty(order.shape[0], dtype=np.intp)
        rank[order] = np.arange(order.shape[0], dtype=np.intp)
        index = rank[inverse.reshape(-1)]
        first = first_at[order].astype(np.intp)
        items = [raw[int(i)] for i in first]
    try:
        mats = [np.asarray(a, dtype=np.float64) for a in items]
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{field} must be a list of numeric square matrices, got "
                          f"{type(x).__name__}") from exc
    require(len(mats) >= 1, field, x, "must hold at least one matrix")
    d = int(dim) if dim is not None else (mats[0].shape[0] if mats[0].ndim == 2 else -1)
    for j, a in enumerate(mats):
        if a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape != (d, d):
            i = int(first[j])
            require(a.ndim == 2 and a.shape[0] == a.shape[1], f"{field}[{i}].shape",
                    a.shape, "must be a square matrix shape (d, d)")
            check_finite(f"{field}[{i}]", a)
            if dim is None:
                require(False, f"{field}[{i}].shape", a.shape,
                        f"must equal {field}[0].shape = ({d}, {d})")
            require(False, f"{field}[{i}].shape", a.shape, f"must be (d, d) = ({d}, {d})")
    stack = np.array(mats) if len(mats) > 1 else mats[0][None]
    finite = np.isfinite(stack).reshape(stack.shape[0], -1).all(axis=1)
    if not finite.all():
        j = int(np.flatnonzero(~finite)[0])
        check_finite(f"{field}[{int(first[j])}]", mats[j])
    return _collapse(DistinctMatrices(stack, index, first))


def _collapse(dm: DistinctMatrices) -> DistinctMatrices:
    """One value when every distinct matrix equals the first bit for bit."""
    v = dm.values
    if v.shape[0] > 1 and bool(np.all(v == v[0])) and not np.any(np.signbit(v) != np.signbit(v[0])):
        return DistinctMatrices(v[:1], np.zeros(dm.n, dtype=np.intp), dm.first[:1])
    return dm


def symmetric_psd_eigen_stack(field: str, dm: DistinctMatrices
                              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`symmetric_psd_eigen` of every distinct matrix of ``dm`` at once (one stacked
    ``eigh``: NumPy runs the same LAPACK routine per matrix, so the numbers are those of
    the per-matrix call bit for bit); the error names the first offending client
    (``field[i]``).  Returns the per-distinct ``(a_sym, eigenvalues, eigenvectors)``."""
    a = dm.values
    k, d = a.shape[0], a.shape[1]
    if d == 0:
        out = [symmetric_psd_eigen(f"{field}[{int(dm.first[j])}]", a[j]) for j in range(k)]
        return (np.array([o[0] for o in out]).reshape(k, 0, 0), np.empty((k, 0)),
                np.empty((k, 0, 0)))
    at = np.swapaxes(a, 1, 2)
    amax = np.max(np.abs(a), axis=(1, 2))
    asym = np.max(np.abs(a - at), axis=(1, 2))
    bad_sym = asym > SYMMETRY_TOL * amax
    s = 0.5 * (a + at)
    ev, vec = np.linalg.eigh(s)
    scale = np.max(np.abs(ev), axis=1)
    bad_psd = ev[:, 0] < -PSD_TOL * scale
    bad = np.flatnonzero(bad_sym | bad_psd)
    if bad.size:
        j = int(bad[0])
        symmetric_psd_eigen(f"{field}[{int(dm.first[j])}]", a[j])  # raises its message
    ev = np.where(np.abs(ev) <= d * np.finfo(np.float64).eps * scale[:, None], 0.0, ev)
    return s, np.maximum(ev, 0.0), vec


def sqrt_factor_stack(s: np.ndarray, ev: np.ndarray, vec: np.ndarray) -> np.ndarray:
    """:func:`sqrt_factor` of every matrix of the stack ``s`` (one stacked Cholesky when all
    factor; the per-matrix rule otherwise), bit for bit the per-matrix results."""
    try:
        return np.linalg.cholesky(s)
    except np.linalg.LinAlgError:
        return np.array([sqrt_factor(s[j], ev[j], vec[j]) for j in range(s.shape[0])]
                        ).reshape(s.shape)


def symmetric_psd_eigen(field: str, a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Symmetrise ``a`` after checking symmetry (rel. tol 1e-12) and PSD (eig >= -1e-12 scale).

    Returns ``(a_sym, eigenvalues, eigenvectors)``; eigenvalues with ``|ev| <= d eps max|ev|``
    (numerically indistinguishable from 0: rank deficiency) are set to exactly 0.
    """
    amax = float(np.max(np.abs(a))) if a.size else 0.0
    asym = float(np.max(np.abs(a - a.T))) if a.size else 0.0
    if asym > SYMMETRY_TOL * amax:
        raise ConfigError(f"{field} must be symmetric (max|M - M^T| <= 1e-12 max|M|), got "
                          f"max asymmetry {asym:.6g} with max|M| = {amax:.6g}")
    s = 0.5 * (a + a.T)
    ev, vec = np.linalg.eigh(s)
    scale = float(np.max(np.abs(ev))) if ev.size else 0.0
    if ev.size and ev[0] < -PSD_TOL * scale:
        raise ConfigError(f"{field} must be positive semidefinite, got min eigenvalue "
                          f"{float(ev[0]):.6g}")
    ev = np.where(np.abs(ev) <= ev.size * np.finfo(np.float64).eps * scale, 0.0, ev)
    return s, np.maximum(ev, 0.0), vec


def readonly(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def from_eigen(vec: np.ndarray, vals: np.ndarray) -> np.ndarray:
    """Stacked ``V diag(vals) V^T`` for ``vec`` (n, d, d), ``vals`` (n, d), exactly symmetric."""
    m = (vec * vals[:, None, :]) @ np.swapaxes(vec, 1, 2)
    return 0.5 * (m + np.swapaxes(m, 1, 2))


def psd_solve(h: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Minimum-norm solution of ``h x = rhs`` for symmetric PSD ``h`` (pinv if singular)."""
    ev, vec = np.linalg.eigh(h)
    top = float(np.max(np.abs(ev))) if ev.size else 0.0
    cut = top * h.shape[0] * np.finfo(np.float64).eps
    if ev.size and ev[0] > cut:
        import scipy.linalg  # imported where used: start-up time (issue 19)

        try:
            return scipy.linalg.cho_solve(scipy.linalg.cho_factor(h), rhs)
        except np.linalg.LinAlgError:
            pass
    inv = np.where(ev > cut, 1.0 / np.where(ev > cut, ev, 1.0), 0.0)
    return vec @ (inv * (vec.T @ rhs))


def sqrt_factor(s: np.ndarray, ev: np.ndarray, vec: np.ndarray) -> np.ndarray:
    """A factor ``F`` with ``F F^T = s``: Cholesky if it exists, else ``V sqrt(eig)``."""
    try:
        return np.linalg.cholesky(s)
    except np.linalg.LinAlgError:
        return vec * np.sqrt(ev)[None, :]


def all_equal(stack: np.ndarray) -> bool:
    if stack.ndim and stack.strides[0] == 0:  # a broadcast view: one value for all
        return True
    return bool(np.all(stack == stack[0]))


def mean_quadratic_value(c: np.ndarray, b_stack: np.ndarray, h_stack: np.ndarray,
                         w: np.ndarray) -> float:
    """``mean_i c_i + 0.5 mean_i (w - b_i)^T H_i (w - b_i)``, directly (no cancellation)."""
    r = w - b_stack
    return mean_of_forms(c, np.einsum("ni,nij,nj->n", r, h_stack, r))


def mean_of_forms(c: np.ndarray, q: np.ndarray) -> float:
    """``mean_i c_i + 0.5 mean_i q_i``: the mean value of the clients' quadratics whose forms
    ``(w - b_i)^T H_i (w - b_i)`` at one ``w`` are ``q``."""
    return float(np.mean(c) + 0.5 * np.mean(q))


def max_quadratic_on_ball(H: np.ndarray, h: np.ndarray, k: float, R: float) -> float:
    """``max_{||v|| <= R} v^T H v + 2 h^T v + k`` for symmetric PSD ``H`` (exact).

    A convex quadratic attains its maximum on the sphere ``||v|| = R``.  The maximiser
    solves ``(t I - H) v = h`` with ``t >= lam_max(H)`` (trust-region optimality for
    ``-q``); ``t`` is the root of the secular equation ``sum_j h_j^2/(t - eta_j)^2 = R^2``
    in the eigenbasis of H, found by Brent's method on ``1/sqrt(psi) - 1/R``.  In the
    "hard case" (``h`` orthogonal to the top eigenspace and the secular norm at
    ``t = lam_max`` below R) the rest of the radius is spent along the top eigenvector.
    """
    check_number("R", R, allow_inf=True)
    require(math.isfinite(R) and R >= 0, "R", R, "must be finite and >= 0")
    if R == 0.0:
        return float(k)
    eta, U = np.linalg.eigh(0.5 * (H + H.T))
    eta = np.maximum(eta, 0.0)
    ht = U.T @ h
    hn = float(np.linalg.norm(ht))
    emax = float(eta[-1])
    if hn == 0.0:
        return float(k + emax * R * R)
    top = eta >= emax - 1e-12 * max(emax, np.finfo(np.float64).tiny)
    htop = float(np.linalg.norm(ht[top]))

    def value(v: np.ndarray) -> float:
        return float(np.dot(eta * v, v) + 2.0 * np.dot(ht, v) + k)

    def vec(t: float) -> np.ndarray:
        # components with ht_j = 0 contribute nothing (covers t = lam_max in the hard case)
        dd = np.where(ht == 0.0, 1.0, t - eta)
        return ht / dd

    def g(t: float) -> float:  # 1/||v(t)|| - 1/R: increasing, nearly linear in t
        nv = float(np.linalg.norm(vec(t)))
        return (1.0 / nv if nv > 0 else math.inf) - 1.0 / R

    t_hi = emax + hn / R  # ||v(t_hi)|| <= R
    if htop > 1e-14 * hn:
        t_lo = emax + htop / R  # ||v(t_lo)|| >= R
    else:
        ht = np.where(top, 0.0, ht)
        v0 = vec(emax)
        norm2 = float(v0 @ v0)
        if norm2 < R * R:  # hard case: spend the rest of the radius on the top eigenspace
            return value(v0) + emax * (R * R - norm2)
        t_lo = emax
    g_lo, g_hi = g(t_lo), g(t_hi)
    if t_lo >= t_hi or g_lo >= 0.0:
        t = t_lo
    elif g_hi <= 0.0:
        t = t_hi
    else:
        import scipy.optimize

        t = scipy.optimize.brentq(g, t_lo, t_hi, xtol=1e-15 * max(t_hi, 1e-300),
                                  rtol=4 * np.finfo(np.float64).eps, maxiter=500)
    v = vec(t)
    nv = float(np.linalg.norm(v))
    # the maximiser lies on the sphere: put v exactly on it.  The root t is only known to
    # ~eps relative, and ||v(t)|| - R moves the value to first order (2 lam_max R^2 dR/R),
    # while the direction error moves it to second order only.
    return value(v * (R / nv)) if nv > 0 else value(v)
