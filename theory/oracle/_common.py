"""What the exact oracles share: input checks and the affine client maps (THEORY_SPEC 10).

* :func:`schedule`, :func:`event_probs`, :func:`quadratic_data`, :func:`vector` -- checked
  inputs (numbers through :mod:`fedsim.errors`' validators);
* :func:`local_affine_map` -- the Q/M-step affine client map of a quadratic in an eigenbasis
  (section 10.1), :func:`check_psd` and :func:`record_steps`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from fedsim.errors import FedsimError, check_finite, check_positive, require

__all__ = ["PSD_RTOL", "Schedule", "schedule", "event_probs", "quadratic_data", "vector",
           "geom_sum", "local_affine_map", "check_psd", "record_steps"]

#: P (as a covariance) may have eigenvalues down to ``-PSD_RTOL * trace`` (section 10.1).
PSD_RTOL: float = 1e-10

Schedule = float | Callable[[int], float]


def schedule(alpha: Schedule, name: str = "alpha_schedule") -> Callable[[int], float]:
    """A step-size schedule as a callable k -> alpha_k, every value checked when used."""
    if callable(alpha):
        def sched(k: int) -> float:
            return check_positive(f"{name}({k})", alpha(k))
        return sched
    const = check_positive(name, alpha)
    return lambda k: const


def event_probs(p: Any, p_s: Any, n: int) -> tuple[np.ndarray, float]:
    """Validate [A]'s event law: p_i > 0, p_s > 0, sum_i p_i + p_s = 1 (THEORY_SPEC H7.3)."""
    parr = np.asarray(p, dtype=np.float64)
    require(parr.shape == (n,), "p", parr.shape, f"must have shape (n,) = ({n},)")
    check_finite("p", parr)
    require(bool(np.all(parr > 0)), "p", parr.tolist(), "must have every entry > 0")
    ps = check_positive("p_s", p_s)
    tot = float(parr.sum()) + ps
    require(abs(tot - 1.0) <= 1e-12, "p", parr.tolist(),
            f"must satisfy sum(p) + p_s = 1 within 1e-12 (sum is {tot!r})")
    return parr, ps


def quadratic_data(problem: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stack the quadratic clients' (A_i, b_i, C_i) as (n,d,d), (n,d), (n,d,d) arrays."""
    for attr in ("A", "b", "grad_noise_cov"):
        require(hasattr(problem, attr), "problem", type(problem).__name__,
                f"must be a quadratic problem exposing '{attr}' (docs/INTERNALS.md section 1)")
    A = np.asarray(problem.A, dtype=np.float64)
    b = np.asarray(problem.b, dtype=np.float64)
    require(A.ndim == 3 and A.shape[1] == A.shape[2], "problem.A", A.shape,
            "must stack n square d x d matrices")
    n, d = A.shape[0], A.shape[1]
    require(b.shape == (n, d), "problem.b", b.shape, f"must have shape ({n}, {d})")
    C = np.stack([np.asarray(problem.grad_noise_cov(i), dtype=np.float64) for i in range(n)])
    require(C.shape == (n, d, d), "problem.grad_noise_cov", C.shape,
            f"must give d x d matrices, shape ({n}, {d}, {d}) stacked")
    check_finite("problem.A", A)
    check_finite("problem.b", b)
    check_finite("problem.grad_noise_cov", C)
    require(bool(np.allclose(A, A.transpose(0, 2, 1), rtol=0, atol=1e-12 * max(1.0, abs(A).max()))),
            "problem.A", "non-symmetric", "must hold symmetric matrices")
    return A, b, C


def vector(name: str, value: Any, d: int) -> np.ndarray:
    v = np.asarray(value, dtype=np.float64).reshape(-1) if np.ndim(value) else None
    require(v is not None and v.shape == (d,), name, np.shape(value), f"must have shape ({d},)")
    check_finite(name, v)
    return v.copy()


# ---------------------------------------------------------------------------------------
# affine Q/M-step client maps in an eigenbasis
# ---------------------------------------------------------------------------------------
def geom_sum(a: Any, lp: np.ndarray, lq: np.ndarray, M: int) -> np.ndarray:
    """sum_{m<M} ((1 - a lp)(1 - a lq))^m elementwise, without cancellation near ratio 1."""
    h = a * (lp + lq) - a * a * lp * lq            # = 1 - r, computed without cancelling
    if h.size and 0.0 < h.min() and h.max() < 1.0:  # common case: 0 < r < 1
        return -np.expm1(M * np.log1p(-h)) / h
    out = np.empty(h.shape)
    small = h < 1.0                                # r > 0: use -expm1(M log1p(-h)) / h
    zero = h == 0.0
    mid = small & ~zero
    out[zero] = M
    hm = h[mid]
    out[mid] = -np.expm1(M * np.log1p(-hm)) / hm
    big = ~small                                    # r <= 0: 1 - r >= 1, no cancellation
    r = 1.0 - h[big]
    out[big] = (1.0 - r ** M) / h[big]
    return out


def local_affine_map(U: np.ndarray, ev: np.ndarray, Ct: np.ndarray, a: Any,
                     M: int) -> tuple[np.ndarray, np.ndarray]:
    """The M-step map x <- x - a (H (x - b) + e), e ~ N(0, C), per client, in H's eigenbasis.

    THEORY_SPEC 10.1 ("eigenbasis evaluation"): with ``H_i = U_i diag(ev_i) U_i^T`` and
    ``Ct_i = U_i^T C_i U_i`` the M-fold composition is
    ``x_M - b = R_i (x_0 - b) + nz``, ``R_i = U diag((1 - a ev)^M) U^T`` and
    ``Cov nz = Sig_i = a^2 sum_{m<M} (I - aH)^m C (I - aH)^m = U [Ct o Kmat] U^T`` with
    ``Kmat_pq = a^2 (1 - r_pq^M)/(1 - r_pq)``, ``r_pq = (1 - a ev_p)(1 - a ev_q)`` (limit M).

    Shapes: ``U`` (n,d,d), ``ev`` (n,d), ``Ct`` (n,d,d); ``a`` a scalar or an array of steps
    of shape (m,).  Returns ``(R, Sig)``, each (n,d,d), or (m,n,d,d) for an array ``a``.
    """
    av = np.asarray(a, dtype=np.float64)
    a2 = av[..., None, None]
    a3 = av[..., None, None, None]
    Rdiag = (1.0 - a2 * ev) ** M
    Ut = U.transpose(0, 2, 1)
    R = np.matmul(U * Rdiag[..., None, :], Ut)
    K = (a3 * a3) * geom_sum(a3, ev[:, :, None], ev[:, None, :], M)
    Sig = np.matmul(np.matmul(U, Ct * K), Ut)
    Sig = 0.5 * (Sig + np.swapaxes(Sig, -1, -2))
    return R, Sig


def check_psd(cov: np.ndarray, scale: float, where: str) -> None:
    """Raise FedsimError if ``cov`` has an eigenvalue below ``-PSD_RTOL * scale``."""
    sym = 0.5 * (cov + cov.T)
    lmin = float(np.linalg.eigvalsh(sym)[0])
    tol = PSD_RTOL * max(scale, np.finfo(np.float64).tiny)
    if not lmin >= -tol:
        raise FedsimError(f"{where}: the second-moment matrix lost positive semidefiniteness "
                          f"(lambda_min={lmin:.3e} < -{tol:.3e}); this is a bug in the oracle")


def record_steps(K: int, every: int) -> np.ndarray:
    ks = np.arange(0, K + 1, every)
    if ks[-1] != K:
        ks = np.append(ks, K)
    return ks


# ---------------------------------------------------------------------------------------
# AREA: exact moment recursion (THEORY_SPEC 10.1)
