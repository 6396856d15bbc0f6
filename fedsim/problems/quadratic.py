"""Quadratic clients with exactly known constants (THEORY_SPEC section 9.1).

Client ``i`` has ``f_i(w) = 0.5 (w - b_i)^T A_i (w - b_i) + c_i`` with ``A_i``
symmetric positive semidefinite ([P] Asm 2 "bounded below" needs PSD; an
indefinite ``A_i`` is rejected).  Every constant of the THEORY_SPEC 9.1 table is
computed in closed form and tagged (EXACT or INFINITE), and the personalised
objectives of [P] eq. (9)-(10) have closed forms too:

* MAML ([P] eq. (9)):   ``F_i^(b)(w) = c_i + 0.5 (w-b_i)^T Hb_i (w-b_i)``,
  ``Hb_i = A_i (I - alpha A_i)^2``  (:meth:`QuadraticProblem.maml`);
* Moreau envelope ([P] eq. (10)): ``F_i^(c)(w) = c_i + 0.5 (w-b_i)^T Hc_i (w-b_i)``,
  ``Hc_i = lam A_i (A_i + lam I)^{-1}``  (:meth:`QuadraticProblem.me`).

Noise models (THEORY_SPEC 9.1; ``S_i`` = ``noise_cov[i]``, the per-sample covariance):

* ``"additive"``: a batch D of size m is the mean noise ``e_D ~ N(0, S_i/m)``, drawn
  as ``chol(S_i) z / sqrt(m)``; ``batch_grad = A_i (w - b_i) + e_D`` and ``C_i = S_i``.
  For Option C the stochastic *function* is ``f_tilde_i(theta, D) = f_i(theta) +
  e_D^T theta`` (a fixed linear tilt; this is what ``batch_grad`` implies).
* ``"sampling"``: a batch is the sample mean ``xibar_D ~ N(b_i, S_i/m)`` of m data points
  ``xi ~ N(b_i, S_i)`` with per-sample loss ``ell_i(w, xi) = 0.5 (w-xi)^T A_i (w-xi) +
  c_i'``; ``batch_grad = A_i (w - xibar_D)`` and ``C_i = A_i S_i A_i``.  Then
  ``f_i = E ell_i`` has ``c_i = c_i' + 0.5 tr(A_i S_i)``; the ``c`` argument is always the
  ``c_i`` of ``f_i`` (so ``c_i' = c_i - 0.5 tr(A_i S_i)``).

In both models the per-sample Hessian is exactly ``A_i`` (``batch_hvp = A_i v``), so
``rho = sigma_h2 = 0`` exactly.  A batch is an opaque d-vector (docs/INTERNALS.md 1).

Singular ``Abar``: ``f`` is still bounded below and attains its minimum (the range of
every PSD ``A_i`` lies in the range of ``Abar``, so ``m = mean A_i b_i`` is in it); the
minimiser set is ``x* + null(Abar)`` and ``x_star`` is its minimum-norm element
``pinv(Abar) m``.  The same convention is used for ``w_star`` of F^(b), F^(c).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.linalg
import scipy.optimize

from fedsim.errors import ConfigError, check_finite, require
from fedsim.problems.base import Problem
from fedsim.problems.constants import Constant, ConstantsTable, Tag

__all__ = ["QuadraticProblem", "MamlExact", "MoreauExact", "max_quadratic_on_ball"]

NOISE_KINDS = ("additive", "sampling")
_SYM_TOL = 1e-12
_PSD_TOL = 1e-12
_CACHE_MAX = 32


# ------------------------------------------------------------------------------------------
# validation helpers
# ------------------------------------------------------------------------------------------
def _matrix_list(field: str, x: Any) -> list[np.ndarray]:
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


def _check_sym_psd(field: str, a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Symmetrise ``a`` after checking symmetry (rel. tol 1e-12) and PSD (eig >= -1e-12 scale).

    Returns ``(a_sym, eigenvalues, eigenvectors)``; eigenvalues with ``|ev| <= d eps max|ev|``
    (numerically indistinguishable from 0: rank deficiency) are set to exactly 0.
    """
    amax = float(np.max(np.abs(a))) if a.size else 0.0
    asym = float(np.max(np.abs(a - a.T))) if a.size else 0.0
    if asym > _SYM_TOL * amax:
        raise ConfigError(f"{field} must be symmetric (max|M - M^T| <= 1e-12 max|M|), got "
                          f"max asymmetry {asym:.6g} with max|M| = {amax:.6g}")
    s = 0.5 * (a + a.T)
    ev, vec = np.linalg.eigh(s)
    scale = float(np.max(np.abs(ev))) if ev.size else 0.0
    if ev.size and ev[0] < -_PSD_TOL * scale:
        raise ConfigError(f"{field} must be positive semidefinite, got min eigenvalue "
                          f"{float(ev[0]):.6g}")
    ev = np.where(np.abs(ev) <= ev.size * np.finfo(np.float64).eps * scale, 0.0, ev)
    return s, np.maximum(ev, 0.0), vec


def _readonly(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def _from_eig(vec: np.ndarray, vals: np.ndarray) -> np.ndarray:
    """Stacked ``V diag(vals) V^T`` for ``vec`` (n, d, d), ``vals`` (n, d), exactly symmetric."""
    m = (vec * vals[:, None, :]) @ np.swapaxes(vec, 1, 2)
    return 0.5 * (m + np.swapaxes(m, 1, 2))


def _psd_solve(h: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Minimum-norm solution of ``h x = rhs`` for symmetric PSD ``h`` (pinv if singular)."""
    ev, vec = np.linalg.eigh(h)
    top = float(np.max(np.abs(ev))) if ev.size else 0.0
    cut = top * h.shape[0] * np.finfo(np.float64).eps
    if ev.size and ev[0] > cut:
        try:
            return scipy.linalg.cho_solve(scipy.linalg.cho_factor(h), rhs)
        except np.linalg.LinAlgError:
            pass
    inv = np.where(ev > cut, 1.0 / np.where(ev > cut, ev, 1.0), 0.0)
    return vec @ (inv * (vec.T @ rhs))


def _sqrt_factor(s: np.ndarray, ev: np.ndarray, vec: np.ndarray) -> np.ndarray:
    """A factor ``F`` with ``F F^T = s``: Cholesky if it exists, else ``V sqrt(eig)``."""
    try:
        return np.linalg.cholesky(s)
    except np.linalg.LinAlgError:
        return vec * np.sqrt(ev)[None, :]


def _check_batch_size(size: Any) -> None:
    require(isinstance(size, (int, np.integer)) and size >= 1, "batch size", size,
            "must be an integer >= 1")


def _all_equal(stack: np.ndarray) -> bool:
    return bool(np.all(stack == stack[0]))


# ------------------------------------------------------------------------------------------
# trust-region maximum (local diagnostics, THEORY_SPEC 9.1 "Optional local diagnostic")
# ------------------------------------------------------------------------------------------
def max_quadratic_on_ball(H: np.ndarray, h: np.ndarray, k: float, R: float) -> float:
    """``max_{||v|| <= R} v^T H v + 2 h^T v + k`` for symmetric PSD ``H`` (exact).

    A convex quadratic attains its maximum on the sphere ``||v|| = R``.  The maximiser
    solves ``(t I - H) v = h`` with ``t >= lam_max(H)`` (trust-region optimality for
    ``-q``); ``t`` is the root of the secular equation ``sum_j h_j^2/(t - eta_j)^2 = R^2``
    in the eigenbasis of H, found by Brent's method on ``1/sqrt(psi) - 1/R``.  In the
    "hard case" (``h`` orthogonal to the top eigenspace and the secular norm at
    ``t = lam_max`` below R) the rest of the radius is spent along the top eigenvector.
    """
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
        t = scipy.optimize.brentq(g, t_lo, t_hi, xtol=1e-15 * max(t_hi, 1e-300),
                                  rtol=4 * np.finfo(np.float64).eps, maxiter=500)
    return value(vec(t))


# ------------------------------------------------------------------------------------------
# exact personalised objectives
# ------------------------------------------------------------------------------------------
class _QuadraticObjective:
    """Shared by the exact personalised objectives: ``F(w) = const + 0.5 w^T Hbar w - m^T w``."""

    Hbar: np.ndarray
    m: np.ndarray

    def grad(self, w: np.ndarray) -> np.ndarray:
        """grad F(w) = Hbar w - m (O(d^2))."""
        return self.Hbar @ w - self.m

    def grad_sq(self, w: np.ndarray) -> float:
        """||grad F(w)||^2 (O(d^2))."""
        g = self.Hbar @ w - self.m
        return float(g @ g)


@dataclass(frozen=True, eq=False)
class MamlExact(_QuadraticObjective):
    """Exact MAML objective F^(b) on quadratics (THEORY_SPEC 9.1 "MAML objective").

    ``H[i] = Hb_i = A_i (I - alpha A_i)^2``, ``Hbar`` their mean, ``m = mean Hb_i b_i``,
    ``w_star = pinv(Hbar) m``, ``F_min = min F^(b)``, ``L_true = max_i max_{a in eig A_i}
    a (1 - alpha a)^2`` (exact smoothness of every F_i^(b)), ``gamma2_true`` the exact
    diversity ``sup_w (1/n) sum ||grad F_i^(b) - grad F^(b)||^2`` (``inf`` unless all
    Hb_i are equal), ``bias = 0.0`` (affine gradients make the Option-B estimator
    unbiased; the paper's mu_b > 0 is only an upper bound).
    """

    alpha: float
    H: list[np.ndarray] = field(repr=False)
    H_stack: np.ndarray = field(repr=False)
    Hbar: np.ndarray = field(repr=False)
    m: np.ndarray = field(repr=False)
    w_star: np.ndarray = field(repr=False)
    F_min: float
    L_true: float
    gamma2_true: float
    _mse_outer: np.ndarray = field(repr=False)
    _mse_inner: np.ndarray = field(repr=False)
    _P: np.ndarray = field(repr=False)  # I - alpha A_i, stacked
    _A: np.ndarray = field(repr=False)
    _C: np.ndarray = field(repr=False)
    bias: float = 0.0

    def estimator_mse_clients(self, batch_outer: int, batch_inner: int) -> np.ndarray:
        """Per-client E||Option-B estimate - grad F_i^(b)||^2 (THEORY_SPEC 9.1).

        Error ``(I - aA_i)(e_D - a A_i e_D')`` with D outer, D' inner independent:
        ``tr((I-aA)C(I-aA))/|D| + a^2 tr((I-aA)ACA(I-aA))/|D'|`` (Hessian estimate exact).
        """
        _check_batch_size(batch_outer)
        _check_batch_size(batch_inner)
        return self._mse_outer / batch_outer + self.alpha ** 2 * self._mse_inner / batch_inner

    def estimator_cov(self, i: int, batch_outer: int, batch_inner: int) -> np.ndarray:
        """Covariance of client i's Option-B error (THEORY_SPEC 10.2, without eta^2).

        ``(I - aA_i)(C_i/|D| + a^2 A_i C_i A_i/|D'|)(I - aA_i)``; its trace is the MSE.
        """
        _check_batch_size(batch_outer)
        _check_batch_size(batch_inner)
        a, c, p = self._A[i], self._C[i], self._P[i]
        inner = c / batch_outer + self.alpha ** 2 * (a @ c @ a) / batch_inner
        out = p @ inner @ p
        return 0.5 * (out + out.T)

    def estimator_mse(self, batch_outer: int, batch_inner: int) -> float:
        """max_i of :meth:`estimator_mse_clients` (compare with Lemma 2's sigma_b2)."""
        return float(np.max(self.estimator_mse_clients(batch_outer, batch_inner)))


@dataclass(frozen=True, eq=False)
class MoreauExact(_QuadraticObjective):
    """Exact Moreau-envelope objective F^(c) on quadratics (THEORY_SPEC 9.1 "ME objective").

    ``H[i] = Hc_i = lam A_i (A_i + lam I)^{-1}`` (eigenvalues ``lam a/(lam + a)``),
    ``theta_hat_i(w) = w - Hc_i (w - b_i)/lam = (A_i + lam I)^{-1}(A_i b_i + lam w)``,
    ``L_true = max_i lam a_max,i/(lam + a_max,i)``, ``gamma2_true`` as for MAML with Hc.
    """

    lam: float
    H: list[np.ndarray] = field(repr=False)
    H_stack: np.ndarray = field(repr=False)
    Hbar: np.ndarray = field(repr=False)
    m: np.ndarray = field(repr=False)
    w_star: np.ndarray = field(repr=False)
    F_min: float
    L_true: float
    gamma2_true: float
    _mse: np.ndarray = field(repr=False)
    _b: np.ndarray = field(repr=False)
    _K: np.ndarray = field(repr=False)  # lam (A_i + lam I)^{-1}, stacked
    _C: np.ndarray = field(repr=False)
    bias: float = 0.0

    def theta_hat(self, i: int, w: np.ndarray) -> np.ndarray:
        """argmin_theta f_i(theta) + lam/2 ||theta - w||^2 (closed form)."""
        return w - self.H_stack[i] @ (w - self._b[i]) / self.lam

    def estimator_mse_clients(self, batch: int) -> np.ndarray:
        """Per-client MSE of the Option-C estimate with exact inner solve (nu = 0).

        Error ``lam (A_i + lam I)^{-1} e_D``: ``lam^2 tr((A+lam I)^{-1} C (A+lam I)^{-1})/|D|``.
        """
        _check_batch_size(batch)
        return self._mse / batch

    def estimator_cov(self, i: int, batch: int) -> np.ndarray:
        """Covariance of client i's Option-C error, ``lam^2 (A+lam I)^{-1} C (A+lam I)^{-1}/|D|``.

        THEORY_SPEC 10.2 (without eta^2); exact inner solve (nu = 0).  Its trace is the MSE.
        """
        _check_batch_size(batch)
        k = self._K[i]
        out = k @ self._C[i] @ k / batch
        return 0.5 * (out + out.T)

    def estimator_mse(self, batch: int) -> float:
        """max_i of :meth:`estimator_mse_clients` (compare with Lemma 6's sigma_c2)."""
        return float(np.max(self.estimator_mse_clients(batch)))


# ------------------------------------------------------------------------------------------
# the problem
# ------------------------------------------------------------------------------------------
class QuadraticProblem(Problem):
    """``f_i(w) = 0.5 (w - b_i)^T A_i (w - b_i) + c_i`` (THEORY_SPEC 9.1).

    Parameters
    ----------
    A : sequence of n symmetric PSD d x d matrices (or an (n, d, d) array).
    b : sequence of n d-vectors (client optima u_i* = b_i), or an (n, d) array.
    c : n values ``c_i = min f_i`` (default zeros).
    noise : ``"additive"`` or ``"sampling"`` (module docstring).
    noise_cov : per-sample covariance S_i: one d x d matrix shared by all clients, or
        a list of n of them (default: zeros, i.e. an exact oracle).
    """

    def __init__(self, A: Sequence[Any] | np.ndarray, b: Sequence[Any] | np.ndarray,
                 c: Sequence[float] | np.ndarray | None = None, noise: str = "additive",
                 noise_cov: Any = None) -> None:
        require(noise in NOISE_KINDS, "noise", noise, f"must be one of {list(NOISE_KINDS)}")
        mats = _matrix_list("A", A)
        n, d = len(mats), mats[0].shape[0]
        for i, a in enumerate(mats):
            require(a.shape == (d, d), f"A[{i}].shape", a.shape,
                    f"must equal A[0].shape = ({d}, {d})")
        try:
            b_arr = np.array([np.asarray(v, dtype=np.float64) for v in b], dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"b must be n = {n} vectors of length d = {d}, got "
                              f"{type(b).__name__} with inconsistent shapes") from exc
        require(b_arr.shape == (n, d), "b.shape", b_arr.shape,
                f"must be (n, d) = ({n}, {d}) to match A")
        check_finite("b", b_arr)
        if c is None:
            c_arr = np.zeros(n)
        else:
            try:
                c_arr = np.asarray(c, dtype=np.float64).reshape(-1)
            except (TypeError, ValueError) as exc:
                raise ConfigError(f"c must be {n} numbers, got {c!r}") from exc
            require(c_arr.shape == (n,), "c.shape", c_arr.shape, f"must be (n,) = ({n},)")
            check_finite("c", c_arr)
        if noise_cov is None:
            s_mats = [np.zeros((d, d)) for _ in range(n)]
        else:
            try:
                nd = np.ndim(noise_cov)
            except (TypeError, ValueError) as exc:
                raise ConfigError(f"noise_cov must be a d x d matrix or a list of {n}, got "
                                  f"{type(noise_cov).__name__}") from exc
            s_mats = (_matrix_list("noise_cov", [noise_cov]) * n if nd == 2
                      else _matrix_list("noise_cov", noise_cov))
            require(len(s_mats) == n, "len(noise_cov)", len(s_mats),
                    f"must equal the number of clients n = {n}")
            for i, s in enumerate(s_mats):
                require(s.shape == (d, d), f"noise_cov[{i}].shape", s.shape,
                        f"must be (d, d) = ({d}, {d})")

        self.n, self.dim, self.noise = n, d, noise
        a_stack, evals, evecs = np.empty((n, d, d)), np.empty((n, d)), np.empty((n, d, d))
        for i, a in enumerate(mats):
            a_stack[i], evals[i], evecs[i] = _check_sym_psd(f"A[{i}]", a)
        s_stack, f_stack = np.empty((n, d, d)), np.empty((n, d, d))
        for i, s in enumerate(s_mats):
            s_stack[i], sev, svec = _check_sym_psd(f"noise_cov[{i}]", s)
            f_stack[i] = _sqrt_factor(s_stack[i], sev, svec)
        self.A_stack = _readonly(a_stack)
        self.b_stack = _readonly(b_arr.copy())
        self.c = _readonly(c_arr.copy())
        self.eigvals = _readonly(evals)
        self.eigvecs = _readonly(evecs)
        self.S_stack = _readonly(s_stack)
        self._chol = _readonly(f_stack)
        self.A = [self.A_stack[i] for i in range(n)]
        self.b = [self.b_stack[i] for i in range(n)]
        self.noise_cov = [self.S_stack[i] for i in range(n)]
        if noise == "additive":
            c_stack = s_stack.copy()
        else:
            c_stack = a_stack @ s_stack @ a_stack
            c_stack = 0.5 * (c_stack + np.swapaxes(c_stack, 1, 2))
        self.C_stack = _readonly(c_stack)
        # diag(V_i^T C_i V_i): the noise in each client's eigenbasis (estimator MSE traces)
        self._c_eig = _readonly(np.einsum("nji,njk,nki->ni", evecs, c_stack, evecs))
        self.shared_hessian = _all_equal(a_stack)

        self.Abar = _readonly(a_stack.mean(axis=0))
        self.m = _readonly(np.einsum("nij,nj->i", a_stack, b_arr) / n)
        self.x_star = _readonly(_psd_solve(self.Abar, self.m))
        self.grad_at_xstar = _readonly(np.einsum("nij,nj->ni", a_stack, self.x_star - b_arr))
        self.f_star = self._direct_value(a_stack, self.x_star)
        self._maml: dict[float, MamlExact] = {}
        self._me: dict[float, MoreauExact] = {}
        self._table: ConstantsTable | None = None

    # --- attributes of THEORY_SPEC 9.1 ------------------------------------------------------
    @property
    def f_i_star(self) -> np.ndarray:
        """min f_i = c_i (attained at b_i)."""
        return self.c

    @property
    def u_star(self) -> np.ndarray:
        """(n, d) client minimisers u_i* = b_i (unique iff A_i > 0)."""
        return self.b_stack

    @property
    def f_star_A(self) -> float:
        """min f (global; [A]'s f*)."""
        return self.f_star

    @property
    def f_star_P(self) -> float:
        """min_i inf f_i = min_i c_i ([P]'s f*)."""
        return float(np.min(self.c))

    @property
    def per_sample_c(self) -> np.ndarray:
        """Sampling model: ``c_i' = c_i - 0.5 tr(A_i S_i)`` of ``ell_i``; additive: ``c``."""
        if self.noise == "additive":
            return self.c
        return self.c - 0.5 * np.einsum("nij,nji->n", self.A_stack, self.S_stack)

    def grad_noise_cov(self, i: int) -> np.ndarray:
        """Per-sample gradient-noise covariance C_i (S_i additive, A_i S_i A_i sampling)."""
        return self.C_stack[i]

    def _direct_value(self, h_stack: np.ndarray, w: np.ndarray) -> float:
        r = w - self.b_stack
        q = np.einsum("ni,nij,nj->n", r, h_stack, r)
        return float(np.mean(self.c) + 0.5 * np.mean(q))

    # --- deterministic oracles --------------------------------------------------------------
    def loss(self, i: int, w: np.ndarray) -> float:
        """f_i(w)."""
        r = w - self.b_stack[i]
        return float(0.5 * (r @ (self.A_stack[i] @ r)) + self.c[i])

    def grad(self, i: int, w: np.ndarray) -> np.ndarray:
        """grad f_i(w) = A_i (w - b_i)."""
        return self.A_stack[i] @ (w - self.b_stack[i])

    def hess(self, i: int, w: np.ndarray) -> np.ndarray:
        """A_i (a read-only view; independent of w)."""
        return self.A_stack[i]

    def hvp(self, i: int, w: np.ndarray, v: np.ndarray) -> np.ndarray:
        """A_i v."""
        return self.A_stack[i] @ v

    def f(self, w: np.ndarray) -> float:
        """f(w) = mean_i f_i(w) (O(n d^2), no cancellation)."""
        return self._direct_value(self.A_stack, np.asarray(w, dtype=np.float64))

    def grad_f(self, w: np.ndarray) -> np.ndarray:
        """grad f(w) = Abar w - m (O(d^2))."""
        return self.Abar @ w - self.m

    def grad_f_sq(self, w: np.ndarray) -> float:
        """||grad f(w)||^2 (O(d^2))."""
        g = self.Abar @ w - self.m
        return float(g @ g)

    def f_gap(self, w: np.ndarray) -> float:
        """f(w) - f* = 0.5 (w - x*)^T Abar (w - x*) (O(d^2), >= 0, no cancellation)."""
        r = w - self.x_star
        return float(0.5 * (r @ (self.Abar @ r)))

    def dist_sq(self, w: np.ndarray) -> float:
        """||w - x*||^2."""
        r = w - self.x_star
        return float(r @ r)

    # --- stochastic oracles -----------------------------------------------------------------
    def sample_batch(self, i: int, size: int, rng: np.random.Generator) -> np.ndarray:
        """A batch of ``size`` samples as one d-vector (draws exactly d standard normals).

        additive: ``e_D = chol(S_i) z / sqrt(size)``; sampling: ``xibar_D = b_i + chol(S_i) z
        / sqrt(size)``.
        """
        _check_batch_size(size)
        e = self._chol[i] @ rng.standard_normal(self.dim)
        e *= 1.0 / math.sqrt(size)
        if self.noise == "additive":
            return e
        e += self.b_stack[i]
        return e

    def batch_grad(self, i: int, w: np.ndarray, batch: np.ndarray) -> np.ndarray:
        """additive: A_i (w - b_i) + e_D; sampling: A_i (w - xibar_D)."""
        if self.noise == "additive":
            out = self.A_stack[i] @ (w - self.b_stack[i])
            out += batch
            return out
        return self.A_stack[i] @ (w - batch)

    def batch_hvp(self, i: int, w: np.ndarray, v: np.ndarray, batch: Any) -> np.ndarray:
        """A_i v (the per-sample Hessian is exactly A_i)."""
        return self.A_stack[i] @ v

    def batch_theta_hat(self, i: int, w: np.ndarray, lam: float, batch: np.ndarray,
                        residual: np.ndarray | None = None) -> np.ndarray:
        """Minimiser of ``h_tilde(theta) = f_tilde_i(theta, D) + lam/2 ||theta - w||^2`` (Option C).

        additive: ``(A_i + lam I)^{-1}(A_i b_i - e_D + lam w)``; sampling: ``(A_i + lam I)^{-1}
        (A_i xibar_D + lam w)``.  Equals ``theta_hat_i(w) - (A_i + lam I)^{-1} (batch_grad -
        grad)`` since the batch gradient is the exact one plus a constant.  With ``residual``
        r, returns the controlled inexact solution ``theta* + (A_i + lam I)^{-1} r`` of
        THEORY_SPEC 9.1, for which ``grad h_tilde(theta) = r`` exactly (so nu = ||r||).
        """
        me = self.me(lam)
        if self.noise == "additive":
            err = batch
        else:
            err = self.A_stack[i] @ (self.b_stack[i] - batch)
        if residual is not None:
            err = err - residual
        k = self.eigvecs[i]
        res = k @ ((k.T @ err) / (self.eigvals[i] + lam))
        return me.theta_hat(i, w) - res

    # --- personalised objectives ------------------------------------------------------------
    def maml(self, alpha: float) -> MamlExact:
        """Exact MAML objective for inner step ``alpha >= 0`` (cached per alpha)."""
        hit = self._cached(self._maml, alpha)
        if hit is not None:
            return hit
        require(isinstance(alpha, (int, float, np.floating, np.integer))
                and math.isfinite(alpha) and alpha >= 0, "alpha", alpha,
                "must be a finite number >= 0")
        key = float(alpha)
        ev = self.eigvals
        hb_eig = ev * (1.0 - key * ev) ** 2
        h_stack = _readonly(_from_eig(self.eigvecs, hb_eig))
        hbar, mb, w_star, f_min, gamma2 = self._aggregate(h_stack)
        out = MamlExact(
            alpha=key, H=[h_stack[i] for i in range(self.n)], H_stack=h_stack, Hbar=hbar,
            m=mb, w_star=w_star, F_min=f_min, L_true=float(np.max(hb_eig)),
            gamma2_true=gamma2,
            _mse_outer=_readonly(np.sum((1.0 - key * ev) ** 2 * self._c_eig, axis=1)),
            _mse_inner=_readonly(np.sum(ev ** 2 * (1.0 - key * ev) ** 2 * self._c_eig,
                                        axis=1)),
            _P=_readonly(_from_eig(self.eigvecs, 1.0 - key * ev)), _A=self.A_stack,
            _C=self.C_stack)
        self._remember(self._maml, key, out)
        return out

    def me(self, lam: float) -> MoreauExact:
        """Exact Moreau-envelope objective for ``lam > 0`` (cached per lam)."""
        hit = self._cached(self._me, lam)
        if hit is not None:
            return hit
        require(isinstance(lam, (int, float, np.floating, np.integer))
                and math.isfinite(lam) and lam > 0, "lam", lam, "must be a finite number > 0")
        key = float(lam)
        ev = self.eigvals
        hc_eig = key * ev / (key + ev)
        h_stack = _readonly(_from_eig(self.eigvecs, hc_eig))
        hbar, mc, w_star, f_min, gamma2 = self._aggregate(h_stack)
        out = MoreauExact(
            lam=key, H=[h_stack[i] for i in range(self.n)], H_stack=h_stack, Hbar=hbar,
            m=mc, w_star=w_star, F_min=f_min, L_true=float(np.max(hc_eig)),
            gamma2_true=gamma2,
            _mse=_readonly(np.sum((key / (ev + key)) ** 2 * self._c_eig, axis=1)),
            _b=self.b_stack, _K=_readonly(_from_eig(self.eigvecs, key / (key + ev))),
            _C=self.C_stack)
        self._remember(self._me, key, out)
        return out

    @staticmethod
    def _cached(cache: dict, key: Any) -> Any:
        """Hot-path lookup (only validated keys are ever stored)."""
        try:
            return cache.get(key)
        except TypeError:  # unhashable: let the validation report it
            return None

    @staticmethod
    def _remember(cache: dict, key: float, value: Any) -> None:
        if len(cache) >= _CACHE_MAX:
            cache.pop(next(iter(cache)))
        cache[key] = value

    def _aggregate(self, h_stack: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                        float, float]:
        """Hbar, m, w* (pinv), min value, exact diversity for clients 0.5 r^T H_i r + c_i."""
        hbar = _readonly(h_stack.mean(axis=0))
        hb = np.einsum("nij,nj->ni", h_stack, self.b_stack)
        mvec = _readonly(hb.mean(axis=0))
        w_star = _readonly(_psd_solve(hbar, mvec))
        f_min = self._direct_value(h_stack, w_star)
        if _all_equal(h_stack):
            dev = hb - mvec
            gamma2 = float(np.mean(np.sum(dev * dev, axis=1)))
        else:
            gamma2 = math.inf
        return hbar, mvec, w_star, f_min, gamma2

    def grad_F_maml(self, w: np.ndarray, alpha: float) -> np.ndarray:
        """grad F^(b)(w) = Hbbar w - mb (closed form, THEORY_SPEC 9.1)."""
        return self.maml(alpha).grad(w)

    def grad_F_maml_sq(self, w: np.ndarray, alpha: float) -> float:
        """||grad F^(b)(w)||^2 in O(d^2)."""
        return self.maml(alpha).grad_sq(w)

    def F_maml(self, w: np.ndarray, alpha: float) -> float:
        """F^(b)(w) = mean_i c_i + 0.5 (w - b_i)^T Hb_i (w - b_i)."""
        return self._direct_value(self.maml(alpha).H_stack, np.asarray(w, dtype=np.float64))

    def theta_hat(self, i: int, w: np.ndarray, lam: float) -> np.ndarray:
        """theta_hat_i(w) = (A_i + lam I)^{-1}(A_i b_i + lam w) (closed form)."""
        return self.me(lam).theta_hat(i, w)

    def grad_F_me(self, w: np.ndarray, lam: float) -> np.ndarray:
        """grad F^(c)(w) = Hcbar w - mc = mean_i lam (w - theta_hat_i(w))."""
        return self.me(lam).grad(w)

    def grad_F_me_sq(self, w: np.ndarray, lam: float) -> float:
        """||grad F^(c)(w)||^2 in O(d^2)."""
        return self.me(lam).grad_sq(w)

    def F_me(self, w: np.ndarray, lam: float) -> float:
        """F^(c)(w) = mean_i c_i + 0.5 (w - b_i)^T Hc_i (w - b_i)."""
        return self._direct_value(self.me(lam).H_stack, np.asarray(w, dtype=np.float64))

    # --- constants ----------------------------------------------------------------------------
    def _build_table(self) -> ConstantsTable:
        """THEORY_SPEC 9.1 table (``constants``, cached by the base class): every entry EXACT
        or INFINITE."""
        ev = self.eigvals
        L = float(np.max(ev))
        mu = float(np.min(ev))
        tr_c = np.trace(self.C_stack, axis1=1, axis2=2)
        dev = self.A_stack - self.Abar
        gamma_h2 = float(np.mean([np.max(np.abs(np.linalg.eigvalsh(x))) ** 2 for x in dev]))
        zero = bool(np.all(self.A_stack == 0.0))
        if self.shared_hessian:
            ab = np.einsum("nij,nj->ni", self.A_stack, self.b_stack)
            dv = ab - ab.mean(axis=0)
            gg = Constant("gamma_g2", float(np.mean(np.sum(dv * dv, axis=1))), Tag.EXACT,
                          "all A_i equal: (1/n) sum ||A (b_i - bbar)||^2, constant in w")
        else:
            gg = Constant("gamma_g2", math.inf, Tag.INFINITE,
                          "Asm 4 fails globally: A_i differ")
        if zero:
            G = Constant("G", 0.0, Tag.EXACT, "all A_i = 0: every gradient vanishes")
            B = Constant("B", 0.0, Tag.EXACT, "all A_i = 0: every f_i is constant")
        else:
            G = Constant("G", math.inf, Tag.INFINITE,
                         "Asm 6 fails globally: ||A_i (w - b_i)|| is unbounded")
            B = Constant("B", math.inf, Tag.INFINITE,
                         "[A] Asm 6 fails: a nonzero quadratic is not Lipschitz")
        cov = "S_i" if self.noise == "additive" else "A_i S_i A_i"
        zeta = float(np.max(np.linalg.norm(self.x_star - self.b_stack, axis=1)))
        return ConstantsTable([
            Constant("L", L, Tag.EXACT, "max_i lam_max(A_i)"),
            Constant("mu", mu, Tag.EXACT, "min_i lam_min(A_i)"),
            Constant("rho", 0.0, Tag.EXACT, "Hessians are constant"),
            Constant("sigma_g2", float(np.max(tr_c)), Tag.EXACT,
                     f"max_i tr(C_i), C_i = {cov}, independent of w (per sample)"),
            Constant("sigma_h2", 0.0, Tag.EXACT, "per-sample Hessian is exactly A_i"),
            gg,
            Constant("gamma_h2", gamma_h2, Tag.EXACT, "(1/n) sum ||A_i - Abar||_2^2"),
            G,
            B,
            Constant("f_star_A", self.f_star, Tag.EXACT, "min f at x* = pinv(Abar) m"),
            Constant("f_star_P", self.f_star_P, Tag.EXACT, "min_i c_i (f_i* = c_i at b_i)"),
            Constant("zeta", zeta, Tag.EXACT, "max_i ||x* - b_i|| (min-norm x*, u_i* = b_i)"),
        ])

    # --- local diagnostics (HEURISTIC: iterates are not confined to a ball) -----------------
    def local_gamma_g2(self, R: float) -> float:
        """HEURISTIC ``max_{||w - x*|| <= R} (1/n) sum_i ||grad f_i(w) - grad f(w)||^2``.

        ``grad f_i - grad f = (A_i - Abar) v + g_i`` with ``v = w - x*``, ``g_i = A_i(x* - b_i)``
        (THEORY_SPEC 9.1); the maximum of this convex quadratic over the ball is solved
        exactly by :func:`max_quadratic_on_ball`.  Certifies nothing about a run.
        """
        require(math.isfinite(R) and R >= 0, "R", R, "must be finite and >= 0")
        dev = self.A_stack - self.Abar
        g = self.grad_at_xstar
        H = np.einsum("nij,njk->ik", dev, dev) / self.n
        h = np.einsum("nij,nj->i", dev, g) / self.n
        k = float(np.mean(np.sum(g * g, axis=1)))
        return max_quadratic_on_ball(H, h, k, R)

    def local_G(self, R: float) -> float:
        """HEURISTIC ``max_i max_{||w - x*|| <= R} ||grad f_i(w)||`` (exact trust-region solve)."""
        require(math.isfinite(R) and R >= 0, "R", R, "must be finite and >= 0")
        best = 0.0
        for i in range(self.n):
            a, g = self.A_stack[i], self.grad_at_xstar[i]
            best = max(best, max_quadratic_on_ball(a @ a, a @ g, float(g @ g), R))
        return math.sqrt(best)

    # --- generator ---------------------------------------------------------------------------
    @classmethod
    def random(cls, n: int, dim: int, mu: float, L: float, heterogeneity: float = 1.0,
               noise_sd: float = 0.1, noise: str = "additive", shared_hessian: bool = True,
               seed: int = 0) -> QuadraticProblem:
        """A random instance whose smallest / largest Hessian eigenvalues are mu and L.

        Spectra: ``mu`` and ``L`` plus ``dim - 2`` values uniform in ``[mu, L]``, rotated by a
        Haar-random orthogonal matrix (QR of a Gaussian with sign fix).  Shared: one A for
        all clients.  Not shared: each A_i has its own spectrum in [mu, L] and rotation;
        client 0 carries mu and client n-1 carries L (so both are attained overall).
        ``b_i ~ heterogeneity * N(0, I)``, ``c = 0``, ``noise_cov = noise_sd^2 I``.
        mu and L are reproduced to rounding (~1e-15 relative).  Deterministic in ``seed``.
        """
        require(isinstance(n, (int, np.integer)) and n >= 1, "n", n, "must be an integer >= 1")
        require(isinstance(dim, (int, np.integer)) and dim >= 1, "dim", dim,
                "must be an integer >= 1")
        for name, val in (("mu", mu), ("L", L), ("heterogeneity", heterogeneity),
                          ("noise_sd", noise_sd)):
            require(isinstance(val, (int, float, np.integer, np.floating))
                    and not isinstance(val, bool), name, val, "must be a real number")
        require(isinstance(shared_hessian, (bool, np.bool_)), "shared_hessian", shared_hessian,
                "must be a bool")
        require(math.isfinite(L) and L >= 0, "L", L, "must be finite and >= 0")
        require(math.isfinite(mu) and 0 <= mu <= L, "mu", mu, f"must be in [0, L={L}]")
        require(math.isfinite(heterogeneity) and heterogeneity >= 0, "heterogeneity",
                heterogeneity, "must be finite and >= 0")
        require(math.isfinite(noise_sd) and noise_sd >= 0, "noise_sd", noise_sd,
                "must be finite and >= 0")
        require(noise in NOISE_KINDS, "noise", noise, f"must be one of {list(NOISE_KINDS)}")
        require(mu == L or dim >= 2 or (not shared_hessian and n >= 2), "dim", dim,
                "must be >= 2 to carry both mu and L in one matrix (mu != L)")
        require(isinstance(seed, (int, np.integer)) and seed >= 0, "seed", seed,
                "must be a non-negative integer")
        rng = np.random.default_rng(int(seed))

        def rotation() -> np.ndarray:
            q, r = np.linalg.qr(rng.standard_normal((dim, dim)))
            return q * np.where(np.diag(r) < 0, -1.0, 1.0)[None, :]

        def spectrum(lo: bool, hi: bool) -> np.ndarray:
            s = rng.uniform(mu, L, size=dim)
            if lo:
                s[0] = mu
            if hi:
                s[-1] = L
            return s

        def build(s: np.ndarray) -> np.ndarray:
            q = rotation()
            a = (q * s[None, :]) @ q.T
            return 0.5 * (a + a.T)

        if shared_hessian:
            a0 = build(spectrum(True, True))
            mats = [a0] * n
        else:
            mats = [build(spectrum(i == 0, i == n - 1)) for i in range(n)]
        b = heterogeneity * rng.standard_normal((n, dim))
        return cls(mats, b, None, noise=noise, noise_cov=noise_sd ** 2 * np.eye(dim))

    def __repr__(self) -> str:
        return (f"QuadraticProblem(n={self.n}, dim={self.dim}, noise={self.noise!r}, "
                f"shared_hessian={self.shared_hessian})")
