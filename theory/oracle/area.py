"""[A] AREA on quadratic clients: exact first and second moments (THEORY_SPEC 10.1).

:func:`area_moments` -- AREA ([A] Appendix A model, eqs. (5)-(7), THEORY_SPEC 2.2) on
quadratic clients with Gaussian gradient noise.  The first and second moments of the stacked
centred state ``z_k = (x_1..x_n, y_1..y_n, x_s) - x*`` obey an exact affine recursion (block
form); augmented with ``Ssum_k = sum_{j<k} (x_{s,j} - x*)`` it also gives the ergodic average
of [A] Theorem 8.  Cost O(n^2 d^3) per step, never the N^2 x N^2 map.  The measured
quantities of [A] Theorems 7 and 8, exactly.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from fedsim.theory.oracle._common import (
    Schedule,
    check_psd,
    event_probs,
    local_affine_map,
    quadratic_data,
    record_steps,
    schedule,
    vector,
)

from fedsim.errors import check_integer

__all__ = ["area_moments"]


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
    A, b, C = quadratic_data(problem)
    n, d = b.shape
    pv, ps = event_probs(p, p_s, n)
    M = check_integer("M", M, low=1)
    K = check_integer("K", K, low=0)
    record_every = check_integer("record_every", record_every, low=1)
    batch = check_integer("batch", batch, low=1)
    if psd_every is None:
        psd_every = max(1, K // 64)
    psd_every = check_integer("psd_every", psd_every, low=1)
    sched = schedule(alpha_schedule)
    xs0 = vector("x_s0", x_s0, d)
    x_star = vector("problem.x_star", problem.x_star, d)

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

    rec = record_steps(K, record_every)
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
        check_psd(P - np.outer(mu, mu), float(np.trace(P)), f"area_moments at k={k}")

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
