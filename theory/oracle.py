"""Exact-expectation oracles: the measured quantities of the theorems, computed exactly.

THEORY_SPEC section 10.  Four oracles, none of which simulates anything:

* :func:`area_moments` -- AREA ([A] Appendix A model, THEORY_SPEC 2.2) on quadratic clients
  with Gaussian gradient noise.  The first and second moments of the stacked centred state
  ``z_k = (x_1..x_n, y_1..y_n, x_s) - x*`` obey an exact affine recursion (section 10.1, block
  form); augmented with ``Ssum_k = sum_{j<k} (x_{s,j} - x*)`` it also gives the ergodic
  average of Theorem 8.  Cost O(n^2 d^3) per step, never the N^2 x N^2 map.
* :func:`fedasync_window_moments` -- FedAsync / PersA-FL Options A, B (exact Hessian), C
  (exact inner solve) in the bounded-window model of section 10.2(a), which satisfies [P]
  Assumption 1 exactly; gives the LHS of [P] Theorems 1-3 exactly.
* :func:`fedasync_expcycle_moments` -- the always-busy exponential-cycle model of 10.2(b).
  Exact too, but [P] Assumption 1 fails there (staleness is a geometric mixture, unbounded);
  the result says so in ``DataFrame.attrs``.
* :func:`enumerate_events` -- exact expectation by enumerating AREA event sequences for a
  deterministic (sub)gradient oracle, merging bit-identical states (section 7.d).  Works for
  any problem, including non-smooth ones; it is the tool behind the Theorem 8 counterexample.

Every oracle returns a :class:`pandas.DataFrame` whose ``attrs`` carry the model flags.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from fedsim.errors import ConfigError, FedsimError, check_finite, require

__all__ = [
    "area_moments",
    "fedasync_window_moments",
    "fedasync_expcycle_moments",
    "expcycle_staleness_pmf",
    "enumerate_events",
    "local_affine_map",
    "PSD_RTOL",
]

#: P (as a covariance) may have eigenvalues down to ``-PSD_RTOL * trace`` (section 10.1).
PSD_RTOL: float = 1e-10

Schedule = float | Callable[[int], float]


# ---------------------------------------------------------------------------------------
# validation helpers
# ---------------------------------------------------------------------------------------
def _int_at_least(name: str, value: Any, low: int) -> int:
    ok = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
    if not ok and isinstance(value, float) and value.is_integer():
        ok = True
    require(ok and value >= low, name, value, f"must be an integer >= {low}")
    return int(value)


def _positive(name: str, value: Any) -> float:
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    require(ok and math.isfinite(float(value)) and float(value) > 0, name, value,
            "must be a finite number > 0")
    return float(value)


def _schedule(alpha: Schedule, name: str = "alpha_schedule") -> Callable[[int], float]:
    """A step-size schedule as a callable k -> alpha_k, every value checked when used."""
    if callable(alpha):
        def sched(k: int) -> float:
            a = alpha(k)
            ok = isinstance(a, (int, float, np.integer, np.floating)) and not isinstance(a, bool)
            require(ok and math.isfinite(float(a)) and float(a) > 0, f"{name}({k})", a,
                    "must be a finite number > 0")
            return float(a)
        return sched
    const = _positive(name, alpha)
    return lambda k: const


def _event_probs(p: Any, p_s: Any, n: int) -> tuple[np.ndarray, float]:
    """Validate [A]'s event law: p_i > 0, p_s > 0, sum_i p_i + p_s = 1 (THEORY_SPEC H7.3)."""
    parr = np.asarray(p, dtype=np.float64)
    require(parr.shape == (n,), "p", parr.shape, f"must have shape (n,) = ({n},)")
    check_finite("p", parr)
    require(bool(np.all(parr > 0)), "p", parr.tolist(), "must have every entry > 0")
    ps = _positive("p_s", p_s)
    tot = float(parr.sum()) + ps
    require(abs(tot - 1.0) <= 1e-12, "p", parr.tolist(),
            f"must satisfy sum(p) + p_s = 1 within 1e-12 (sum is {tot!r})")
    return parr, ps


def _quadratic_data(problem: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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


def _vector(name: str, value: Any, d: int) -> np.ndarray:
    v = np.asarray(value, dtype=np.float64).reshape(-1) if np.ndim(value) else None
    require(v is not None and v.shape == (d,), name, np.shape(value), f"must have shape ({d},)")
    check_finite(name, v)
    return v.copy()


# ---------------------------------------------------------------------------------------
# affine Q/M-step client maps in an eigenbasis
# ---------------------------------------------------------------------------------------
def _geom_sum(a: Any, lp: np.ndarray, lq: np.ndarray, M: int) -> np.ndarray:
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
    K = (a3 * a3) * _geom_sum(a3, ev[:, :, None], ev[:, None, :], M)
    Sig = np.matmul(np.matmul(U, Ct * K), Ut)
    Sig = 0.5 * (Sig + np.swapaxes(Sig, -1, -2))
    return R, Sig


def _check_psd(cov: np.ndarray, scale: float, where: str) -> None:
    """Raise FedsimError if ``cov`` has an eigenvalue below ``-PSD_RTOL * scale``."""
    sym = 0.5 * (cov + cov.T)
    lmin = float(np.linalg.eigvalsh(sym)[0])
    tol = PSD_RTOL * max(scale, np.finfo(np.float64).tiny)
    if not lmin >= -tol:
        raise FedsimError(f"{where}: the second-moment matrix lost positive semidefiniteness "
                          f"(lambda_min={lmin:.3e} < -{tol:.3e}); this is a bug in the oracle")


def _record_steps(K: int, every: int) -> np.ndarray:
    ks = np.arange(0, K + 1, every)
    if ks[-1] != K:
        ks = np.append(ks, K)
    return ks


# ---------------------------------------------------------------------------------------
# AREA: exact moment recursion (THEORY_SPEC 10.1)
# ---------------------------------------------------------------------------------------
def area_moments(problem: Any, p: Any, p_s: float, M: int, alpha_schedule: Schedule,
                 x_s0: Any, K: int, record_every: int = 1, *, batch: int = 1,
                 lyapunov: bool = False, psd_every: int | None = None) -> pd.DataFrame:
    """Exact E||x_{s,k}-x*||^2, E f(x_{s,k})-f* and E f(xbar_{s,k})-f* for AREA on quadratics.

    Model: [A] Appendix A eqs (5)-(7) with the superscript M restored (THEORY_SPEC 2.2, E-A10):
    i.i.d. events J in {1..n, s} with ``P(J=i) = p[i]``, ``P(J=s) = p_s``; at a client event
    ``x_i <- G^M_{i,alpha_k}[x_s]`` and ``y_i <- x_i`` (old value); at a server event
    ``x_s <- mean_j y_j``; ``x_{i,0} = y_{i,0} = x_{s,0}``.  Each local step draws fresh
    ``e ~ N(0, C_i / batch)`` with ``C_i = problem.grad_noise_cov(i)`` (additive noise: S_i;
    sampling noise: A_i S_i A_i), so the M-step map is affine with Gaussian noise and the
    moments close exactly (THEORY_SPEC 10.1, block form; never the N^2 x N^2 map).

    The event ``k -> k+1`` uses ``alpha_k`` (index k, not k+1; E-A11).  ``alpha_schedule`` is a
    constant or a callable ``k -> alpha_k``; ``R_i, c_i, Sig_i`` come from the
    eigendecompositions of ``A_i`` (computed once), evaluated for 256 steps per batched call
    (once for a constant).  With ``lyapunov=True`` the schedule is also called at k = K.

    Returns a DataFrame with one row per recorded k (0, record_every, ..., and always K):

    * ``sq_dist``  = E||x_{s,k} - x*||^2 = tr P[s,s]          ([A] Theorem 7 LHS, exact)
    * ``f_gap``    = E f(x_{s,k}) - f* = 0.5 tr(Abar P[s,s])
    * ``ergodic_f_gap`` = E f(xbar_{s,k}) - f*, xbar_{s,k} = (1/k) sum_{j<k} x_{s,j}
      ([A] Theorem 8's quantity; NaN at k = 0)
    * with ``lyapunov=True`` also ``ux_<i>``/``uy_<i>`` = E||x_{i,k} - x*_{i,k}||^2 and
      E||y_{i,k} - x*_{i,k}||^2 with ``x*_{i,k} = x* - alpha_k M grad f_i(x*)`` ([A] eq. (8)).

    The covariance of the augmented state is checked to be PSD within ``PSD_RTOL`` times its
    trace every ``psd_every`` steps (default ``max(1, K // 64)``) and at k = K.
    """
    A, b, C = _quadratic_data(problem)
    n, d = b.shape
    pv, ps = _event_probs(p, p_s, n)
    M = _int_at_least("M", M, 1)
    K = _int_at_least("K", K, 0)
    record_every = _int_at_least("record_every", record_every, 1)
    batch = _int_at_least("batch", batch, 1)
    if psd_every is None:
        psd_every = max(1, K // 64)
    psd_every = _int_at_least("psd_every", psd_every, 1)
    sched = _schedule(alpha_schedule)
    xs0 = _vector("x_s0", x_s0, d)
    x_star = _vector("problem.x_star", problem.x_star, d)

    ev, U = np.linalg.eigh(A)
    Ct = np.matmul(np.matmul(U.transpose(0, 2, 1), C / batch), U)
    Abar = A.mean(axis=0)
    g = np.einsum("iab,ib->ia", A, x_star[None, :] - b)          # grad f_i(x*)
    boff = (b - x_star[None, :])[:, :, None]

    # z = (x_1..x_n, y_1..y_n) - x*: one (2nd)-vector; the event that changes x_i or y_i is i.
    nd = n * d
    nz = 2 * nd
    pz = np.tile(np.repeat(pv, d), 2)
    pcol, prow = pz[:, None], pz[None, :]
    keep_zs = 1.0 - pcol - ps
    ar = np.arange(n)
    pg = pv[:, None, None, None, None]
    J = np.tile(np.eye(d), (n, 1)) / n                # (nd, d): y-block mean as a product

    e0 = xs0 - x_star
    muz = np.tile(e0, 2 * n)
    mus = e0.copy()
    mS = np.zeros(d)
    Pzz = muz[:, None] * muz[None, :]
    Pzs = muz[:, None] * mus[None, :]
    Pss = mus[:, None] * mus[None, :]
    PSz = np.zeros((d, nz))        # E[Ssum z^T]
    PSs = np.zeros((d, d))         # E[Ssum e_s^T]
    PSS = np.zeros((d, d))         # E[Ssum Ssum^T]

    rec = _record_steps(K, record_every)
    nrec = len(rec)
    out_sq = np.empty(nrec)
    out_f = np.empty(nrec)
    out_erg = np.empty(nrec)
    ux = np.empty((nrec, n)) if lyapunov else None
    uy = np.empty((nrec, n)) if lyapunov else None

    def record(j: int, k: int) -> None:
        out_sq[j] = np.trace(Pss)
        out_f[j] = 0.5 * float(np.sum(Abar * Pss))
        out_erg[j] = 0.5 * float(np.sum(Abar * PSS)) / k**2 if k > 0 else np.nan
        if lyapunov:
            a = sched(k)
            dg = np.einsum("giagia->gi", Pzz.reshape(2, n, d, 2, n, d))
            lin = 2 * a * M * np.einsum("ia,gia->gi", g, muz.reshape(2, n, d))
            const = (a * M) ** 2 * np.einsum("ia,ia->i", g, g)
            ux[j] = dg[0] + lin[0] + const
            uy[j] = dg[1] + lin[1] + const

    def check(k: int) -> None:
        kk = max(k, 1)
        mu = np.concatenate([muz, mus, mS / kk])
        P = np.block([[Pzz, Pzs, PSz.T / kk],
                      [Pzs.T, Pss, PSs.T / kk],
                      [PSz / kk, PSs / kk, PSS / kk**2]])
        _check_psd(P - np.outer(mu, mu), float(np.trace(P)), f"area_moments at k={k}")

    # R_i, Sig_i, c_i for a chunk of steps at once (one batched call per chunk; a constant
    # schedule is evaluated once)
    chunk = 256
    const_alpha = not callable(alpha_schedule)
    maps_k0 = -1
    maps: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def maps_for(k0: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if const_alpha:
            av = np.array([sched(0)])
        else:
            av = np.array([sched(k) for k in range(k0, min(K, k0 + chunk))])
        Rc, Sc = local_affine_map(U, ev, Ct, av, M)
        cc = (boff[None] - np.matmul(Rc, boff[None])).reshape(len(av), nd)   # (I-R_i)(b_i-x*)
        return Rc.reshape(len(av), n, d, d), Sc, cc

    buf = [np.empty((nz, nz)), np.empty((nz, nz))]
    px_col = pcol[:nd]
    j = 0
    if rec[0] == 0:
        record(0, 0)
        j = 1
    check(0)
    for k in range(K):
        if const_alpha:
            if maps is None:
                maps = maps_for(0)
            t = 0
        else:
            if maps is None or k >= maps_k0 + chunk:
                maps, maps_k0 = maps_for(k), k
            t = k - maps_k0
        R, Sig, cf = maps[0][t], maps[1][t], maps[2][t]
        Rst = R.reshape(nd, d)
        # n = the block's value if its event happens: x_i -> R_i e_s + c_i (+ noise), y_i -> x_i
        Vsx = Rst @ Pss
        Vsx += cf[:, None] * mus[None, :]                  # E[n_x e_s^T]
        Enx = Rst @ mus + cf                               # E[n_x]
        Xrow = Rst @ Pzs.T
        Xrow += cf[:, None] * muz[None, :]                 # E[n_x z^T]
        # blocks (x_i|y_i, x_i|y_i) change together under event i: use E[n n^T] there
        Pg = Pzz.reshape(2, n, d, 2, n, d)[:, ar, :, :, ar, :]            # (n, 2, d, 2, d)
        Xii = Xrow.reshape(n, d, 2, n, d)[ar, :, 0, ar, :]                # E[n_xi x_i^T]
        NN = np.empty_like(Pg)
        # E[(R_i e_s + c_i)(.)^T] + Sig_i = E[n_xi e_s^T] R_i^T + E[n_xi] c_i^T + Sig_i
        NN[:, 0, :, 0, :] = (np.matmul(Vsx.reshape(n, d, d), R.transpose(0, 2, 1))
                             + Enx.reshape(n, d)[:, :, None] * cf.reshape(n, d)[:, None, :]
                             + Sig)
        NN[:, 0, :, 1, :] = Xii
        NN[:, 1, :, 0, :] = Xii.transpose(0, 2, 1)
        NN[:, 1, :, 1, :] = Pg[:, 0, :, 0, :]
        # blocks changed by distinct events: P' = P + W + W^T, W = p_row (E[n z^T] - P)
        W = buf[k & 1]
        np.subtract(Xrow, Pzz[:nd], out=W[:nd])
        np.subtract(Pzz[:nd], Pzz[nd:], out=W[nd:])
        W *= pcol
        nPzz = W + W.T
        nPzz += Pzz
        nPzz.reshape(2, n, d, 2, n, d)[:, ar, :, :, ar, :] = Pg + pg * (NN - Pg)
        yb = Pzz[:, nd:] @ J                                              # E[z ybar^T]
        nPzs = keep_zs * Pzs + ps * yb
        nPzs[:nd] += px_col * Vsx
        nPzs[nd:] += px_col * Pzs[:nd]
        nPss = (1.0 - ps) * Pss + ps * (J.T @ yb[nd:])

        # augmented ergodic sum: Ssum' = Ssum + e_s under every event
        ASz = PSz + Pzs.T
        ASs = PSs + Pss
        mSs = mS + mus
        nPSz = ASz * (1.0 - prow)
        nPSz[:, :nd] += prow[:, :nd] * (ASs @ Rst.T + mSs[:, None] * cf[None, :])
        nPSz[:, nd:] += prow[:, :nd] * ASz[:, :nd]
        nPSs = (1.0 - ps) * ASs + ps * (ASz[:, nd:] @ J)
        nPSS = PSS + PSs + PSs.T + Pss

        nmuz = (1.0 - pz) * muz
        nmuz[:nd] += pz[:nd] * Enx
        nmuz[nd:] += pz[:nd] * muz[:nd]
        nmus = (1.0 - ps) * mus + ps * (J.T @ muz[nd:])

        Pzz, Pzs, Pss, PSz, PSs, PSS = nPzz, nPzs, nPss, nPSz, nPSs, nPSS
        muz, mus, mS = nmuz, nmus, mSs

        k1 = k + 1
        if j < nrec and rec[j] == k1:
            record(j, k1)
            j += 1
        if k1 % psd_every == 0 or k1 == K:
            check(k1)

    df = pd.DataFrame({"k": rec, "sq_dist": out_sq, "f_gap": out_f, "ergodic_f_gap": out_erg})
    if lyapunov:
        for i in range(n):
            df[f"ux_{i}"] = ux[:, i]
        for i in range(n):
            df[f"uy_{i}"] = uy[:, i]
    df.attrs.update({"oracle": "area_moments", "model": "AREA Appendix A, i.i.d. events",
                     "n": n, "dim": d, "M": M, "K": K, "batch": batch,
                     "state_dim": (2 * n + 1) * d, "exact": True})
    return df


# ---------------------------------------------------------------------------------------
# FedAsync / PersA-FL options on quadratics (THEORY_SPEC 10.2)
# ---------------------------------------------------------------------------------------
def _option_maps(problem: Any, option: str, Q: int, eta: float, batch: int,
                 batch_inner: int | None, alpha: float | None,
                 lam: float | None) -> dict[str, Any]:
    """Per-client affine Q-step maps Delta_i(x) = G_i (x - b_i) - xi_i of Options A/B/C.

    THEORY_SPEC 10.2: each local step is ``x <- x - eta (H_i (x - b_i) + eps)`` with
    A: ``H = A_i``, ``Cov eps = C_i/|D|``;
    B (exact Hessian): ``H = A_i (I - alpha A_i)^2``,
    ``Cov eps = (I - aA)(C/|D| + a^2 A C A/|D'|)(I - aA)``;
    C (exact inner solve, nu = 0): ``H = lam A (lam I + A)^{-1}``,
    ``Cov eps = lam^2 (A + lam I)^{-1} (C/|D|) (A + lam I)^{-1}``.
    Returns G_i = I - (I - eta H_i)^Q, the option minimiser w_F*, the centred offsets
    c_i = G_i (b_i - w_F*), Sig_i = Cov(xi_i), Hbar and the residual r = Hbar w* - mean H_i b_i.
    """
    A, b, C = _quadratic_data(problem)
    n, d = b.shape
    require(option in ("A", "B", "C"), "option", option, "must be one of 'A', 'B', 'C'")
    Q = _int_at_least("Q", Q, 1)
    eta = _positive("eta", eta)
    batch = _int_at_least("batch", batch, 1)
    l, U = np.linalg.eigh(A)
    Ct = np.matmul(np.matmul(U.transpose(0, 2, 1), C), U)
    lp, lq = l[:, :, None], l[:, None, :]
    if option == "A":
        require(alpha is None, "alpha", alpha, "is only used by Option B (must be None)")
        require(lam is None, "lam", lam, "is only used by Option C (must be None)")
        require(batch_inner is None, "batch_inner", batch_inner,
                "is only used by Option B (must be None)")
        hv = l
        Ce = Ct / batch
    elif option == "B":
        require(alpha is not None, "alpha", alpha, "must be given for Option B")
        require(lam is None, "lam", lam, "is only used by Option C (must be None)")
        alpha = float(alpha)
        require(math.isfinite(alpha) and alpha >= 0, "alpha", alpha, "must be finite and >= 0")
        bi = batch if batch_inner is None else _int_at_least("batch_inner", batch_inner, 1)
        hv = l * (1.0 - alpha * l) ** 2
        Ce = Ct * (1.0 - alpha * lp) * (1.0 - alpha * lq) * (1.0 / batch
                                                             + alpha**2 * lp * lq / bi)
    else:
        require(lam is not None, "lam", lam, "must be given for Option C")
        require(alpha is None, "alpha", alpha, "is only used by Option B (must be None)")
        require(batch_inner is None, "batch_inner", batch_inner,
                "is only used by Option B (must be None)")
        lam = _positive("lam", lam)
        hv = lam * l / (lam + l)
        Ce = Ct * lam**2 / ((lam + lp) * (lam + lq)) / batch
    require(bool(np.all(l >= -1e-12 * max(1.0, float(np.abs(l).max())))), "problem.A",
            "indefinite", "must hold positive semidefinite matrices")
    Rt, Sig = local_affine_map(U, hv, Ce, eta, Q)
    G = np.eye(d)[None] - Rt
    H = np.matmul(U * hv[:, None, :], U.transpose(0, 2, 1))
    Hbar = H.mean(axis=0)
    hb = np.einsum("iab,ib->a", H, b) / n
    w_star = np.linalg.lstsq(Hbar, hb, rcond=None)[0]
    c = np.einsum("iab,ib->ia", G, b - w_star[None, :])
    return {"n": n, "d": d, "G": G, "c": c, "Sig": Sig, "Hbar": Hbar, "w_star": w_star,
            "resid": Hbar @ w_star - hb, "Q": Q, "eta": eta}


def _grad_sq(mp: dict[str, Any], m0: np.ndarray, P00: np.ndarray) -> float:
    """E||grad F(w)||^2 = E||Hbar e + r||^2 with e = w - w_F* (THEORY_SPEC 10.2(a))."""
    Hb, r = mp["Hbar"], mp["resid"]
    return float(np.sum((Hb @ Hb) * P00) + 2.0 * r @ (Hb @ m0) + r @ r)


def _fedasync_frame(rec: np.ndarray, gsq: np.ndarray, sq: np.ndarray) -> pd.DataFrame:
    cums = np.concatenate([[0.0], np.cumsum(gsq)])
    t_all = np.arange(len(gsq))
    avg = np.full(len(gsq), np.nan)
    avg[1:] = cums[1:-1] / t_all[1:]
    return pd.DataFrame({"t": rec, "grad_sq": gsq[rec], "avg_grad_sq": avg[rec],
                         "sq_dist": sq[rec]})


def fedasync_window_moments(problem: Any, option: str, Q: int, eta: float, beta: float,
                            delay_pmf: Any, T: int, w0: Any, *, batch: int = 1,
                            batch_inner: int | None = None, alpha: float | None = None,
                            lam: float | None = None, record_every: int = 1) -> pd.DataFrame:
    """Exact moments of FedAsync / PersA-FL in the bounded-window model (THEORY_SPEC 10.2(a)).

    Model ([P] Algorithms 1-2, Appendix A notation, THEORY_SPEC 2.1): the uploader ``i_t`` is
    i.i.d. Uniform{1..n}, the delay ``s_t`` i.i.d. with pmf ``delay_pmf`` on {0..tau},
    independent of everything; ``Omega(t) = max(t - s_t, 0)`` and
    ``w^{t+1} = w^t - beta Delta_{i_t}(w^{Omega(t)})`` with the option's Q-step local update
    (A: SGD; B: MAML with exact Hessian, outer batch ``batch``, inner batch ``batch_inner``;
    C: Moreau envelope with exact inner solve).  This satisfies [P] Assumption 1 exactly.

    State ``(w^t, ..., w^{t-tau})`` initialised with copies of ``w0``; the moments evolve by the
    generic mixture formula of 10.1, cost O(n d^3 + tau^2 d^2) per server step.

    Columns: ``t``; ``grad_sq`` = E||grad F(w^t)||^2 for the option's objective F (f, F^(b),
    F^(c)); ``avg_grad_sq`` = (1/t) sum_{t'<t} grad_sq (the LHS of [P] Theorems 1-3 at T = t;
    NaN at t = 0); ``sq_dist`` = E||w^t - w_F*||^2 with w_F* the minimiser of F.
    """
    mp = _option_maps(problem, option, Q, eta, batch, batch_inner, alpha, lam)
    n, d = mp["n"], mp["d"]
    beta = _positive("beta", beta)
    T = _int_at_least("T", T, 0)
    record_every = _int_at_least("record_every", record_every, 1)
    pi = np.asarray(delay_pmf, dtype=np.float64).reshape(-1)
    require(pi.size >= 1, "delay_pmf", pi.tolist(), "must be a non-empty pmf on {0..tau}")
    check_finite("delay_pmf", pi)
    require(bool(np.all(pi >= 0)), "delay_pmf", pi.tolist(), "must have entries >= 0")
    require(abs(pi.sum() - 1.0) <= 1e-12, "delay_pmf", pi.tolist(), "must sum to 1 within 1e-12")
    w0v = _vector("w0", w0, d)
    tau = pi.size - 1
    Lb = tau + 1
    G, c, Sig = mp["G"], mp["c"], mp["Sig"]
    Gbar = G.mean(axis=0)
    cbar = c.mean(axis=0)
    const = beta**2 * (np.einsum("ia,ib->ab", c, c) / n + Sig.mean(axis=0))

    e0 = w0v - mp["w_star"]
    mu = np.tile(e0, (Lb, 1))
    P = np.outer(mu.ravel(), mu.ravel())
    gsq = np.empty(T + 1)
    sq = np.empty(T + 1)
    gsq[0] = _grad_sq(mp, mu[0], P[:d, :d])
    sq[0] = float(np.trace(P[:d, :d]))
    for t in range(T):
        m_pi = pi @ mu
        Prow = np.tensordot(pi, P.reshape(Lb, d, Lb * d), axes=(0, 0))      # (d, Lb d)
        P_pi = np.einsum("s,sasb->ab", pi, P.reshape(Lb, d, Lb, d))
        head = mu[0] - beta * (Gbar @ m_pi) + beta * cbar
        Z = Gbar @ Prow[:, :d]
        Gm = G @ m_pi                                                       # (n, d)
        GmC = np.einsum("ia,ib->ab", Gm, c) / n
        P00 = (P[:d, :d] - beta * (Z + Z.T) + beta * (np.outer(mu[0], cbar) + np.outer(cbar, mu[0]))
               + beta**2 * np.einsum("iab,bc,idc->ad", G, P_pi, G) / n
               - beta**2 * (GmC + GmC.T) + const)
        row = P[:d, :-d] - beta * (Gbar @ Prow[:, :-d]) + beta * np.outer(cbar, mu[:-1].ravel())
        nP = np.empty_like(P)
        nP[d:, d:] = P[:-d, :-d]
        nP[:d, d:] = row
        nP[d:, :d] = row.T
        nP[:d, :d] = 0.5 * (P00 + P00.T)
        P = nP
        mu = np.vstack([head[None, :], mu[:-1]])
        gsq[t + 1] = _grad_sq(mp, mu[0], P[:d, :d])
        sq[t + 1] = float(np.trace(P[:d, :d]))
        if (t + 1) % max(1, T // 64) == 0 or t + 1 == T:
            _check_psd(P - np.outer(mu.ravel(), mu.ravel()), float(np.trace(P)),
                       f"fedasync_window_moments at t={t + 1}")
    rec = _record_steps(T, record_every)
    df = _fedasync_frame(rec, gsq, sq)
    df.attrs.update({"oracle": "fedasync_window_moments", "model": "bounded window (10.2(a))",
                     "option": option, "tau": tau, "staleness_pmf": pi.tolist(),
                     "assumption1_holds": True, "uploader_uniform": True,
                     "staleness_bound": float(tau), "w_star": mp["w_star"].tolist(),
                     "state_dim": Lb * d, "exact": True})
    return df


def expcycle_staleness_pmf(rates: Any, s: Any) -> np.ndarray:
    """P(t - Omega(t) = s) in the always-busy exponential-cycle model (THEORY_SPEC 10.2(b)).

    The uploader is i.i.d. with ``pi_i = rate_i / sum_j rate_j``; the staleness of an upload by
    client i counts the uploads of the others since i's previous upload, so it is
    Geometric(pi_i) on {0, 1, ...}; mixed over the uploader:
    ``P(s) = sum_i pi_i^2 (1 - pi_i)^s`` (equal rates: ``(1/n)(1 - 1/n)^s``), mean ``n - 1``.
    It is the same for every t (the initial downloads of w^0 count as uploads at t = 0).
    """
    r = np.asarray(rates, dtype=np.float64).reshape(-1)
    require(r.size >= 1 and bool(np.all(r > 0)) and bool(np.all(np.isfinite(r))), "rates",
            r.tolist(), "must be finite and > 0")
    pi = r / r.sum()
    sv = np.asarray(s, dtype=np.float64)
    return np.sum(pi[:, None] ** 2 * (1.0 - pi[:, None]) ** sv.reshape(-1)[None, :],
                  axis=0).reshape(sv.shape)


def fedasync_expcycle_moments(problem: Any, option: str, Q: int, eta: float, beta: float,
                              rates: Any, T: int, w0: Any, *, batch: int = 1,
                              batch_inner: int | None = None, alpha: float | None = None,
                              lam: float | None = None, record_every: int = 1) -> pd.DataFrame:
    """Exact moments of FedAsync / PersA-FL with always-busy exponential client cycles.

    THEORY_SPEC 10.2(b): each client re-downloads the latest model when it uploads and its whole
    cycle is Exp(rate_i); by memorylessness the uploaders are i.i.d. with
    ``P(i) = rate_i / sum_j rate_j``.  State ``(w^t, w_1^dl, ..., w_n^dl)``: at an upload by i,
    ``w^{t+1} = w^t - beta Delta_i(w_i^dl)`` and ``w_i^dl <- w^{t+1}``; every ``w_i^dl = w0``
    initially.  Exact, O(n^2 d^3) per server step.

    [P] Assumption 1 FAILS here: the staleness is a geometric mixture (unbounded, mean n - 1),
    so ``attrs["assumption1_holds"] is False`` and Theorems 1-3 are NOT_APPLICABLE; the oracle
    still gives their LHS exactly.  Columns as :func:`fedasync_window_moments`.
    """
    mp = _option_maps(problem, option, Q, eta, batch, batch_inner, alpha, lam)
    n, d = mp["n"], mp["d"]
    beta = _positive("beta", beta)
    T = _int_at_least("T", T, 0)
    record_every = _int_at_least("record_every", record_every, 1)
    r = np.asarray(rates, dtype=np.float64).reshape(-1)
    require(r.shape == (n,), "rates", r.tolist(), f"must have one entry per client (n={n})")
    require(bool(np.all(np.isfinite(r))) and bool(np.all(r > 0)), "rates", r.tolist(),
            "must be finite and > 0")
    w0v = _vector("w0", w0, d)
    pi = r / r.sum()
    G, c, Sig = mp["G"], mp["c"], mp["Sig"]
    nd = n * d
    pr = np.repeat(pi, d)
    pcol, prow = pr[:, None], pr[None, :]
    ar = np.arange(n)
    pi3 = pi[:, None, None]

    e0 = w0v - mp["w_star"]
    mu = np.tile(e0, (n + 1, 1))
    P = np.outer(mu.ravel(), mu.ravel())
    gsq = np.empty(T + 1)
    sq = np.empty(T + 1)
    gsq[0] = _grad_sq(mp, mu[0], P[:d, :d])
    sq[0] = float(np.trace(P[:d, :d]))
    for t in range(T):
        mflat = mu.ravel()
        # Hx[i] = E[h_i e^T] (d x (n+1)d), h_i the new head when client i uploads
        GP = np.matmul(G, P[d:, :].reshape(n, d, (n + 1) * d))
        Hx = P[None, :d, :] - beta * GP + beta * c[:, :, None] * mflat[None, None, :]
        hmean = mu[0][None, :] - beta * np.einsum("iab,ib->ia", G, mu[1:]) + beta * c
        Hcc = Hx[:, :, d:]                                                 # (n, d, nd)
        Hii = Hcc.reshape(n, d, n, d)[ar, :, ar, :]                       # E[h_i e_i^T]
        Ehh = (Hx[:, :, :d] - beta * np.matmul(Hii, G.transpose(0, 2, 1))
               + beta * hmean[:, :, None] * c[:, None, :] + beta**2 * Sig)
        Ehh = 0.5 * (Ehh + Ehh.transpose(0, 2, 1))
        Pcc = P[d:, d:]
        Hmat = Hcc.reshape(nd, nd)
        nPcc = (1.0 - pcol - prow) * Pcc + pcol * Hmat + prow * Hmat.T
        Pcc_d = Pcc.reshape(n, d, n, d)[ar, :, ar, :]
        nPcc.reshape(n, d, n, d)[ar, :, ar, :] = (1.0 - pi3) * Pcc_d + pi3 * Ehh
        row = np.einsum("i,iak->ak", pi, Hcc)                               # (d, nd)
        row3 = row.reshape(d, n, d)
        row3 += (pi3 * (Ehh - Hii)).transpose(1, 0, 2)
        nP = np.empty_like(P)
        nP[:d, :d] = np.einsum("i,iab->ab", pi, Ehh)
        nP[:d, d:] = row3.reshape(d, nd)
        nP[d:, :d] = nP[:d, d:].T
        nP[d:, d:] = nPcc
        P = nP
        nmu = np.empty_like(mu)
        nmu[0] = pi @ hmean
        nmu[1:] = (1.0 - pi[:, None]) * mu[1:] + pi[:, None] * hmean
        mu = nmu
        gsq[t + 1] = _grad_sq(mp, mu[0], P[:d, :d])
        sq[t + 1] = float(np.trace(P[:d, :d]))
        if (t + 1) % max(1, T // 64) == 0 or t + 1 == T:
            _check_psd(P - np.outer(mu.ravel(), mu.ravel()), float(np.trace(P)),
                       f"fedasync_expcycle_moments at t={t + 1}")
    rec = _record_steps(T, record_every)
    df = _fedasync_frame(rec, gsq, sq)
    uniform = bool(np.all(r == r[0]))
    df.attrs.update({
        "oracle": "fedasync_expcycle_moments", "model": "always-busy exponential cycles (10.2(b))",
        "option": option, "assumption1_holds": False,
        "assumption1_detail": ("staleness t - Omega(t) is a geometric mixture "
                               "P(s) = sum_i pi_i^2 (1 - pi_i)^s on {0,1,...}: unbounded, so "
                               "[P] Asm 1(i) fails (tau = inf)"
                               + ("" if uniform else "; uploaders not uniform: Asm 1(ii) fails")),
        "staleness_law": "geometric mixture", "staleness_bound": math.inf,
        "staleness_mean": float(n - 1), "uploader_probs": pi.tolist(),
        "uploader_uniform": uniform, "w_star": mp["w_star"].tolist(),
        "state_dim": (n + 1) * d, "exact": True})
    return df


# ---------------------------------------------------------------------------------------
# exact enumeration of AREA event sequences (THEORY_SPEC 7.d)
# ---------------------------------------------------------------------------------------
def enumerate_events(problem: Any, p: Any, p_s: float, M: int, alpha: Schedule, x_s0: Any,
                     K: int, *, subgrad: Callable[[int, np.ndarray], np.ndarray] | None = None,
                     record_every: int = 1, max_states: int = 2_000_000) -> pd.DataFrame:
    """Exact expectations for AREA with a deterministic client map, by enumerating events.

    Model: THEORY_SPEC 2.2 ([A] eqs (5)-(7)), events i.i.d. over {1..n, s}; at client event i
    ``x_i <- G^M_{i,alpha_k}[x_s]`` with ``G_{i,a}[x] = x - a subgrad(i, x)`` (M deterministic
    subgradient steps; ``subgrad`` defaults to ``problem.grad``, the problem's fixed
    subgradient selection) and ``y_i <- x_i`` (old); at a server event ``x_s <- mean_j y_j``.
    The state ``(x, y, x_s, Ssum)`` with ``Ssum_k = sum_{j<k} x_{s,j}`` is carried exactly;
    states are merged only when bit-identical (their probabilities add).  For n clients and K
    steps at most (n+1)^K states; use it for small K.

    Needs ``problem.n``, ``problem.dim``, ``problem.f``, ``problem.x_star``, ``problem.f_star``.
    Columns: ``k``, ``sq_dist`` = E||x_{s,k} - x*||^2, ``f_gap`` = E f(x_{s,k}) - f*,
    ``ergodic_f_gap`` = E f(xbar_{s,k}) - f* with ``xbar_{s,k} = (1/k) sum_{j<k} x_{s,j}``
    ([A] Theorem 8's measured quantity; NaN at k = 0) and ``n_states`` (distinct states).
    """
    n = _int_at_least("problem.n", getattr(problem, "n", None), 1)
    d = _int_at_least("problem.dim", getattr(problem, "dim", None), 1)
    pv, ps = _event_probs(p, p_s, n)
    M = _int_at_least("M", M, 1)
    K = _int_at_least("K", K, 0)
    record_every = _int_at_least("record_every", record_every, 1)
    max_states = _int_at_least("max_states", max_states, 1)
    sched = _schedule(alpha, "alpha")
    sg = subgrad if subgrad is not None else problem.grad
    require(callable(sg), "subgrad", sg, "must be callable (i, x) -> subgradient")
    xs0 = _vector("x_s0", x_s0, d)
    x_star = _vector("problem.x_star", problem.x_star, d)
    f_star = float(problem.f_star)

    # layout of a state vector: x (n*d) | y (n*d) | x_s (d) | Ssum (d)
    ox, oy, os_, oS = 0, n * d, 2 * n * d, 2 * n * d + d
    z0 = np.concatenate([np.tile(xs0, 2 * n), xs0, np.zeros(d)])
    states: dict[bytes, list[Any]] = {z0.tobytes(): [1.0, z0]}

    rec = _record_steps(K, record_every)
    rows: list[tuple[int, float, float, float, int]] = []

    def measure(k: int) -> None:
        sq = f = erg = 0.0
        for prob, z in states.values():
            xs = z[os_:oS]
            sq += prob * float(np.sum((xs - x_star) ** 2))
            f += prob * (float(problem.f(xs)) - f_star)
            if k > 0:
                erg += prob * (float(problem.f(z[oS:] / k)) - f_star)
        rows.append((k, sq, f, erg if k > 0 else np.nan, len(states)))

    j = 0
    if rec[0] == 0:
        measure(0)
        j = 1
    for k in range(K):
        a = sched(k)
        gm_cache: dict[tuple[int, bytes], np.ndarray] = {}
        new: dict[bytes, list[Any]] = {}
        for prob, z in states.values():
            xs = z[os_:oS]
            S1 = z[oS:] + xs
            xs_key = xs.tobytes()
            children: list[tuple[float, np.ndarray]] = []
            for i in range(n):
                ck = (i, xs_key)
                gm = gm_cache.get(ck)
                if gm is None:
                    x = xs.copy()
                    for _ in range(M):
                        step = np.asarray(sg(i, x), dtype=np.float64).reshape(d)
                        x = x - a * step
                    gm_cache[ck] = gm = x
                z1 = z.copy()
                z1[oy + i * d: oy + (i + 1) * d] = z[ox + i * d: ox + (i + 1) * d]
                z1[ox + i * d: ox + (i + 1) * d] = gm
                z1[oS:] = S1
                children.append((prob * pv[i], z1))
            z1 = z.copy()
            z1[os_:oS] = z[oy:os_].reshape(n, d).mean(axis=0)
            z1[oS:] = S1
            children.append((prob * ps, z1))
            for cp, cz in children:
                key = cz.tobytes()
                slot = new.get(key)
                if slot is None:
                    new[key] = [cp, cz]
                else:
                    slot[0] += cp
        states = new
        if len(states) > max_states:
            raise ConfigError(f"max_states must bound the number of distinct states, got "
                              f"max_states={max_states} but step {k + 1} has {len(states)} "
                              f"states; lower K or raise max_states")
        if j < len(rec) and rec[j] == k + 1:
            measure(k + 1)
            j += 1
    df = pd.DataFrame(rows, columns=["k", "sq_dist", "f_gap", "ergodic_f_gap", "n_states"])
    df.attrs.update({"oracle": "enumerate_events", "model": "AREA Appendix A, i.i.d. events",
                     "n": n, "dim": d, "M": M, "K": K, "exact": True,
                     "total_prob": float(sum(v[0] for v in states.values()))})
    return df
