"""Exact personalised objectives on quadratics: MAML F^(b), Moreau F^(c) (THEORY_SPEC 9.1).

On quadratic clients both personalised objectives of [P] eq. (9)-(10) are quadratics again:

* MAML ([P] eq. (9)): ``F_i^(b)(w) = c_i + 0.5 (w-b_i)^T Hb_i (w-b_i)``,
  ``Hb_i = A_i (I - alpha A_i)^2`` (:func:`build_maml_exact`);
* Moreau envelope ([P] eq. (10)): ``F_i^(c)(w) = c_i + 0.5 (w-b_i)^T Hc_i (w-b_i)``,
  ``Hc_i = lam A_i (A_i + lam I)^{-1}`` (:func:`build_moreau_exact`).

Each object also carries the exact mean-squared error of the Option-B / Option-C gradient
estimators (THEORY_SPEC 9.1, 10.2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fedsim.errors import check_integer
from fedsim.problems.quadratic_facts import QuadraticFacts
from fedsim.problems.quadratic_linalg import (
    all_equal,
    from_eigen,
    mean_quadratic_value,
    psd_solve,
    readonly,
)

__all__ = ["MamlExact", "MoreauExact", "build_maml_exact", "build_moreau_exact",
           "check_batch_size"]


def check_batch_size(size: Any) -> None:
    """A batch size is an integer >= 1 (``batch size must be an integer >= 1, got ...``)."""
    if type(size) is not int or size < 1:  # fast path for the common case; the validator decides
        check_integer("batch size", size, low=1)


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
        check_batch_size(batch_outer)
        check_batch_size(batch_inner)
        return self._mse_outer / batch_outer + self.alpha ** 2 * self._mse_inner / batch_inner

    def estimator_cov(self, i: int, batch_outer: int, batch_inner: int) -> np.ndarray:
        """Covariance of client i's Option-B error (THEORY_SPEC 10.2, without eta^2).

        ``(I - aA_i)(C_i/|D| + a^2 A_i C_i A_i/|D'|)(I - aA_i)``; its trace is the MSE.
        """
        check_batch_size(batch_outer)
        check_batch_size(batch_inner)
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
        check_batch_size(batch)
        return self._mse / batch

    def estimator_cov(self, i: int, batch: int) -> np.ndarray:
        """Covariance of client i's Option-C error, ``lam^2 (A+lam I)^{-1} C (A+lam I)^{-1}/|D|``.

        THEORY_SPEC 10.2 (without eta^2); exact inner solve (nu = 0).  Its trace is the MSE.
        """
        check_batch_size(batch)
        k = self._K[i]
        out = k @ self._C[i] @ k / batch
        return 0.5 * (out + out.T)

    def estimator_mse(self, batch: int) -> float:
        """max_i of :meth:`estimator_mse_clients` (compare with Lemma 6's sigma_c2)."""
        return float(np.max(self.estimator_mse_clients(batch)))


def _aggregate(problem: QuadraticFacts, h_stack: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, float]:
    """Hbar, m, w* (pinv), min value, exact diversity for clients 0.5 r^T H_i r + c_i."""
    hbar = readonly(h_stack.mean(axis=0))
    hb = np.einsum("nij,nj->ni", h_stack, problem.b_stack)
    mvec = readonly(hb.mean(axis=0))
    w_star = readonly(psd_solve(hbar, mvec))
    f_min = mean_quadratic_value(problem.c, problem.b_stack, h_stack, w_star)
    if all_equal(h_stack):
        dev = hb - mvec
        gamma2 = float(np.mean(np.sum(dev * dev, axis=1)))
    else:
        gamma2 = math.inf
    return hbar, mvec, w_star, f_min, gamma2


def build_maml_exact(problem: QuadraticFacts, alpha: float) -> MamlExact:
    """The exact MAML objective of ``problem`` for a validated inner step ``alpha >= 0``."""
    ev = problem.eigvals
    hb_eig = ev * (1.0 - alpha * ev) ** 2
    h_stack = readonly(from_eigen(problem.eigvecs, hb_eig))
    hbar, mb, w_star, f_min, gamma2 = _aggregate(problem, h_stack)
    noise_eig = problem.noise_in_eigenbasis
    return MamlExact(
        alpha=alpha, H=[h_stack[i] for i in range(problem.n)], H_stack=h_stack, Hbar=hbar,
        m=mb, w_star=w_star, F_min=f_min, L_true=float(np.max(hb_eig)),
        gamma2_true=gamma2,
        _mse_outer=readonly(np.sum((1.0 - alpha * ev) ** 2 * noise_eig, axis=1)),
        _mse_inner=readonly(np.sum(ev ** 2 * (1.0 - alpha * ev) ** 2 * noise_eig,
                                   axis=1)),
        _P=readonly(from_eigen(problem.eigvecs, 1.0 - alpha * ev)), _A=problem.A_stack,
        _C=problem.C_stack)


def build_moreau_exact(problem: QuadraticFacts, lam: float) -> MoreauExact:
    """The exact Moreau-envelope objective of ``problem`` for a validated ``lam > 0``."""
    ev = problem.eigvals
    hc_eig = lam * ev / (lam + ev)
    h_stack = readonly(from_eigen(problem.eigvecs, hc_eig))
    hbar, mc, w_star, f_min, gamma2 = _aggregate(problem, h_stack)
    return MoreauExact(
        lam=lam, H=[h_stack[i] for i in range(problem.n)], H_stack=h_stack, Hbar=hbar,
        m=mc, w_star=w_star, F_min=f_min, L_true=float(np.max(hc_eig)),
        gamma2_true=gamma2,
        _mse=readonly(np.sum((lam / (ev + lam)) ** 2 * problem.noise_in_eigenbasis, axis=1)),
        _b=problem.b_stack, _K=readonly(from_eigen(problem.eigvecs, lam / (lam + ev))),
        _C=problem.C_stack)
