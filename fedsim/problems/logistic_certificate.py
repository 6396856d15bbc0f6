"""Minimisers of a weighted logistic objective, with a-posteriori certificates (THEORY_SPEC 9.4).

:func:`solve_weighted_logistic` minimises one objective by Newton's method, after the
LPs of :mod:`fedsim.problems.separability` said whether a minimiser exists, and
:func:`certify` bounds the distance to the true minimiser and the value gap from the
local curvature ``mu_loc(r)`` (THEORY_SPEC 9.4).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from fedsim.problems.newton import newton_minimize
from fedsim.problems.separability import Separability
from fedsim.problems.weighted_logistic import WeightedLogistic

__all__ = ["Certificate", "Solution", "certify", "solve_weighted_logistic"]

_EPS = float(np.finfo(np.float64).eps)


@dataclass(frozen=True)
class Certificate:
    """A-posteriori certificate for a computed minimiser ``xhat`` (THEORY_SPEC 9.4).

    ``mu_loc(r) = lam_min( sum_j c_j exp(-(|z_j(xhat)| + r ||x_j||))/4 x_j x_j^T ) + nu_reg``
    lower-bounds the curvature on the ball ``B(xhat, r)`` (because ``s'(z) >= exp(-|z|)/4``).
    If ``g := ||grad f(xhat)|| (+ round-off allowance) <= mu_loc(r) r / 2`` the minimiser
    lies in the ball and ``||xhat - x*|| <= g/mu_loc(r)``,
    ``0 <= f(xhat) - f* <= g^2/(2 mu_loc(r))``.  ``valid`` is False when no radius
    passes the test (or when there is no minimiser); the bounds are then ``inf``.
    """

    valid: bool
    radius: float
    mu_loc: float
    grad_norm: float
    dist_bound: float
    f_gap_bound: float
    note: str = ""


def certify(data: WeightedLogistic, xhat: np.ndarray, note: str = "") -> Certificate:
    g = float(np.linalg.norm(data.grad(xhat))) + data.grad_error_bound(xhat)
    absz = np.abs(data.rows @ xhat)
    d = data.dim

    def mu_loc(r: float) -> float:
        c = data.weights * np.exp(-(absz + r * data.row_norms)) / 4.0
        M = (data.rows.T * c) @ data.rows
        lam = float(np.linalg.eigvalsh(0.5 * (M + M.T))[0])
        # round-off allowances: backward-stable symmetric eigensolver, and a relative
        # 1e-9 for the margins |z_j| and exp() (relative error ~ eps |z| <= 1e-12)
        lam = lam * (1.0 - 1e-9) - 4.0 * d * _EPS * float(np.linalg.norm(M))
        return lam + data.nu

    m0 = mu_loc(0.0)
    if not m0 > 0.0:
        return Certificate(False, math.nan, m0, g, math.inf, math.inf,
                           (note + "; " if note else "") + "mu_loc(0) <= 0: no curvature")
    r = 2.0 * g / m0
    for _ in range(60):
        m = mu_loc(r)
        if m > 0.0 and g <= m * r / 2.0:
            return Certificate(True, r, m, g, g / m, g * g / (2.0 * m), note)
        r *= 1.5
    return Certificate(False, math.nan, m0, g, math.inf, math.inf,
                       (note + "; " if note else "") + "no radius r with ||grad|| <= mu_loc(r) r/2")



class Solution(NamedTuple):
    """``(x, f, certificate)``; ``x`` is None when no minimiser exists."""

    x: np.ndarray | None
    f: float
    certificate: Certificate



def _solve_in_row_space(data: WeightedLogistic, rank: int) -> Solution:
    """Minimise an unregularised, non-separable objective over the row space of its data.

    The minimiser set is ``x + null(X)``; the min-norm point ``x`` is returned, and the
    certificate is computed for the reduced (strictly convex) problem in the row space.
    """
    if rank == 0:  # every row is zero: f is constant
        return Solution(np.zeros(data.dim), data.value(np.zeros(data.dim)),
                        Certificate(True, 0.0, 0.0, 0.0, 0.0, 0.0, "constant objective"))
    _, _, vt = np.linalg.svd(data.rows, full_matrices=False)
    V = vt[:rank].T
    red = WeightedLogistic(data.rows @ V, data.weights, 0.0)
    res = newton_minimize(red.value, red.grad, red.hess, np.zeros(rank))
    cert = certify(red, res.x, "" if res.converged else res.message)
    x = V @ res.x
    return Solution(x, data.value(x), cert)



def solve_weighted_logistic(data: WeightedLogistic, sep: Separability) -> Solution:
    """Minimise one weighted logistic objective (THEORY_SPEC 9.4)."""
    if data.nu == 0.0 and sep.kind == "strictly_separable":
        return Solution(None, 0.0, Certificate(
            False, math.nan, 0.0, 0.0, math.inf, math.inf,
            "strictly separable: inf f = 0 exactly, NOT attained (no minimiser)"))
    if data.nu == 0.0 and sep.kind == "weakly_separable":
        keep = np.ones(data.rows.shape[0], dtype=bool)
        keep[list(sep.separable_rows)] = False
        rest = WeightedLogistic(data.rows[keep], data.weights[keep], 0.0)
        xr, fr, cert = _solve_in_row_space(rest, int(np.linalg.matrix_rank(rest.rows)))
        note = (f"weakly separable: NO minimiser; inf f = min over the {int(keep.sum())} "
                f"non-separable rows ({len(sep.separable_rows)} rows separable), NOT attained")
        return Solution(None, fr, Certificate(cert.valid, cert.radius, cert.mu_loc,
                                              cert.grad_norm, math.inf, cert.f_gap_bound,
                                              note + ("; " + cert.note if cert.note else "")))
    if data.nu == 0.0 and sep.kind == "attained_not_unique":
        x, fx, cert = _solve_in_row_space(data, sep.rank)
        note = "minimiser NOT unique (rank < d): min-norm point; certificate in the row space"
        return Solution(x, fx, Certificate(cert.valid, cert.radius, cert.mu_loc, cert.grad_norm,
                                           cert.dist_bound, cert.f_gap_bound,
                                           note + ("; " + cert.note if cert.note else "")))
    res = newton_minimize(data.value, data.grad, data.hess, np.zeros(data.dim))
    cert = certify(data, res.x, "" if res.converged else res.message)
    return Solution(res.x, data.value(res.x), cert)
