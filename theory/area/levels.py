"""[A] Theorem 7, levels (B) and (A): the explicit terms of eq. (28) and the rate of eq. (3).

THEORY_SPEC 6.d.  Neither is an upper bound:

* :func:`leading_terms` (B): ``p_s * Lam28``, the explicit part of [A] eq. (28) with the
  corrected constants (E-A2, E-A3, E-A5), split into its five terms; the O(.) remainder is
  not evaluated.
* :func:`rate_shape` (A): [A] eq. (3) with every hidden constant equal to 1 (E-A15 pattern
  for the third term unless ``paper_literal``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from fedsim.theory.area._inputs import as_output

__all__ = ["leading_terms", "rate_shape"]


def leading_terms(
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
        return {"value": as_output(inf, scalar)}, inf
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
    return {k: as_output(v, scalar) for k, v in t.items()}, value


def rate_shape(
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
    return {k: as_output(v, scalar) for k, v in t.items()}, value

