"""Exact oracle of Per-FedAvg on quadratics with a shared Hessian (docs/theory/per-fedavg.md 6).

Model: ``f_i(w) = 1/2 (w - c_i)^T A (w - c_i)``, per-sample gradient ``A (w - c_i) + xi``,
``xi ~ N(0, Sigma)`` (fedsim's additive noise), exact per-sample Hessian ``A``; eq. (8) with
fresh independent batches D (inner), D' (outer).  One client step is

    w <- w - beta M (w - c_i) - beta (I - alpha A)(xibar_{D'} - alpha A xibar_D),
    M = (I - alpha A) A (I - alpha A)  (the Hessian of F).

In the eigenbasis of A every direction j is a scalar recursion (both readers derived it
independently; reader 1's matrix form was checked against a literal Monte Carlo of
Algorithm 1 to 6e-4, reader 2's against brute-force enumeration of all 2^K sampling paths).
With ``h = M_jj``, ``p = 1 - beta h``, ``v = q Gamma_jj`` (the variance of the sampled mean
centre, finite-population formula (93), ``q = (n-s)/(s(n-1))``) and the per-step noise
``Q = beta^2 (1-alpha a)^2 Sigma_jj (1/D' + alpha^2 a^2/D)``::

    E e_{k+1,t}^2 = p^{2t} S_k + (1-p^t)^2 v + Q (1-p^{2t})/((1-p^2) s),   e = w - cbar
    S_{k+1}       = p^{2 tau} S_k + (1-p^tau)^2 v + Q (1-p^{2 tau})/((1-p^2) s)
    LHS(K)        = (1/(tau K)) sum_j h_j^2 sum_{k<K} sum_{t<tau} E e_{k+1,t,j}^2

The sums over t and k are in closed form; the small differences ``1 - p^t`` use ``expm1``
and the squared sum uses a direct sum (tau <= 4e6) or its Taylor series, so the value is
accurate to a few ulp even at beta = 1e-12, tau = 1e4, K = 1e11 (the counterexample E-F1).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fedsim.errors import require

__all__ = ["perfedavg_quadratic_exact", "geom_defect", "sum_sq_defect"]

_DIRECT_MAX = 4_000_000


def geom_defect(y: float, N: float) -> float:
    """``sum_{k<N} (1 - exp(-k y))`` for ``y >= 0`` without cancellation."""
    if y == 0.0 or N <= 1:
        return 0.0
    if N * y > 1e-3:
        return N - (-math.expm1(-N * y)) / (-math.expm1(-y))
    # series: sum_k (ky - (ky)^2/2 + (ky)^3/6 - (ky)^4/24)
    s1 = N * (N - 1) / 2.0
    s2 = (N - 1) * N * (2 * N - 1) / 6.0
    s3 = s1 * s1
    s4 = (N - 1) * N * (2 * N - 1) * (3 * (N - 1) ** 2 + 3 * (N - 1) - 1) / 30.0
    return y * s1 - y**2 * s2 / 2 + y**3 * s3 / 6 - y**4 * s4 / 24


def sum_sq_defect(x: float, N: int) -> float:
    """``sum_{t<N} (1 - exp(-t x))^2`` for ``x >= 0`` (direct sum or Taylor series)."""
    if x == 0.0 or N <= 1:
        return 0.0
    if N <= _DIRECT_MAX:
        t = np.arange(N, dtype=np.float64)
        return float(np.sum(np.expm1(-t * x) ** 2))
    if N * x < 1e-2:  # (1-e^-u)^2 = u^2 - u^3 + 7/12 u^4 - 1/4 u^5 + 31/360 u^6
        Nf = float(N)
        ps = [_power_sum(Nf, k) for k in range(2, 7)]
        co = [1.0, -1.0, 7 / 12, -1 / 4, 31 / 360]
        return sum(c * x ** (k + 2) * p for k, (c, p) in enumerate(zip(co, ps, strict=True)))
    return 2.0 * geom_defect(x, N) - geom_defect(2.0 * x, N)


def _power_sum(N: float, k: int) -> float:
    """``sum_{t<N} t^k`` for k = 2..6 (Faulhaber)."""
    m = N - 1
    return {2: m * (m + 1) * (2 * m + 1) / 6,
            3: (m * (m + 1) / 2) ** 2,
            4: m * (m + 1) * (2 * m + 1) * (3 * m * m + 3 * m - 1) / 30,
            5: m * m * (m + 1) ** 2 * (2 * m * m + 2 * m - 1) / 12,
            6: m * (m + 1) * (2 * m + 1) * (3 * m**4 + 6 * m**3 - 3 * m + 1) / 42}[k]


def perfedavg_quadratic_exact(*, A: Any, centers: Any, alpha: float, beta: float, tau: int,
                              K: Any, w0: Any, Sigma: Any = None, D: int = 1, Dp: int = 1,
                              s: int | None = None) -> np.ndarray | float:
    """Exact ``(1/(tau K)) sum_{k<K} sum_{t<tau} E||grad F(wbar_{k+1,t})||^2`` (module docstring).

    ``A``: the shared Hessian (d x d, PSD); ``centers``: the n minimisers ``c_i``;
    ``Sigma``: per-sample gradient-noise covariance (default 0); ``s``: clients sampled per
    round, uniformly without replacement (default n: full participation).  ``K`` may be an
    array; the result then has its shape.
    """
    A = np.atleast_2d(np.asarray(A, dtype=np.float64))
    C = np.asarray(centers, dtype=np.float64).reshape(-1, A.shape[0])
    n, d = C.shape
    s = n if s is None else int(s)
    require(1 <= s <= n, "s", s, f"must be in [1, n = {n}]")
    Sig = np.zeros((d, d)) if Sigma is None else np.atleast_2d(np.asarray(Sigma, float))
    a, V = np.linalg.eigh(0.5 * (A + A.T))
    require(bool(np.all(a >= -1e-12)), "A", a.min(), "must be positive semidefinite")
    cbar = C.mean(axis=0)
    e0 = V.T @ (np.asarray(w0, dtype=np.float64).reshape(d) - cbar)
    dev = (C - cbar) @ V
    gam = np.mean(dev**2, axis=0)
    sig = np.einsum("ij,jk,ki->i", V.T, Sig, V)
    q = 0.0 if s == n else (n - s) / (s * (n - 1))
    Ks = np.atleast_1d(np.asarray(K, dtype=np.float64))
    tot = np.zeros_like(Ks)
    for j in range(d):
        h = a[j] * (1 - alpha * a[j]) ** 2
        if h == 0.0:
            continue
        require(beta * h < 2.0, "beta", beta, "must keep |1 - beta h| < 1 in every direction")
        x = -math.log1p(-beta * h) if beta * h < 1 else None
        if x is None:  # p <= 0: tiny tau only, no cancellation issues
            p = 1.0 - beta * h
            P = np.array([p**t for t in range(tau + 1)])
            G1 = float(np.sum(P[:tau] ** 2))
            sq = float(np.sum((1 - P[:tau]) ** 2))
            lin2 = float(np.sum(1 - P[:tau] ** 2))
            one_tau, a_k = 1 - P[tau], P[tau] ** 2
            nt = 1 - P[tau] ** 2
        else:
            G1 = (-math.expm1(-2 * tau * x)) / (-math.expm1(-2 * x))
            sq = sum_sq_defect(x, tau)
            lin2 = geom_defect(2 * x, tau)
            one_tau = -math.expm1(-tau * x)
            a_k = math.exp(-2 * tau * x)
            nt = -math.expm1(-2 * tau * x)
        one_m_p2 = beta * h * (2 - beta * h)
        Qn = beta**2 * (1 - alpha * a[j]) ** 2 * sig[j] * (1.0 / Dp + alpha**2 * a[j] ** 2 / D)
        Qn /= s
        v = q * gam[j]
        G2 = v * sq + Qn * lin2 / one_m_p2
        c_k = one_tau**2 * v + Qn * nt / one_m_p2
        S0 = e0[j] ** 2
        for i, Kf in enumerate(Ks):
            if a_k < 1.0:  # nt = 1 - a_k, computed without cancellation
                geo = (-math.expm1(Kf * math.log(a_k))) / nt if a_k > 0 else 1.0
                defect = geom_defect(-math.log(a_k), Kf) / nt if a_k > 0 else Kf - 1.0
                sumS = S0 * geo + c_k * defect
            else:
                sumS = S0 * Kf + c_k * Kf * (Kf - 1) / 2.0
            tot[i] += h * h * (G1 * sumS + Kf * G2)
    out = tot / (tau * Ks)
    return out if np.ndim(K) else float(out[0])
