"""The lemma constants of [P]: Lemmas 1-4 (MAML, eqs. (21)-(25)) and 5-7 (Moreau envelope,
eqs. (26)-(28)); THEORY_SPEC 4.c and 5.c.  Theorems 2 and 3 are Theorem 1 applied to
``F^(b)`` and ``F^(c)`` with these constants.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from fedsim.theory.conventions import REL_TOL, count, m0, real

from fedsim.errors import require

__all__ = ["maml_constants", "me_constants"]


# --------------------------------------------------------------------------- Lemmas 1-4
def maml_constants(*, L: float, rho: float, G: float, alpha: float, sigma_g2: float,
                   sigma_h2: float, gamma_g2: float, gamma_h2: float, b: int) -> dict[str, float]:
    """MAML constants of [P] Lemmas 1-4 (eqs. (21)-(25)); THEORY_SPEC 4.c.

    ``L_b = L(1+aL)^2 + a rho G`` (Lemma 1), ``mu_b = a L (1+aL) sigma_g/sqrt(b)`` (Lemma 2,
    (22); b is the inner batch |D'|), ``sigma_b2`` (Lemma 2, (23)), ``gamma_b2`` (Lemma 3,
    (24)), ``G_b = (1+aL) G`` (Lemma 4, (25)).  Valid for every ``alpha >= 0`` (E-P7);
    ``sigma_h2`` is the Frobenius-norm Hessian variance (E-P13).  Infinite ``rho``,
    ``G``, ``sigma_*``, ``gamma_*`` are allowed; ``0 * inf = 0`` as in THEORY_SPEC 1.5.
    """
    L = real("L", L, lo=0.0, strict=True)
    rho = real("rho", rho, lo=0.0, allow_inf=True)
    G = real("G", G, lo=0.0, allow_inf=True)
    a = real("alpha", alpha, lo=0.0)
    sg2 = real("sigma_g2", sigma_g2, lo=0.0, allow_inf=True)
    sh2 = real("sigma_h2", sigma_h2, lo=0.0, allow_inf=True)
    gg2 = real("gamma_g2", gamma_g2, lo=0.0, allow_inf=True)
    gh2 = real("gamma_h2", gamma_h2, lo=0.0, allow_inf=True)
    b = count("b", b, 1)
    one = 1.0 + a * L
    bfac = 1.0 / b + a * a * L * L / b
    L_b = L * one**2 + m0(a, rho, G)
    mu_b = m0(a * L * one, math.sqrt(sg2)) / math.sqrt(b)
    sigma_b2 = (m0(3.0 * one**2, sg2) * bfac
                + m0(3.0 * a * a, G * G, sh2) / b
                + m0(3.0 * a * a, sg2, sh2) / b * bfac)
    gamma_b2 = m0(12.0 * one**2 * (1.0 + a * a * L * L), gg2) + m0(12.0 * a * a, G * G, gh2)
    G_b = one * G
    return {"L_b": L_b, "mu_b": mu_b, "sigma_b2": sigma_b2, "gamma_b2": gamma_b2, "G_b": G_b}


# --------------------------------------------------------------------------- Lemmas 5-7
def me_constants(*, L: float, lam: float, nu: float, sigma_g2: float, b: int, gamma_g2: float,
                 kappa_me: float | None = None, affine_additive: bool = False) -> dict[str, Any]:
    """Moreau-envelope constants of [P] Lemmas 5-7 (eqs. (26)-(28)); THEORY_SPEC 5.c.

    ``L_c = lam/(kappa_me - 1)`` (Lemma 5; ``kappa_me`` in ``(1, lam/L]``, default lam/L so
    ``L_c = lam L/(lam - L)``, E-P12), ``mu_c = lam nu/(lam - L)`` (Lemma 6 (26), valid only
    under H3.y: affine gradients and additive noise, E-P10), ``mu_c_safe = sqrt(sigma_c2)``
    (always valid), ``sigma_c2 = 2 lam^2/(lam-L)^2 (sigma_g2/b + nu^2)`` (Lemma 6 (27)),
    ``gamma_c2 = 16 lam^2/(lam^2 - 48 L^2) gamma_g2`` (Lemma 7 (28); ``+inf`` unless
    ``lam^2 > 48 L^2``, E-P9).  ``mu_c_used`` is ``mu_c`` if ``affine_additive`` else
    ``mu_c_safe``.  Requires ``lam > L`` (Lemmas 5-6).
    """
    L = real("L", L, lo=0.0, strict=True)
    lam = real("lam", lam, lo=0.0, strict=True)
    require(lam > L, "lam", lam, f"must be > L={L:g} (Lemmas 5-6 need lam > L)")
    nu = real("nu", nu, lo=0.0)
    sg2 = real("sigma_g2", sigma_g2, lo=0.0, allow_inf=True)
    gg2 = real("gamma_g2", gamma_g2, lo=0.0, allow_inf=True)
    b = count("b", b, 1)
    require(isinstance(affine_additive, (bool, np.bool_)), "affine_additive", affine_additive,
            "must be a bool")
    if kappa_me is None:
        kappa = lam / L
        L_c = lam * L / (lam - L)
    else:
        kappa = real("kappa_me", kappa_me, lo=1.0, strict=True)
        require(kappa <= (lam / L) * (1.0 + REL_TOL), "kappa_me", kappa,
                f"must be <= lam/L={lam / L:g} (Lemma 5 needs lam >= kappa_me L)")
        L_c = lam / (kappa - 1.0)
    mu_c = lam * nu / (lam - L)
    sigma_c2 = 2.0 * lam**2 / (lam - L) ** 2 * (sg2 / b + nu**2)
    mu_c_safe = math.sqrt(sigma_c2)
    den = lam**2 - 48.0 * L**2
    if gg2 == 0.0:
        gamma_c2 = 0.0
    elif den > 0:
        gamma_c2 = 16.0 * lam**2 / den * gg2
    else:
        gamma_c2 = math.inf
    return {"L_c": L_c, "mu_c": mu_c, "mu_c_safe": mu_c_safe, "sigma_c2": sigma_c2,
            "gamma_c2": gamma_c2, "kappa_me": kappa,
            "mu_c_used": mu_c if affine_additive else mu_c_safe}

