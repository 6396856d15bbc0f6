"""FedAsync / PersA-FL Options A, B, C on quadratic clients: exact moments (THEORY_SPEC 10.2).

* :func:`fedasync_window_moments` -- the bounded-window model of 10.2(a), which satisfies
  [P] Assumption 1 exactly; gives the LHS of [P] Theorems 1-3 (eqs. (A74), (B50), (C61))
  exactly for Options A, B (exact Hessian) and C (exact inner solve).
* :func:`fedasync_expcycle_moments` -- the always-busy exponential-cycle model of 10.2(b).
  Exact too, but [P] Assumption 1 fails there (staleness is a geometric mixture, unbounded);
  the result says so in ``DataFrame.attrs``.
* :func:`expcycle_staleness_pmf` -- that model's staleness law.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from fedsim.theory.oracle._common import (
    check_psd,
    local_affine_map,
    quadratic_data,
    record_steps,
    vector,
)

from fedsim.errors import check_finite, check_integer, check_positive, require

__all__ = ["fedasync_window_moments", "fedasync_expcycle_moments", "expcycle_staleness_pmf"]


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
    A, b, C = quadratic_data(problem)
    n, d = b.shape
    require(option in ("A", "B", "C"), "option", option, "must be one of 'A', 'B', 'C'")
    Q = check_integer("Q", Q, low=1)
    eta = check_positive("eta", eta)
    batch = check_integer("batch", batch, low=1)
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
        bi = batch if batch_inner is None else check_integer("batch_inner", batch_inner, low=1)
        hv = l * (1.0 - alpha * l) ** 2
        Ce = Ct * (1.0 - alpha * lp) * (1.0 - alpha * lq) * (1.0 / batch
                                                             + alpha**2 * lp * lq / bi)
    else:
        require(lam is not None, "lam", lam, "must be given for Option C")
        require(alpha is None, "alpha", alpha, "is only used by Option B (must be None)")
        require(batch_inner is None, "batch_inner", batch_inner,
                "is only used by Option B (must be None)")
        lam = check_positive("lam", lam)
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


def _grad_sq_terms(mp: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray, Any]:
    """The step-independent factors of :func:`_grad_sq`: ``Hbar``, ``Hbar @ Hbar``, ``2 r``
    and ``r @ r``."""
    Hb, r = mp["Hbar"], mp["resid"]
    return Hb, Hb @ Hb, 2.0 * r, r @ r


def _grad_sq(terms: tuple[np.ndarray, np.ndarray, np.ndarray, Any], m0: np.ndarray,
             P00: np.ndarray) -> float:
    """E||grad F(w)||^2 = E||Hbar e + r||^2 with e = w - w_F* (THEORY_SPEC 10.2(a));
    ``terms`` from :func:`_grad_sq_terms`."""
    Hb, HbHb, r2, rr = terms
    return float(np.sum(HbHb * P00) + r2 @ (Hb @ m0) + rr)


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
    beta = check_positive("beta", beta)
    T = check_integer("T", T, low=0)
    record_every = check_integer("record_every", record_every, low=1)
    pi = np.asarray(delay_pmf, dtype=np.float64).reshape(-1)
    require(pi.size >= 1, "delay_pmf", pi.tolist(), "must be a non-empty pmf on {0..tau}")
    check_finite("delay_pmf", pi)
    require(bool(np.all(pi >= 0)), "delay_pmf", pi.tolist(), "must have entries >= 0")
    require(abs(pi.sum() - 1.0) <= 1e-12, "delay_pmf", pi.tolist(), "must sum to 1 within 1e-12")
    w0v = vector("w0", w0, d)
    tau = pi.size - 1
    Lb = tau + 1
    G, c, Sig = mp["G"], mp["c"], mp["Sig"]
    Gbar = G.mean(axis=0)
    cbar = c.mean(axis=0)
    const = beta**2 * (np.einsum("ia,ib->ab", c, c) / n + Sig.mean(axis=0))

    e0 = w0v - mp["w_star"]
    mu = np.tile(e0, (Lb, 1))
    P = np.outer(mu.ravel(), mu.ravel())
    terms = _grad_sq_terms(mp)
    gsq = np.empty(T + 1)
    sq = np.empty(T + 1)
    gsq[0] = _grad_sq(terms, mu[0], P[:d, :d])
    sq[0] = float(np.trace(P[:d, :d]))
    # the recursion of 10.1 on tiny matrices: per-step cost is NumPy call overhead, so the
    # loop calls the kernels directly (np.dot for tensordot, broadcasting for np.outer,
    # preallocated buffers for vstack: the same floating-point operations)
    pi_row = pi.reshape(1, Lb)
    check_every = max(1, T // 64)
    for t in range(T):
        m_pi = pi @ mu
        Prow = np.dot(pi_row, P.reshape(Lb, d * Lb * d)).reshape(d, Lb * d)   # (d, Lb d)
        P_pi = np.einsum("s,sasb->ab", pi, P.reshape(Lb, d, Lb, d))
        mu0 = mu[0]
        head = mu0 - beta * (Gbar @ m_pi) + beta * cbar
        Z = Gbar @ Prow[:, :d]
        Gm = G @ m_pi                                                       # (n, d)
        GmC = np.einsum("ia,ib->ab", Gm, c) / n
        mc = mu0[:, None] * cbar[None, :]
        P00 = (P[:d, :d] - beta * (Z + Z.T) + beta * (mc + mc.T)
               + beta**2 * np.einsum("iab,bc,idc->ad", G, P_pi, G) / n
               - beta**2 * (GmC + GmC.T) + const)
        row = (P[:d, :-d] - beta * (Gbar @ Prow[:, :-d])
               + beta * (cbar[:, None] * mu[:-1].reshape(1, -1)))
        nP = np.empty_like(P)
        nP[d:, d:] = P[:-d, :-d]
        nP[:d, d:] = row
        nP[d:, :d] = row.T
        nP[:d, :d] = 0.5 * (P00 + P00.T)
        P = nP
        nmu = np.empty_like(mu)
        nmu[0] = head
        nmu[1:] = mu[:-1]
        mu = nmu
        gsq[t + 1] = _grad_sq(terms, head, P[:d, :d])
        sq[t + 1] = float(np.trace(P[:d, :d]))
        if (t + 1) % check_every == 0 or t + 1 == T:
            check_psd(P - np.outer(mu.ravel(), mu.ravel()), float(np.trace(P)),
                       f"fedasync_window_moments at t={t + 1}")
    rec = record_steps(T, record_every)
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
    beta = check_positive("beta", beta)
    T = check_integer("T", T, low=0)
    record_every = check_integer("record_every", record_every, low=1)
    r = np.asarray(rates, dtype=np.float64).reshape(-1)
    require(r.shape == (n,), "rates", r.tolist(), f"must have one entry per client (n={n})")
    require(bool(np.all(np.isfinite(r))) and bool(np.all(r > 0)), "rates", r.tolist(),
            "must be finite and > 0")
    w0v = vector("w0", w0, d)
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
    terms = _grad_sq_terms(mp)
    gsq[0] = _grad_sq(terms, mu[0], P[:d, :d])
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
        gsq[t + 1] = _grad_sq(terms, mu[0], P[:d, :d])
        sq[t + 1] = float(np.trace(P[:d, :d]))
        if (t + 1) % max(1, T // 64) == 0 or t + 1 == T:
            check_psd(P - np.outer(mu.ravel(), mu.ravel()), float(np.trace(P)),
                       f"fedasync_expcycle_moments at t={t + 1}")
    rec = record_steps(T, record_every)
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
