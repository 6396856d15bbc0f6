"""AREA (Iakovidou & Kim, [A]) Theorems 7 and 8: constants, step sizes and bounds.

THEORY_SPEC sections 2.2 (execution model), 6 (Theorem 7), 7 (Theorem 8) and 8 ([A] errata).

* :func:`area_constants` -- every constant of 6.b/6.c, computed from its definition (E-A1: the
  B.4 simplifications assume ``gamma >= 1`` and are never used).
* :func:`step_size` -- the prescribed schedule ``alpha_k = c/(k+d)`` of H7.4.
* :func:`optimal_server_rate` -- the server rate minimising the Theorem 8 bound (7.c utility).
* :func:`theorem7` -- three evaluation levels of 6.d: ``"certified"`` (C), ``"leading_terms"`` (B),
  ``"rate_shape"`` (A).  Only (C) is an upper bound.
* :func:`theorem8` -- the constant-step bound of 7.c, paper or corrected constant (E-A6), or the
  general-alpha proof-level bound.

All evaluators take keyword arguments only; an array of horizons K gives arrays out.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fedsim.errors import ConfigError, require
from theory.result import BoundResult, Hypothesis, Status

__all__ = [
    "area_constants",
    "step_size",
    "optimal_server_rate",
    "theorem7",
    "theorem8",
    "SCHEDULE",
]

#: the Theorem 7 step-size schedule (H7.4), as reported in ``BoundResult.step_sizes``
SCHEDULE = "alpha_k = c/(k+d)"

_LEVELS = ("certified", "leading_terms", "rate_shape")
_MODES8 = ("corrected", "paper", "general_alpha")
_REL_TOL_ALPHA = 1e-12
_REAL = (int, float, np.integer, np.floating)


# --------------------------------------------------------------------------------------------
# input validation
# --------------------------------------------------------------------------------------------


def _pos_finite(name: str, x: Any) -> float:
    require(isinstance(x, (int, float, np.integer, np.floating)), name, x, "must be a real number")
    v = float(x)
    require(math.isfinite(v) and v > 0, name, x, "must be finite and > 0")
    return v


def _nonneg(name: str, x: Any, *, allow_inf: bool = False) -> float:
    require(isinstance(x, (int, float, np.integer, np.floating)), name, x, "must be a real number")
    v = float(x)
    require(not math.isnan(v) and v >= 0, name, x, "must be >= 0")
    require(allow_inf or math.isfinite(v), name, x, "must be finite")
    return v


def _int_ge(name: str, x: Any, lo: int) -> int:
    ok = isinstance(x, (int, np.integer)) and not isinstance(x, bool)
    if not ok and isinstance(x, (float, np.floating)):
        ok = math.isfinite(x) and float(x).is_integer()
    require(ok, name, x, "must be an integer")
    v = int(x)
    require(v >= lo, name, x, f"must be >= {lo}")
    return v


def _probabilities(p: Any, p_s: Any) -> tuple[np.ndarray, float]:
    """Validate the event probabilities of H7.3: all > 0 and ``sum(p) + p_s == 1`` (tol 1e-12)."""
    try:
        arr = np.asarray(p, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"p must be an array of probabilities, got p={p!r}") from exc
    require(arr.ndim == 1 and arr.size >= 1, "p", p, "must be a non-empty 1-d array")
    require(bool(np.all(np.isfinite(arr)) and np.all(arr > 0)), "p", p, "must have entries > 0")
    ps = _pos_finite("p_s", p_s)
    total = float(np.sum(arr)) + ps
    require(
        abs(total - 1.0) <= 1e-12,
        "p",
        p,
        f"together with p_s must sum to 1 (tol 1e-12; sum(p)+p_s={total!r})",
    )
    return arr, ps


def _horizons(K: Any, lo: int) -> tuple[np.ndarray, bool]:
    """K as an int64 array (and whether it was a scalar); entries integer and >= ``lo``."""
    scalar = np.ndim(K) == 0
    try:
        arr = np.atleast_1d(np.asarray(K))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"K must be an integer or an array of integers, got K={K!r}") from exc
    require(arr.size >= 1, "K", K, "must not be empty")
    if arr.dtype.kind == "f":
        require(
            bool(np.all(np.isfinite(arr)) and np.all(arr == np.floor(arr))),
            "K",
            K,
            "must hold integers",
        )
    else:
        require(arr.dtype.kind in "iu", "K", K, "must hold integers")
    out = arr.astype(np.int64)
    require(bool(np.all(out >= lo)), "K", K, f"must be >= {lo}")
    return out, scalar


def _out(x: np.ndarray, scalar: bool) -> float | np.ndarray:
    return float(x[0]) if scalar else np.asarray(x, dtype=np.float64)


# --------------------------------------------------------------------------------------------
# constants and step sizes
# --------------------------------------------------------------------------------------------


def _schedule(L: float, mu: float, M: int, p_min: float) -> dict[str, Any]:
    """gamma, D (with its four entries), c and d of H7.4."""
    gamma = 2.0 * mu * L / (mu + L)
    if M == 1:
        entries = np.array([2.0 / (M * (mu + L)), math.inf, math.inf, math.inf])
    else:
        m1 = float(M - 1)
        entries = np.array(
            [
                2.0 / (M * (mu + L)),
                gamma / (L**2 * m1),
                math.sqrt(M * gamma**2 / (64.0 * L**4 * m1**3)),
                (gamma / (32.0 * L**4 * m1**3)) ** (1.0 / 3.0),
            ]
        )
    D = float(np.min(entries))
    c = 48.0 / (p_min * M * gamma)
    d = c / D
    return {"gamma": gamma, "D": D, "D_entries": entries, "c": c, "d": d}


def step_size(k: Any, *, L: float, mu: float, M: int, p_min: float) -> float | np.ndarray:
    """Theorem 7 step ``alpha_k = 1/(p_min*M*gamma*k/48 + 1/D) = c/(k+d)`` (H7.4, [A] Thm 7).

    Takes the four primitive constants (not the constants dict); ``p_min = min(min_i p_i, p_s)``.
    ``k`` may be an int or an array of ints >= 0 (vectorised).  At event k+1 the client uses
    ``alpha_k`` (index k, THEORY_SPEC 2.2).
    """
    L_ = _pos_finite("L", L)
    mu_ = _pos_finite("mu", mu)
    require(mu_ <= L_, "mu", mu, f"must be <= L={L_!r}")
    M_ = _int_ge("M", M, 1)
    pm = _pos_finite("p_min", p_min)
    require(pm <= 1.0, "p_min", p_min, "must be <= 1")
    ks, scalar = _horizons(k, 0)
    s = _schedule(L_, mu_, M_, pm)
    return _out(s["c"] / (ks.astype(np.float64) + s["d"]), scalar)


def optimal_server_rate(rates: Any) -> float:
    """``rate_s* = sqrt(sum_i rate_i / ((2/n) sum_i 1/rate_i))`` (THEORY_SPEC 7.c, [A] Sec. 4.2).

    Minimises the Theorem 8 bound per global iteration K (not per wall-clock time) under the
    Poisson model ``p_s = rate_s/(rate_s + sum_j rate_j)``.
    """
    try:
        r = np.asarray(rates, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"rates must be an array of numbers, got rates={rates!r}") from exc
    require(r.ndim == 1 and r.size >= 1, "rates", rates, "must be a non-empty 1-d array")
    ok = bool(np.all(np.isfinite(r)) and np.all(r > 0))
    require(ok, "rates", rates, "must be finite and > 0")
    n = r.size
    return float(math.sqrt(float(np.sum(r)) / ((2.0 / n) * float(np.sum(1.0 / r)))))


def area_constants(
    *,
    L: float,
    mu: float,
    M: int,
    p: Any,
    p_s: float,
    sigma: float,
    zeta: float,
    corrected: bool = True,
) -> dict[str, Any]:
    """All Theorem 7 constants of THEORY_SPEC 6.b/6.c, from their definitions (E-A1).

    Returns a dict with ``gamma, kappa, delta, p_min, qbar, r_p, D, D_entries, c, d, alpha_0,
    beta_0, chat_sigma, chat_zeta, ctil_sigma_paper, ctil_sigma_corr, ctil_sigma, c_sigma,
    ctil_zeta, c_zeta, Q_A16, c1..c9, psi, psi_paper, psi_corr, c8_paper, c8_corr`` (plus
    ``n, L, mu, M, sigma, zeta, p_s, corrected``).

    ``corrected=True`` (default): ``ctil_sigma = max(paper, corrected)`` (E-A5),
    ``psi = 1/p_s + qbar*(beta_0^(-2/3)+beta_0^(-1/3))`` (E-A3),
    ``c8 = sqrt(psi*c*chat_sigma*c1/6)`` (E-A2).  ``corrected=False``: the paper's ``ctil_sigma``,
    ``psi = 1+qbar`` and ``c8 = sqrt(psi*chat_sigma*c1/12)``.  ``sigma`` and ``zeta`` are
    accepted for the spec's signature (the 6.c constants do not depend on them), validated >= 0.
    """
    L_ = _pos_finite("L", L)
    require(isinstance(mu, _REAL), "mu", mu, "must be a real number")
    mu_ = float(mu)
    require(math.isfinite(mu_) and mu_ > 0, "mu", mu, "must be finite and > 0 (H7.1)")
    require(mu_ <= L_, "mu", mu, f"must be <= L={L_!r} (H7.1)")
    M_ = _int_ge("M", M, 1)
    pa, ps = _probabilities(p, p_s)
    sig = _nonneg("sigma", sigma, allow_inf=True)
    zet = _nonneg("zeta", zeta, allow_inf=True)
    n = pa.size

    p_min = min(float(np.min(pa)), ps)
    s = _schedule(L_, mu_, M_, p_min)
    gamma, c, d = s["gamma"], s["c"], s["d"]
    kappa = L_ / mu_
    delta = 1.0 - 1.0 / M_
    qbar = float(np.mean(1.0 / pa))
    r_p = ps / p_min
    alpha_0 = c / d
    beta_0 = 1.0 - alpha_0 * M_ * gamma / 4.0

    chat_zeta = L_**2 * M_ * (M_ - 1) / 2.0
    chat_sigma = (1.0 + gamma / (4.0 * L_)) * M_
    ctil_sigma_paper = 1.0 + 2.0 * kappa * delta + 4.0 * L_**2 * delta / (M_ * (mu_ + L_) ** 2)
    ctil_sigma_corr = 1.0 + 2.0 * kappa * delta**3 + 4.0 * L_**2 * delta**3 / (mu_ + L_) ** 2
    ctil_sigma = max(ctil_sigma_paper, ctil_sigma_corr) if corrected else ctil_sigma_paper
    c_sigma = 2.0 * M_ * ctil_sigma
    ctil_zeta = 2.0 / gamma + 2.0 / (mu_ + L_)
    c_zeta = 4.0 * L_**4 * (M_ - 1) ** 3 * ctil_zeta
    Q_A16 = 4.0 * c * qbar * L_ * M_ + 2.0 * c**2 * chat_zeta
    c1 = 2.0 * c * L_ * M_
    c2 = 8.0 * c**2 * L_**2 * M_**2 * qbar
    c3 = 2.0 * c**2 * c_sigma
    c4 = 2.0 * c**3 * c_zeta
    psi_paper = 1.0 + qbar
    psi_corr = 1.0 / ps + qbar * (beta_0 ** (-2.0 / 3.0) + beta_0 ** (-1.0 / 3.0))
    psi = psi_corr if corrected else psi_paper
    c5 = math.sqrt(psi) * (d - 1.0) ** 2
    c6 = (d - 1.0) ** 2 * math.sqrt(2.0 * psi * c1)
    c7 = math.sqrt(psi * (c1 * Q_A16 + c4) / 2.0)
    c8_corr = math.sqrt(psi * c * chat_sigma * c1 / 6.0)
    c8_paper = math.sqrt(psi * chat_sigma * c1 / 12.0)
    c8 = c8_corr if corrected else c8_paper
    c9 = math.sqrt(psi * c3 / 3.0)
    return {
        "n": n,
        "L": L_,
        "mu": mu_,
        "M": M_,
        "p_s": ps,
        "sigma": sig,
        "zeta": zet,
        "corrected": bool(corrected),
        "gamma": gamma,
        "kappa": kappa,
        "delta": delta,
        "p_min": p_min,
        "qbar": qbar,
        "r_p": r_p,
        "D": s["D"],
        "D_entries": s["D_entries"],
        "c": c,
        "d": d,
        "alpha_0": alpha_0,
        "beta_0": beta_0,
        "chat_sigma": chat_sigma,
        "chat_zeta": chat_zeta,
        "ctil_sigma_paper": ctil_sigma_paper,
        "ctil_sigma_corr": ctil_sigma_corr,
        "ctil_sigma": ctil_sigma,
        "c_sigma": c_sigma,
        "ctil_zeta": ctil_zeta,
        "c_zeta": c_zeta,
        "Q_A16": Q_A16,
        "c1": c1,
        "c2": c2,
        "c3": c3,
        "c4": c4,
        "psi_paper": psi_paper,
        "psi_corr": psi_corr,
        "psi": psi,
        "c5": c5,
        "c6": c6,
        "c7": c7,
        "c8_paper": c8_paper,
        "c8_corr": c8_corr,
        "c8": c8,
        "c9": c9,
    }


# --------------------------------------------------------------------------------------------
# Theorem 7
# --------------------------------------------------------------------------------------------


def _initial_r(
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


def _lyapunov0(cs: dict[str, Any], p: np.ndarray, r: np.ndarray, R0: float) -> tuple[float, float]:
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


def _certified(
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
    Lam, lam = _lyapunov0(cs, p, r, R0)
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


def _thm7_hypotheses(cs: dict[str, Any] | None, mu: float, L: float) -> list[Hypothesis]:
    hyps = [
        Hypothesis(
            "H7.1",
            bool(0 < mu <= L),
            f"each f_i L-smooth, mu-strongly convex with 0 < mu <= L (mu={mu!r}, L={L!r}); "
            "the smoothness/convexity of the objective itself is the problem's responsibility",
        ),
        Hypothesis(
            "H7.2",
            None,
            "unbiased stochastic gradients with variance <= sigma^2, fresh at each local step: "
            "a property of the simulator's noise model",
        ),
        Hypothesis(
            "H7.3",
            None,
            "p_i > 0, p_s > 0, sum = 1 checked; i.i.d. events independent of the noise and the "
            "model (5)-(7) with x_{i,0}=y_{i,0}=x_{s,0} are properties of the simulator",
        ),
        Hypothesis(
            "H7.4",
            True if cs is not None else False,
            "bound evaluated for the prescribed schedule alpha_k = c/(k+d); the simulator must "
            "use exactly this schedule (alpha_k at event k+1)"
            if cs is not None
            else "schedule undefined: gamma = 0 when mu = 0",
        ),
    ]
    if cs is None:
        hyps.append(Hypothesis("H7.5", False, "alpha_0*M*gamma undefined when mu = 0"))
    else:
        v = cs["alpha_0"] * cs["M"] * cs["gamma"]
        hyps.append(
            Hypothesis(
                "H7.5",
                bool(v < 1.0),
                f"alpha_0*M*gamma = {v:.10g} must be < 1 (fails only for mu = L and M = 1; "
                "E-A12, Lemma 20's Young constant)",
            )
        )
    return hyps


def theorem7(
    *,
    L: float,
    mu: float,
    M: int,
    p: Any,
    p_s: float,
    sigma: float,
    zeta: float,
    R0: float,
    K: Any,
    grad_norms_at_xstar: Any = None,
    r_init: Any = None,
    level: str = "certified",
    paper_literal: bool = False,
    init: str = "exact",
) -> BoundResult:
    """[A] Theorem 7: ``E||x_{s,K} - x*||^2`` for AREA with ``alpha_k = c/(k+d)`` (THEORY_SPEC 6).

    Levels (6.d; never mixed):

    * ``"certified"`` (C), status ``CERTIFIED_CORRECTED``: ``min(C1, C2)``, the vector recursion
      (C1) and the scalar Lyapunov recursion (C2), both iterated numerically from the one-step
      lemma inequalities with exact (or upper-bounded) initial values.  A valid bound for every K.
      ``paper_literal=True`` is refused here (a certified bound cannot use erroneous constants).
    * ``"leading_terms"`` (B), status ``ASYMPTOTIC_LEADING_TERMS``: ``p_s * Lam28``, the explicit
      part of (28) with corrected constants (``paper_literal=True``: psi = 1+qbar, paper c8 and
      paper ctil_sigma).  NOT an upper bound: ``remainder`` names the unevaluated O(.) terms.
    * ``"rate_shape"`` (A), status ``RATE_SHAPE_ONLY``: formula (3) with unit hidden constants
      (default: third term with the E-A2/E-A15 pattern; ``paper_literal=True``: literal (3)).

    Initial values: ``r_init`` (exact r_i), else ``grad_norms_at_xstar`` (bound
    ``r_i <= R0 + alpha_0 M ||grad f_i(x*)||``), else ``r_i <= R0 + alpha_0 M L zeta``; Lam0
    and lam0 (6.c) are computed from these r_i.  ``init="paper_bounds"`` (leading_terms only)
    instead substitutes the paper's bounds ``Lam0 <= (1/p_s+8 qbar) R0^2 + 8 alpha_0^2 L^2 M^2
    zeta^2 qbar``, ``lam0 <= (1/p_s+4 qbar) R0 + 4 alpha_0 L M zeta qbar`` and its
    ``sqrt(a+b) <= sqrt(a)+sqrt(b)`` splits (6.d (B)).

    ``K`` is an int or an array of ints >= 0; the recursions run once to ``max(K)`` (the schedule
    does not depend on K) in O(n max(K)) time (O(g^2 max(K)) on the dense path for g <= 50
    distinct p_i) and O(max(K) + n) memory.  ``mu == 0`` gives ``NOT_APPLICABLE`` (H7.1), as does a
    failing H7.5 or an infinite sigma/zeta.
    """
    require(level in _LEVELS, "level", level, f"must be one of {_LEVELS}")
    require(isinstance(paper_literal, bool), "paper_literal", paper_literal, "must be a bool")
    require(init in ("exact", "paper_bounds"), "init", init, "must be 'exact' or 'paper_bounds'")
    require(
        init == "exact" or level == "leading_terms",
        "init",
        init,
        "may be 'paper_bounds' only with level='leading_terms'",
    )
    if level == "certified" and paper_literal:
        raise ConfigError(
            "paper_literal must be False for level='certified' (the certified recursion uses "
            "the corrected constants only), got paper_literal=True"
        )
    L_ = _pos_finite("L", L)
    require(isinstance(mu, _REAL), "mu", mu, "must be a real number")
    mu_ = float(mu)
    require(math.isfinite(mu_) and mu_ >= 0, "mu", mu, "must be finite and >= 0")
    require(mu_ <= L_, "mu", mu, f"must be <= L={L_!r}")
    M_ = _int_ge("M", M, 1)
    pa, ps = _probabilities(p, p_s)
    sig = _nonneg("sigma", sigma, allow_inf=True)
    zet = _nonneg("zeta", zeta, allow_inf=True)
    R0_ = _nonneg("R0", R0)
    Ks, scalar = _horizons(K, 0)
    theorem = "AREA Theorem 7"

    if mu_ == 0.0:
        inf = np.full(Ks.shape, np.inf)
        return BoundResult(
            value=_out(inf, scalar),
            status=Status.NOT_APPLICABLE,
            terms={"value_if_hypotheses_ignored": _out(inf, scalar)},
            hypotheses=_thm7_hypotheses(None, mu_, L_),
            derived_constants={"gamma": 0.0, "p_min": min(float(np.min(pa)), ps)},
            warnings=["mu = 0: Theorem 7 needs strong convexity; gamma = 0 makes c = d = inf"],
            theorem=theorem,
            mode=level,
        )

    cs = area_constants(
        L=L_, mu=mu_, M=M_, p=pa, p_s=ps, sigma=sig, zeta=zet, corrected=not paper_literal
    )
    hyps = _thm7_hypotheses(cs, mu_, L_)
    warnings: list[str] = []
    failing = [h.name for h in hyps if h.holds is False]
    infinite = not (math.isfinite(sig) and math.isfinite(zet))
    if infinite:
        hyps.append(Hypothesis("finite constants", False, f"sigma={sig!r}, zeta={zet!r}"))
        failing.append("finite constants")
    d = cs["d"]
    step_sizes = {
        "schedule": SCHEDULE,
        "alpha_0": cs["alpha_0"],
        "c": cs["c"],
        "d": d,
        "alpha_K": _out(cs["c"] / (Ks + d), scalar),
    }
    if np.min(Ks) < 10.0 * d:
        warnings.append(
            f"K not >> d: min(K)={int(np.min(Ks))} < 10*d = {10 * d:.6g}; the O(1/K) regime "
            "needs K >> d (the transient (d-1)^4*Lam0/(K+d-1)^4 dominates)"
        )

    r, r_src = _initial_r(R0_, cs["alpha_0"], M_, L_, zet, cs["n"], grad_norms_at_xstar, r_init)
    derived = {k: v for k, v in cs.items() if k not in ("L", "mu", "M", "sigma", "zeta")}
    derived["r_init_source"] = r_src
    derived["r_init"] = r
    if not infinite:
        Lam0, lam0 = _lyapunov0(cs, pa, r, R0_)
        derived["Lam0"], derived["lam0"] = Lam0, lam0

    errata = ["E-A1"]
    if level == "certified":
        errata += ["E-A3", "E-A4", "E-A5", "E-A7"]
        if infinite:
            terms: dict[str, Any] = {
                "C1_vector": _out(np.full(Ks.shape, np.inf), scalar),
                "C2_scalar": _out(np.full(Ks.shape, np.inf), scalar),
            }
            value = np.full(Ks.shape, np.inf)
        else:
            us, lyap = _certified(cs, pa, r, R0_, int(np.max(Ks)))
            c1v, c2v = us[Ks], lyap[Ks]
            value = np.minimum(c1v, c2v)
            terms = {"C1_vector": _out(c1v, scalar), "C2_scalar": _out(c2v, scalar)}
        status = Status.CERTIFIED_CORRECTED
        remainder = None
    elif level == "leading_terms":
        terms, value = _leading_terms(cs, Ks, scalar, infinite, derived, R0_, init)
        status = Status.ASYMPTOTIC_LEADING_TERMS
        remainder = (
            "O( zeta*(sigma + sqrt(sigma*zeta))/K^2 + zeta^2/K^2.5 + sigma^2/Ktil^2 ) plus "
            "d-dependent lower-order terms from sum_{k<K}(k+d)^p; NOT evaluated"
        )
        warnings.append(
            "leading_terms is NOT an upper bound: the remainder is not evaluated and is not "
            "small unless K >> d"
        )
        if paper_literal:
            warnings.append(
                "paper_literal: psi = 1+qbar (E-A3), c8 = sqrt(psi*chat_sigma*c1/12) (E-A2) and "
                "the paper's ctil_sigma (E-A5) -- known errata NOT applied"
            )
        else:
            errata += ["E-A2", "E-A3", "E-A5", "E-A9", "E-A16"]
    else:
        terms, value = _rate_shape(cs, Ks, scalar, paper_literal)
        status = Status.RATE_SHAPE_ONLY
        remainder = "hidden constants set to 1; transient (d-1)^4*Lam0/Ktil^4 omitted"
        warnings.append(
            "rate_shape is NOT a bound: formula (3) with unit hidden constants, dimensionally "
            "inconsistent (E-A1); use only for log-log slopes once K >> d"
        )
        if not paper_literal:
            errata += ["E-A15"]

    if failing:
        terms = dict(terms)
        terms["value_if_hypotheses_ignored"] = _out(np.asarray(value, dtype=np.float64), scalar)
        warnings.append("NOT_APPLICABLE: failing hypotheses " + ", ".join(failing))
        status = Status.NOT_APPLICABLE
    return BoundResult(
        value=_out(np.asarray(value, dtype=np.float64), scalar),
        status=status,
        terms=terms,
        remainder=remainder,
        hypotheses=hyps,
        derived_constants=derived,
        step_sizes=step_sizes,
        errata_applied=errata,
        warnings=warnings,
        theorem=theorem,
        mode=level
        + ("(paper_literal)" if paper_literal else "")
        + ("(init=paper_bounds)" if init != "exact" else ""),
    )


def _leading_terms(
    cs: dict[str, Any],
    Ks: np.ndarray,
    scalar: bool,
    infinite: bool,
    derived: dict[str, Any],
    R0: float,
    init: str,
) -> tuple[dict[str, Any], np.ndarray]:
    """6.d (B): ``p_s * Lam28`` split into its five terms (value == sum(terms))."""
    if infinite:
        inf = np.full(Ks.shape, np.inf)
        return {"value": _out(inf, scalar)}, inf
    ps, d, sigma, zeta = cs["p_s"], cs["d"], cs["sigma"], cs["zeta"]
    c1, c3, c4 = cs["c1"], cs["c3"], cs["c4"]
    if init == "exact":
        Lam0 = derived["Lam0"]
        sqrt_Lam0, sqrt_lam0 = math.sqrt(Lam0), math.sqrt(derived["lam0"])
    else:
        qbar, h0 = cs["qbar"], cs["alpha_0"] * cs["L"] * cs["M"] * zeta
        Lam0 = (1.0 / ps + 8.0 * qbar) * R0**2 + 8.0 * h0**2 * qbar
        sqrt_Lam0 = math.sqrt(1.0 / ps + 8.0 * qbar) * R0 + math.sqrt(8.0 * qbar) * h0
        sqrt_lam0 = math.sqrt(1.0 / ps + 4.0 * qbar) * math.sqrt(R0) + math.sqrt(4.0 * qbar * h0)
        derived["Lam0_paper_bound"] = Lam0
        derived["lam0_paper_bound"] = (1.0 / ps + 4.0 * qbar) * R0 + 4.0 * h0 * qbar
    Kt = Ks.astype(np.float64) + d - 1.0
    t = {
        "transient": ps * (d - 1.0) ** 4 * Lam0 / Kt**4,
        "sync_K^-3": ps
        * c1
        * zeta
        * (cs["c5"] * sqrt_Lam0 + cs["c6"] * math.sqrt(zeta) * sqrt_lam0)
        / Kt**3,
        "drift_K^-2": ps * (c1 * cs["c7"] + c4) * zeta**2 / (2.0 * Kt**2),
        "sync_K^-1.5": ps
        * c1
        * zeta
        * (cs["c8"] * math.sqrt(sigma * zeta) + cs["c9"] * sigma)
        / (2.0 * Kt**1.5),
        "noise_K^-1": ps * c3 * sigma**2 / (3.0 * Kt),
    }
    value = np.zeros(Ks.shape)
    for v in t.values():
        value = value + v
    return {k: _out(v, scalar) for k, v in t.items()}, value


def _rate_shape(
    cs: dict[str, Any], Ks: np.ndarray, scalar: bool, paper_literal: bool
) -> tuple[dict[str, Any], np.ndarray]:
    """6.d (A): formula (3) of [A] with every hidden constant equal to 1 (value == sum(terms))."""
    r_p, qbar, p_min, M = cs["r_p"], cs["qbar"], cs["p_min"], cs["M"]
    L, kappa, delta = cs["L"], cs["kappa"], cs["delta"]
    sigma, zeta, gamma = cs["sigma"], cs["zeta"], cs["gamma"]
    with np.errstate(divide="ignore", invalid="ignore"):
        Kf = Ks.astype(np.float64)
        t1 = r_p * (1 + delta * kappa) * sigma**2 / (p_min * M * Kf)
        t2 = (
            r_p
            * math.sqrt(qbar)
            * L
            * math.sqrt(1 + delta * kappa)
            * sigma
            * zeta
            / (p_min * math.sqrt(M) * Kf**1.5)
        )
        if paper_literal:
            t3 = (
                r_p
                * math.sqrt(qbar)
                * L**1.5
                * math.sqrt(sigma * zeta**3)
                / (math.sqrt(p_min) * Kf**1.5)
            )
        else:
            t3 = (
                r_p
                * math.sqrt(qbar)
                * L**1.5
                * math.sqrt(sigma * zeta**3)
                / (p_min * math.sqrt(gamma) * Kf**1.5)
            )
        t4 = r_p * (delta + math.sqrt(p_min) * qbar) * L**4 * zeta**2 / (p_min**2 * Kf**2)
    t = {
        "sigma2_K^-1": t1,
        "sigma_zeta_K^-1.5": t2,
        "sqrt_sigma_zeta3_K^-1.5": t3,
        "zeta2_K^-2": t4,
    }
    value = t1 + t2 + t3 + t4
    return {k: _out(v, scalar) for k, v in t.items()}, value


# --------------------------------------------------------------------------------------------
# Theorem 8
# --------------------------------------------------------------------------------------------


def theorem8(
    *,
    M: int,
    p: Any,
    p_s: float,
    sigma2: float,
    B: float,
    R: float,
    K: Any,
    alpha: float | None = None,
    mode: str = "corrected",
) -> BoundResult:
    """[A] Theorem 8: ``E[f(xbar_{s,K}) - f*]`` for convex B-Lipschitz f_i, constant step (7.c).

    ``A = 1/p_s + 2*qbar``; ``B8(alpha) = A R^2/(2 alpha M K) + alpha C_B/2`` (the proof's
    inequality, any alpha > 0).  The theorem's step ``alpha* = sqrt(A R^2/(C_B M K))`` makes the
    two terms equal and gives ``sqrt(A C_B R^2/(M K))``.  ``value == sum(terms)`` (ignoring the
    informational ``value_if_hypotheses_ignored`` / ``B8_general_alpha`` entries).

    Modes:

    * ``"corrected"``: ``C_B = sigma2 + M B^2`` (E-A6), ``CERTIFIED_CORRECTED``.
    * ``"paper"``: ``C_B = sigma2 + (M+1) B^2/2``; ``PAPER_LITERAL_KNOWN_ERRATUM`` if M >= 2
      (the statement is violated, 7.d), ``CERTIFIED_PAPER`` if M == 1.
    * ``"general_alpha"``: ``B8(alpha)`` with the corrected C_B, ``PROOF_LEVEL`` (alpha None ->
      the corrected prescription).

    ``alpha=None`` -> the theorem's step for each K (it depends on K).  In ``"paper"`` /
    ``"corrected"`` mode a given alpha that differs from the prescription (relative tol 1e-12)
    makes the statement ``NOT_APPLICABLE``; the value is then ``B8(alpha)`` with the mode's C_B
    (also in ``terms["B8_general_alpha"]``); use ``mode="general_alpha"`` for the PROOF_LEVEL
    bound at that alpha.  ``B = inf`` -> ``NOT_APPLICABLE`` (f_i not Lipschitz) with
    ``terms["value_if_hypotheses_ignored"] = inf``.  K must be >= 1 (ergodic average).
    """
    require(mode in _MODES8, "mode", mode, f"must be one of {_MODES8}")
    M_ = _int_ge("M", M, 1)
    pa, ps = _probabilities(p, p_s)
    s2 = _nonneg("sigma2", sigma2, allow_inf=True)
    B_ = _nonneg("B", B, allow_inf=True)
    R_ = _nonneg("R", R)
    Ks, scalar = _horizons(K, 1)
    if alpha is not None:
        a_given = _pos_finite("alpha", alpha)
    qbar = float(np.mean(1.0 / pa))
    A = 1.0 / ps + 2.0 * qbar
    CB_corr = s2 + M_ * B_**2
    CB_paper = s2 + (M_ + 1) * B_**2 / 2.0
    CB = CB_paper if mode == "paper" else CB_corr
    Kf = Ks.astype(np.float64)
    MK = M_ * Kf
    theorem = "AREA Theorem 8"
    errata = [] if mode == "paper" else ["E-A6"]
    warnings: list[str] = []
    finite = math.isfinite(B_) and math.isfinite(s2)

    hyps = [
        Hypothesis(
            "convex_lipschitz",
            bool(math.isfinite(B_)),
            f"each f_i convex and B-Lipschitz (B={B_!r}); convexity is the problem's property",
        ),
        Hypothesis(
            "bounded_variance",
            False if not math.isfinite(s2) else None,
            "E[g_i|x] = d_i(x), E||g_i - d_i||^2 <= sigma2: a property of the simulator's noise"
            + (" (sigma2 = inf)" if not math.isfinite(s2) else ""),
        ),
        Hypothesis(
            "iid_events",
            None,
            "p_i > 0, p_s > 0, sum = 1 checked; i.i.d. events are a property of the simulator",
        ),
        Hypothesis("minimiser_exists", None, "x* must exist; R = ||x_{s,0} - x*|| (or a bound)"),
    ]

    if finite and CB > 0:
        a_star = R_ * np.sqrt(A / (CB * MK))  # R outside the root: no underflow of R^2
    else:
        a_star = np.full(Kf.shape, np.inf if finite else 0.0)
    step_sizes: dict[str, Any] = {
        "schedule": "alpha constant for all k",
        "alpha_prescribed": _out(a_star, scalar),
    }
    prescribed = alpha is None
    if alpha is not None:
        step_sizes["alpha"] = a_given
        if finite:
            prescribed = bool(np.all(np.abs(a_given - a_star) <= _REL_TOL_ALPHA * a_star))

    if not finite:
        inf = np.full(Kf.shape, np.inf)
        terms: dict[str, Any] = {"value_if_hypotheses_ignored": _out(inf, scalar)}
        warnings.append("B or sigma2 infinite: the Lipschitz/variance assumption fails")
        return BoundResult(
            value=_out(inf, scalar),
            status=Status.NOT_APPLICABLE,
            terms=terms,
            hypotheses=hyps,
            derived_constants={"qbar": qbar, "A": A, "C_B": CB},
            step_sizes=step_sizes,
            errata_applied=errata,
            warnings=warnings,
            theorem=theorem,
            mode=mode,
        )
    if alpha is None:
        # at the prescribed step both terms equal sqrt(A C_B R^2/(M K))/2 (0 if R = 0 or C_B = 0)
        t1 = 0.5 * R_ * np.sqrt(A * CB / MK)
        t2 = t1.copy()
        if CB == 0.0:
            warnings.append("C_B = 0 (B = sigma2 = 0): f is constant, the bound is 0")
    else:
        t1 = A * R_**2 / (2.0 * a_given * MK)
        t2 = np.full(Kf.shape, a_given * CB / 2.0)
    value = t1 + t2
    terms = {"distance_term": _out(t1, scalar), "noise_term": _out(t2, scalar)}

    if mode == "general_alpha":
        status = Status.PROOF_LEVEL
        warnings.append(
            "general_alpha: B8(alpha) from the proof's inequality (corrected C_B), not the "
            "theorem statement"
        )
    elif not prescribed:
        status = Status.NOT_APPLICABLE
        terms["B8_general_alpha"] = _out(value, scalar)
        sqrt_val = R_ * np.sqrt(A * CB / MK)
        terms["value_if_hypotheses_ignored"] = _out(sqrt_val, scalar)
        hyps.append(
            Hypothesis(
                "prescribed_step",
                False,
                f"alpha={a_given!r} differs from the prescribed sqrt(A R^2/(C_B M K))",
            )
        )
        warnings.append(
            "alpha is not the theorem's step: the statement does not apply; value is B8(alpha) "
            "with this mode's C_B (use mode='general_alpha' for the PROOF_LEVEL bound"
            + (", which needs the corrected C_B" if mode == "paper" and M_ >= 2 else "")
            + ")"
        )
    elif mode == "paper":
        status = Status.PAPER_LITERAL_KNOWN_ERRATUM if M_ >= 2 else Status.CERTIFIED_PAPER
        if M_ >= 2:
            warnings.append(
                "paper constant (M+1)B^2/2 is an erratum for M >= 2 (E-A6); the paper's "
                "statement is violated by exact counterexamples (THEORY_SPEC 7.d)"
            )
    else:
        status = Status.CERTIFIED_CORRECTED
    if mode != "general_alpha" and prescribed:
        hyps.append(Hypothesis("prescribed_step", True, "alpha = sqrt(A R^2/(C_B M K))"))
    return BoundResult(
        value=_out(value, scalar),
        status=status,
        terms=terms,
        hypotheses=hyps,
        derived_constants={
            "qbar": qbar,
            "A": A,
            "C_B": CB,
            "C_B_paper": CB_paper,
            "C_B_corrected": CB_corr,
        },
        step_sizes=step_sizes,
        errata_applied=errata,
        warnings=warnings,
        theorem=theorem,
        mode=mode,
    )
