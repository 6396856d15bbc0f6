"""Random quadratic instances with prescribed curvature (THEORY_SPEC 9.1).

:func:`random_client_data` draws the matrices ``A_i``, the optima ``b_i`` and the noise
covariance of :meth:`QuadraticProblem.random <fedsim.problems.quadratic.QuadraticProblem.random>`:
Hessian spectra whose extreme eigenvalues are exactly ``mu`` and ``L``, rotated by
Haar-random orthogonal matrices, deterministic in ``seed``.
"""

from __future__ import annotations

import math

import numpy as np

from fedsim.errors import check_integer, check_number, require

__all__ = ["NOISE_KINDS", "random_client_data"]

#: the two gradient-noise models of THEORY_SPEC 9.1 (see :mod:`fedsim.problems.quadratic`)
NOISE_KINDS = ("additive", "sampling")


def random_client_data(n: int, dim: int, mu: float, L: float, heterogeneity: float = 1.0,
                       noise_sd: float = 0.1, noise: str = "additive",
                       shared_hessian: bool = True, seed: int = 0
                       ) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """A random instance whose smallest / largest Hessian eigenvalues are mu and L.

    Spectra: ``mu`` and ``L`` plus ``dim - 2`` values uniform in ``[mu, L]``, rotated by a
    Haar-random orthogonal matrix (QR of a Gaussian with sign fix).  Shared: one A for
    all clients.  Not shared: each A_i has its own spectrum in [mu, L] and rotation;
    client 0 carries mu and client n-1 carries L (so both are attained overall).
    ``b_i ~ heterogeneity * N(0, I)``, ``c = 0``, ``noise_cov = noise_sd^2 I``.
    mu and L are reproduced to rounding (~1e-15 relative).  Deterministic in ``seed``.
    """
    check_integer("n", n, low=1)
    check_integer("dim", dim, low=1)
    for name, val in (("mu", mu), ("L", L), ("heterogeneity", heterogeneity),
                      ("noise_sd", noise_sd)):
        check_number(name, val, allow_inf=True)
    require(isinstance(shared_hessian, (bool, np.bool_)), "shared_hessian", shared_hessian,
            "must be a bool")
    require(math.isfinite(L) and L >= 0, "L", L, "must be finite and >= 0")
    require(math.isfinite(mu) and 0 <= mu <= L, "mu", mu, f"must be in [0, L={L}]")
    require(math.isfinite(heterogeneity) and heterogeneity >= 0, "heterogeneity",
            heterogeneity, "must be finite and >= 0")
    require(math.isfinite(noise_sd) and noise_sd >= 0, "noise_sd", noise_sd,
            "must be finite and >= 0")
    require(noise_sd <= 1e150, "noise_sd", noise_sd,
            "must be <= 1e150 (the noise covariance noise_sd^2 I must be finite)")
    require(noise in NOISE_KINDS, "noise", noise, f"must be one of {list(NOISE_KINDS)}")
    require(mu == L or dim >= 2 or (not shared_hessian and n >= 2), "dim", dim,
            "must be >= 2 to carry both mu and L in one matrix (mu != L)")
    check_integer("seed", seed, low=0)
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
        # each client's spectrum, then its rotation's Gaussian, drawn in the order of the
        # client-by-client loop (the stream's numbers); the QR and the products run
        # stacked, one LAPACK / BLAS call per matrix as the loop's, so the bits are the
        # loop's (tests/problems/test_quadratic_vector_setup.py)
        spec, gauss = np.empty((n, dim)), np.empty((n, dim, dim))
        for i in range(n):
            spec[i] = rng.uniform(mu, L, size=dim)
            gauss[i] = rng.standard_normal((dim, dim))
        spec[0, 0] = mu
        spec[n - 1, -1] = L
        q, r = np.linalg.qr(gauss)
        q = q * np.where(np.diagonal(r, axis1=1, axis2=2) < 0, -1.0, 1.0)[:, None, :]
        a = (q * spec[:, None, :]) @ np.swapaxes(q, 1, 2)
        mats = list(0.5 * (a + np.swapaxes(a, 1, 2)))
    b = heterogeneity * rng.standard_normal((n, dim))
    return mats, b, noise_sd ** 2 * np.eye(dim)
