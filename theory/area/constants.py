"""[A] Theorem 7's constants and step sizes (THEORY_SPEC 6.b, 6.c; errata E-A1..E-A5).

* :func:`area_constants` -- every constant of 6.b/6.c, computed from its definition (E-A1: the
  B.4 simplifications assume ``gamma >= 1`` and are never used).
* :func:`step_size` -- the prescribed schedule ``alpha_k = c/(k+d)`` of H7.4 ([A] eq. (3)).
* :func:`optimal_server_rate` -- the server rate minimising the Theorem 8 bound (7.c utility).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from fedsim.theory.area._inputs import as_output, count_at_least, horizons, probabilities

from fedsim.errors import ConfigError, check_number, check_positive, require
from fedsim.servers.area import theorem7_schedule

__all__ = ["SCHEDULE", "area_constants", "step_size", "optimal_server_rate", "schedule"]

#: the Theorem 7 step-size schedule (H7.4), as reported in ``BoundResult.step_sizes``
SCHEDULE = "alpha_k = c/(k+d)"


#: gamma, D (with its four entries), c and d of H7.4: one home for the arithmetic, shared with
#: the AREA server rule so the engine's steps are the bound's prescribed steps, float for float
schedule = theorem7_schedule


def step_size(k: Any, *, L: float, mu: float, M: int, p_min: float) -> float | np.ndarray:
    """Theorem 7 step ``alpha_k = 1/(p_min*M*gamma*k/48 + 1/D) = c/(k+d)`` (H7.4, [A] Thm 7).

    Takes the four primitive constants (not the constants dict); ``p_min = min(min_i p_i, p_s)``.
    ``k`` may be an int or an array of ints >= 0 (vectorised).  At event k+1 the client uses
    ``alpha_k`` (index k, THEORY_SPEC 2.2).
    """
    L_ = check_positive("L", L)
    mu_ = check_positive("mu", mu)
    require(mu_ <= L_, "mu", mu, f"must be <= L={L_!r}")
    M_ = count_at_least("M", M, 1)
    pm = check_positive("p_min", p_min)
    require(pm <= 1.0, "p_min", p_min, "must be <= 1")
    ks, scalar = horizons(k, 0)
    s = schedule(L_, mu_, M_, pm)
    return as_output(s["c"] / (ks.astype(np.float64) + s["d"]), scalar)


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
    L_ = check_positive("L", L)
    mu_ = check_number("mu", mu, low=0.0, strict=True)
    require(mu_ <= L_, "mu", mu, f"must be <= L={L_!r} (H7.1)")
    M_ = count_at_least("M", M, 1)
    pa, ps = probabilities(p, p_s)
    sig = check_number("sigma", sigma, low=0.0, allow_inf=True)
    zet = check_number("zeta", zeta, low=0.0, allow_inf=True)
    n = pa.size

    p_min = min(float(np.min(pa)), ps)
    s = schedule(L_, mu_, M_, p_min)
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
