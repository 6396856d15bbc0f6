"""[A] Theorem 7, level (C): the certified recursions (C1) and (C2) (THEORY_SPEC 6.c, 6.d).

(C1) is the vector recursion over clients built from [A] Lemmas 13-15 and 18-20 with the
errata E-A4/E-A5; (C2) the scalar Lyapunov recursion of [A] eq. (28) with the exact weights
(E-A3, E-A7).  Both are iterated numerically from the one-step lemma inequalities with exact
(or upper-bounded) initial values, so ``min(C1, C2)`` is a valid bound for every K.

* :func:`initial_r` -- the initial distances r_i of 6.c (exact, or a triangle bound);
* :func:`lyapunov0` -- ``Lam0`` and ``lam0`` of 6.c;
* :func:`certified` -- both curves up to ``Kmax`` in O(n Kmax) time, O(Kmax + n) memory.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fedsim.errors import ConfigError, require

__all__ = ["initial_r", "lyapunov0", "certified"]


def initial_r(
    R0: float,
    alpha_0: float,
    M: int,
    L: float,
    zeta: float,
    n: int,
    grad_norms_at_xstar: Any,
    r_init: Any,
) -> tuple[np.ndarray, str]:
    """The initial distances ``r_i = ||x_{s,0} - x* + alpha_0 M grad f_i(x*)||`` (6.c) or bounds.

    * ``r_init`` given: used as the exact r_i.
    * ``grad_norms_at_xstar`` given: ``r_i <= R0 + alpha_0 M ||grad f_i(x*)||`` (triangle
      inequality).
    * neither: ``r_i <= R0 + alpha_0 M L zeta`` (triangle inequality and
      ``||grad f_i(x*)|| = ||grad f_i(x*) - grad f_i(u_i*)|| <= L ||x* - u_i*|| <= L zeta``).

    Every recursion coefficient is nonnegative, so an upper bound on r_i keeps the result valid.
    """
    if r_init is not None and grad_norms_at_xstar is not None:
        raise ConfigError(
            "r_init and grad_norms_at_xstar are exclusive, got both "
            "(pass r_init for exact values or grad_norms_at_xstar for the triangle bound)"
        )
    if r_init is not None:
        r = np.asarray(r_init, dtype=np.float64)
        require(r.shape == (n,), "r_init", r_init, f"must have length n={n}")
        require(bool(np.all(np.isfinite(r)) and np.all(r >= 0)), "r_init", r_init, "must be >= 0")
        return r.copy(), "exact r_i (r_init)"
    if grad_norms_at_xstar is not None:
        g = np.asarray(grad_norms_at_xstar, dtype=np.float64)
        name = "grad_norms_at_xstar"
        require(g.shape == (n,), name, grad_norms_at_xstar, f"must have length n={n}")
        require(
            bool(np.all(np.isfinite(g)) and np.all(g >= 0)),
            "grad_norms_at_xstar",
            grad_norms_at_xstar,
            "must be finite and >= 0",
        )
        return R0 + alpha_0 * M * g, "upper bound r_i <= R0 + alpha_0*M*||grad f_i(x*)||"
    return (
        np.full(n, R0 + alpha_0 * M * L * zeta),
        "upper bound r_i <= R0 + alpha_0*M*L*zeta",
    )


def lyapunov0(cs: dict[str, Any], p: np.ndarray, r: np.ndarray, R0: float) -> tuple[float, float]:
    """Exact ``Lam0`` and ``lam0`` of 6.c for given initial distances r_i."""
    b0 = cs["beta_0"]
    w = (b0 ** (-2.0 / 3.0) + b0 ** (-1.0 / 3.0)) / (cs["n"] * p)
    Lam0 = float(np.sum(w * r**2)) + R0**2 / cs["p_s"]
    lam0 = float(np.sum(w * r)) + R0 / cs["p_s"]
    return Lam0, lam0


_DENSE_MAX_DIM = 202  # state size 4g+2 up to which (C1) runs as chunked dense mat-vecs
_CHUNK = 512  # max steps per chunk of the dense path
_CHUNK_FLOATS = 2_000_000  # max floats held by one chunk of T_k (16 MB)
_SEQ_CHUNK = 8192  # steps per chunk of the per-k coefficient sequences elsewhere


def _sequences(cs: dict[str, Any], k0: int, k1: int) -> dict[str, np.ndarray]:
    """Per-step coefficients of (C1)/(C2) for k in [k0, k1) (memory O(chunk), not O(K))."""
    M, gamma, c, d = cs["M"], cs["gamma"], cs["c"], cs["d"]
    sigma, zeta = cs["sigma"], cs["zeta"]
    h = cs["L"] * M * zeta
    ks = np.arange(k0, k1, dtype=np.float64)
    a = c / (ks + d)
    Da = c / ((ks + d) * (ks + d + 1.0))  # alpha_k - alpha_{k+1}, without cancellation
    Dah = Da * h
    return {
        "Dah": Dah,
        "Da2h2": Dah**2,
        "bk": 1.0 - a * M * gamma / 4.0,
        "g2": 2.0 * Dah * (1.0 - a * M * gamma / 2.0),
        "nX": a**2 * cs["c_sigma"] * sigma**2 + a**3 * cs["c_zeta"] * zeta**2,
        "nV": a**2 * cs["chat_zeta"] * zeta + a * cs["chat_sigma"] * sigma,
    }


def certified(
    cs: dict[str, Any], p: np.ndarray, r: np.ndarray, R0: float, Kmax: int
) -> tuple[np.ndarray, np.ndarray]:
    """Iterate the certified recursions (C1) and (C2) of 6.d up to Kmax; return both curves.

    (C1): vector recursion over clients built from Lemmas 13-15 and 18-20 with E-A4/E-A5;
    (C2): the scalar Lyapunov recursion with the exact weights (E-A3, E-A7).
    Returns ``(Us[0..Kmax], p_s*Lam[0..Kmax])``, each an upper bound on ``E||x_{s,k}-x*||^2``.
    Clients with equal p_i are merged (exact by linearity); up to 50 distinct p_i the step is one
    dense mat-vec, otherwise one vectorised numpy step over the clients.
    """
    pg, mg, sums0 = _group_clients(p, r)
    if 4 * pg.size + 2 <= _DENSE_MAX_DIM:
        us = _c1_dense(cs, pg, mg, sums0, R0, Kmax)
    else:
        us = _c1_loop(cs, pg, mg, sums0, R0, Kmax)

    # ---- (C2) scalar Lyapunov recursion
    p_min, qbar = cs["p_min"], cs["qbar"]
    Lam, lam = lyapunov0(cs, p, r, R0)
    lams = np.empty(Kmax + 1)
    lams[0] = Lam
    for k0 in range(0, Kmax, _SEQ_CHUNK):
        k1 = min(k0 + _SEQ_CHUNK, Kmax)
        sq = _sequences(cs, k0, k1)
        cbrt_b = np.cbrt(sq["bk"])
        rho = 1.0 - p_min + p_min * cbrt_b
        wp = 1.0 / cbrt_b**2
        wc = qbar * (wp + 1.0 / cbrt_b)
        fLam = (2.0 * wc * sq["Da2h2"] + wp * sq["nX"]).tolist()
        flam = (wc * sq["Dah"] + wp * sq["nV"]).tolist()
        twoDahrho = (2.0 * sq["Dah"] * rho).tolist()
        rho_l = rho.tolist()
        out = []
        for j in range(k1 - k0):
            Lam, lam = rho_l[j] * Lam + twoDahrho[j] * lam + fLam[j], rho_l[j] * lam + flam[j]
            out.append(Lam)
        lams[k0 + 1 : k1 + 1] = out
    return us, cs["p_s"] * lams


def _group_clients(p: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Merge clients with equal p_i (exact by linearity of (C1): only group sums reach x_s).

    Returns the distinct p values, the group sizes and the group sums of the initial
    ``(Ux, Uy, Vx, Vy) = (r^2, r^2, r, r)`` as a (4, groups) array.
    """
    pg, inv, mg = np.unique(p, return_inverse=True, return_counts=True)
    sr = np.bincount(inv, weights=r, minlength=pg.size)
    sr2 = np.bincount(inv, weights=r**2, minlength=pg.size)
    return pg, mg.astype(np.float64), np.vstack([sr2, sr2, sr, sr])


def _c1_loop(
    cs: dict[str, Any],
    pg: np.ndarray,
    mg: np.ndarray,
    sums0: np.ndarray,
    R0: float,
    Kmax: int,
) -> np.ndarray:
    """(C1) on group sums, one vectorised numpy step per k (many distinct p_i)."""
    ps, n = cs["p_s"], cs["n"]
    p, q, onep = pg, 1.0 - pg, 1.0 + pg
    Ux, Uy, Vx, Vy = (sums0[j].copy() for j in range(4))
    Us, Vs = R0**2, R0
    us = np.empty(Kmax + 1)
    us[0] = Us
    ps_n = ps / n
    for k0 in range(0, Kmax, _SEQ_CHUNK):
        k1 = min(k0 + _SEQ_CHUNK, Kmax)
        sq = _sequences(cs, k0, k1)
        dah, da2, bk, g2 = (sq[k].tolist() for k in ("Dah", "Da2h2", "bk", "g2"))
        nX, nV = sq["nX"].tolist(), sq["nV"].tolist()
        for j in range(k1 - k0):
            D1, e = dah[j], da2[j]
            qVx = q * Vx
            Ux_new = (
                q * Ux + (2.0 * D1) * qVx + mg * (p * (bk[j] * Us + g2[j] * Vs + nX[j]) + onep * e)
            )
            Uy_new = q * Uy + (2.0 * D1) * (q * Vy + p * Vx) + p * Ux + mg * e
            Vx_new = qVx + mg * (D1 + p * (bk[j] * Vs + nV[j]))
            Vy_new = q * Vy + p * Vx + mg * D1
            Us = (1.0 - ps) * Us + ps_n * float(np.sum(Uy))
            Vs = (1.0 - ps) * Vs + ps_n * float(np.sum(Vy))
            Ux, Uy, Vx, Vy = Ux_new, Uy_new, Vx_new, Vy_new
            us[k0 + j + 1] = Us
    return us


def _c1_dense(
    cs: dict[str, Any],
    pg: np.ndarray,
    mg: np.ndarray,
    sums0: np.ndarray,
    R0: float,
    Kmax: int,
) -> np.ndarray:
    """(C1) on group sums as ``z_{k+1} = T_k z_k + f_k`` with dense T_k built per chunk of k.

    State ``z = (Ux[g], Uy[g], Vx[g], Vy[g], Us, Vs)``; ``T_k = T0 + Dah_k T1 + bk_k T2 + g2_k T3``.
    """
    ps, n = cs["p_s"], cs["n"]
    g = pg.size
    dim = 4 * g + 2
    iUx, iUy, iVx, iVy = (np.arange(g) + j * g for j in range(4))
    iUs, iVs = 4 * g, 4 * g + 1
    q = 1.0 - pg
    T0, T1, T2, T3 = (np.zeros((dim, dim)) for _ in range(4))
    T0[iUx, iUx] = q
    T1[iUx, iVx] = 2.0 * q
    T2[iUx, iUs] = mg * pg
    T3[iUx, iVs] = mg * pg
    T0[iUy, iUy] = q
    T0[iUy, iUx] = pg
    T1[iUy, iVy] = 2.0 * q
    T1[iUy, iVx] = 2.0 * pg
    T0[iVx, iVx] = q
    T2[iVx, iVs] = mg * pg
    T0[iVy, iVy] = q
    T0[iVy, iVx] = pg
    T0[iUs, iUs] = 1.0 - ps
    T0[iUs, iUy] = ps / n
    T0[iVs, iVs] = 1.0 - ps
    T0[iVs, iVy] = ps / n
    # forcing f_k = F @ (e_k, nX_k, nV_k, Dah_k)
    F = np.zeros((4, dim))
    F[0, iUx] = mg * (1.0 + pg)
    F[0, iUy] = mg
    F[1, iUx] = mg * pg
    F[2, iVx] = mg * pg
    F[3, iVx] = mg
    F[3, iVy] = mg
    z = np.concatenate([sums0.ravel(), [R0**2, R0]])
    us = np.empty(Kmax + 1)
    us[0] = R0**2
    # only the entries of T1, T2, T3 vary with k and they do not overlap T0's nonzeros
    varying = []
    for name, Tj in (("Dah", T1), ("bk", T2), ("g2", T3)):
        rows, cols = np.nonzero(Tj)
        varying.append((name, rows, cols, Tj[rows, cols]))
    chunk = max(8, min(_CHUNK, _CHUNK_FLOATS // dim**2))
    Tc = np.broadcast_to(T0, (min(chunk, max(Kmax, 1)), dim, dim)).copy()
    for k0 in range(0, Kmax, chunk):
        k1 = min(k0 + chunk, Kmax)
        m = k1 - k0
        sq = _sequences(cs, k0, k1)
        for name, rows, cols, vals in varying:
            Tc[:m, rows, cols] = sq[name][:, None] * vals[None, :]
        Fc = np.stack([sq["Da2h2"], sq["nX"], sq["nV"], sq["Dah"]], axis=1) @ F
        for j in range(m):
            z = Tc[j] @ z + Fc[j]
            us[k0 + j + 1] = z[iUs]
    return us

