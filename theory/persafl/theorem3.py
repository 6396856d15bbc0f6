"""[P] Theorem 3 (PersA-FL-ME, Option C): ``(1/T) sum E||grad F^(c)(w^t)||^2`` (THEORY_SPEC 5).

Statement ([P] Theorem 3; proof eqs. (C61)-(C63)): under [P] Assumptions 1-4 and Lemmas 5-7
(eqs. (26)-(28), :func:`fedsim.theory.persafl.lemmas.me_constants`), ``lam > L`` solved to accuracy
nu, with ``beta = 1``, ``eta = 1/(Q sqrt(L_c T))`` and ``T >= 288 L_c (Q+7)(tau+1)^3``
(corrected from the paper's ``(tau+1)^2``, E-P3),

    (1/T) sum_t E||grad F^(c)(w^t)||^2 <= 4 sqrt(L_c) F_gap/sqrt(T)
        + 8 sqrt(L_c)(sigma_c2 + gamma_c2)/sqrt(T)
        + 144 L_c (1+Q)(tau^2+1)(sigma_c2 + gamma_c2)/T + 4 Q mu^2.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from fedsim.theory.assembly import (
    Check,
    assemble,
    beta_eta_checks,
    common_checks,
    fmt,
    general_checks,
)
from fedsim.theory.conventions import (
    HELP,
    MODES_3,
    OBJ,
    REL_TOL,
    SIM,
    Mode3,
    count,
    ge,
    horizons,
    mode_of,
    ratio,
    real,
    step,
    with_f_lower,
)
from fedsim.theory.params import Horizons
from fedsim.theory.persafl.lemmas import me_constants
from fedsim.theory.registry import register_theorem
from fedsim.theory.result import BoundResult, Status

__all__ = ["theorem3", "LABEL", "HYPOTHESES"]

#: the paper label of this theorem
LABEL = "[P] PersA-FL Theorem 3"

#: the statement's hypotheses, name -> statement (THEORY_SPEC 5.b)
HYPOTHESES = {
    'Asm 1-4': 'as in Theorem 1',
    'lam > L': 'Moreau parameter lam > L (Lemmas 5-6); lam^2 > 48 L^2 for a finite gamma_c2',
    'nu': 'inner problems solved to ||grad h~|| <= nu',
    'H3.y': "affine gradients and additive noise (only for the paper's mu_c, E-P10)",
    'beta == 1': 'server step beta = 1',
    'eta': 'client step eta = 1/(Q sqrt(L_c T))',
    'T': 'T >= 288 L_c (Q+7)(tau+1)^3',
}


@with_f_lower
def theorem3(*, L: float, lam: float, nu: float, sigma_g2: float, gamma_g2: float, b: int,
             Q: int, tau: int, F_gap: float, T: Horizons, kappa_me: float | None = None,
             affine_additive: bool = False, beta: float = 1.0,
             eta: float | np.ndarray | None = None,
             mode: Mode3 = "corrected") -> BoundResult:
    """[P] Theorem 3 (PersA-FL-ME, Option C): bound on ``(1/T) sum E||grad F^(c)(w^t)||^2``.

    Constants from :func:`me_constants` (Lemmas 5-7).  ``F_gap = F^(c)(w^0) - f_star_P``.

    * ``mode="corrected"`` (THEORY_SPEC 5.d, CERTIFIED_CORRECTED; E-P1, E-P2, E-P3)::

        B3 = 4 sqrt(L_c) F_gap/sqrt(T) + 8 sqrt(L_c)(sigma_c2 + gamma_c2)/sqrt(T)
           + 144 L_c (1+Q)(tau^2+1)(sigma_c2 + gamma_c2)/T + 4 Q mu^2

      with ``mu = mu_c`` if ``affine_additive`` (H3.y) else ``mu_c_safe`` (E-P10).  It is
      certified when the proof's requirements hold at the user's T: ``eta <= 1/(4 L_c (Q+1))``
      and ``c_T3 = (2Q-1)/Q - 4 eta Q L_c - 32 eta^2 Q^2 L_c^2 (1+2Q) tau' (tau+1)^2
      (1 + 2 eta L_c) >= 1/2`` ((C61), tau' = max(tau,1), E-P6); ``T >= 288 L_c (Q+7)
      (tau+1)^3`` guarantees both.  T meeting only the paper's ``(tau+1)^2`` threshold with
      ``c_T3 < 1/2`` fails with reason E-P3.
    * ``mode="paper_literal"`` (PAPER_LITERAL_KNOWN_ERRATUM): the displayed statement, first
      term read with ``F_gap``, third term with ``gamma_g2``, last term ``4 Q lam^2 nu^2/
      (lam-L)^2``, horizon ``T >= 288 L_c (Q+7)(tau+1)^2``.
    * ``mode="general_eta"`` (THEORY_SPEC 5.e, PROOF_LEVEL): (C61)-(C63) divided by
      ``c_T3(eta)``; valid if ``eta <= 1/(4 L_c (Q+1))`` and ``c_T3 > 0``.
    """
    mode = mode_of(mode, MODES_3)
    cs = me_constants(L=L, lam=lam, nu=nu, sigma_g2=sigma_g2, b=b, gamma_g2=gamma_g2,
                      kappa_me=kappa_me, affine_additive=affine_additive)
    L, lam, nu, b = float(L), float(lam), float(nu), int(b)
    sg2, gg2 = float(sigma_g2), float(gamma_g2)
    Q = count("Q", Q, 1)
    tau = count("tau", tau, 0)
    F_gap = real("F_gap", F_gap, lo=0.0, allow_inf=True)
    beta = real("beta", beta, lo=0.0, strict=True)
    Ts, is_array = horizons(T)
    user_eta = step("eta", eta, Ts.shape)
    L_c, sc2, gc2 = cs["L_c"], cs["sigma_c2"], cs["gamma_c2"]
    mu = cs["mu_c_used"]
    eta_pres = 1.0 / (Q * np.sqrt(L_c * Ts))
    eta_u = eta_pres if user_eta is None else user_eta
    taup = max(tau, 1)
    T_min = 288.0 * L_c * (Q + 7) * (tau + 1) ** 3
    T_min_paper = 288.0 * L_c * (Q + 7) * (tau + 1) ** 2
    eta_max = 1.0 / (4.0 * L_c * (Q + 1))

    def c_T3(e: np.ndarray) -> np.ndarray:
        return ((2 * Q - 1) / Q - 4 * e * Q * L_c
                - 32 * e**2 * Q**2 * L_c**2 * (1 + 2 * Q) * taup * (tau + 1) ** 2
                * (1 + 2 * e * L_c))

    c = c_T3(eta_u)
    checks = common_checks(f_gap=F_gap, gap_name="F_gap", sigma_g2=sg2, gamma_g2=gg2,
                            option="Option C", local_rule="Option C (inexact Moreau prox)")
    checks += [
        Check("lam >= 7 L", lam >= 7.0 * L,
               f"lam/L = {fmt(lam / L)} (Lemma 7 needs lam^2 > 48 L^2, E-P9)"),
        Check("inner accuracy ||grad h_tilde|| <= nu", None, SIM),
        Check("H3.x batch losses L-weakly convex", None,
               "needed by Lemma 6 (27) (E-P11); " + OBJ),
    ]
    if mode == "general_eta" or mode == "corrected":
        checks.append(Check(
            "H3.y affine gradients and additive noise",
            None,
            "declared by the caller (affine_additive=True): paper mu_c used; " + OBJ
            if affine_additive else "not assumed: mu_c_safe = sqrt(sigma_c2) used (E-P10)"))
    derived: dict[str, Any] = dict(cs)
    derived.update({"T_min": T_min, "T_min_paper": T_min_paper, "eta_prescribed": eta_pres,
                    "eta_max": eta_max, "c_T3": c})
    errata = ["E-P12"]
    if mode in ("corrected", "general_eta") and not affine_additive:
        errata.append("E-P10")
    be = beta_eta_checks(beta=beta, eta=eta_u, eta_pres=eta_pres,
                          user_eta=user_eta is not None, Lname="L_c")
    if mode == "corrected":
        ok = (c >= 0.5) & (np.asarray(eta_u) <= eta_max * (1 + REL_TOL))
        meets3, meets2 = ge(Ts, T_min), ge(Ts, T_min_paper)
        ep3 = meets2 & ~ok
        detail = (f"(C61): c_T3 >= 1/2 and eta <= 1/(4 L_c (Q+1)) = {fmt(eta_max)}; min c_T3 = "
                  f"{fmt(np.min(c))}; T >= 288 L_c (Q+7)(tau+1)^3 = {fmt(T_min)} (sufficient): "
                  f"{'yes' if meets3.all() else 'no'}")
        if ep3.any():
            detail = ("E-P3: T meets the paper's threshold 288 L_c (Q+7)(tau+1)^2 = "
                      f"{fmt(T_min_paper)} but c_T3 < 1/2; " + detail)
        checks = be + [Check("horizon: c_T3(T) >= 1/2 and eta <= 1/(4 L_c (Q+1)) (E-P3)", ok,
                              detail)] + checks
        terms = {
            "gap": 4.0 * math.sqrt(L_c) * F_gap / np.sqrt(Ts),
            "noise_diversity": 8.0 * math.sqrt(L_c) * (sc2 + gc2) / np.sqrt(Ts),
            "staleness": 144.0 * L_c * (1 + Q) * (tau**2 + 1) * (sc2 + gc2) / Ts,
            "bias": 4.0 * Q * mu**2,
        }
        return assemble(theorem="PersA-FL Theorem 3", mode=mode, T=Ts, is_array=is_array,
                         terms=terms, checks=checks, base=Status.CERTIFIED_CORRECTED,
                         derived=derived, step_sizes={"eta": eta_u, "beta": beta},
                         errata=["E-P1", "E-P2", "E-P3", "E-P6", "E-P9"] + errata)
    if mode == "paper_literal":
        checks = be + [Check("T >= 288 L_c (Q+7)(tau+1)^2 (paper's threshold)",
                              ge(Ts, T_min_paper), f"T_min_paper = {fmt(T_min_paper)}")] + checks
        terms = {
            "gap": 4.0 * math.sqrt(L_c) * F_gap / np.sqrt(Ts),
            "noise_diversity": 8.0 * math.sqrt(L_c) * (sc2 + gc2) / np.sqrt(Ts),
            "staleness": 144.0 * L_c * (1 + Q) * (tau**2 + 1) * (sc2 + gg2) / Ts,
            "bias": 4.0 * Q * lam**2 * nu**2 / (lam - L) ** 2,
        }
        warn = ["literal statement: E-P1 (F(w^t) read as F(w^0) via F_gap), E-P2 (gamma_g2 in the "
                "third term), E-P3 ((tau+1)^2 threshold) and E-P10 (mu_c) are NOT corrected"]
        return assemble(theorem="PersA-FL Theorem 3", mode=mode, T=Ts, is_array=is_array,
                         terms=terms, checks=checks, base=Status.PAPER_LITERAL_KNOWN_ERRATUM,
                         derived=derived, step_sizes={"eta": eta_u, "beta": beta},
                         errata=errata, warnings=warn)
    checks = general_checks(beta=beta, eta=eta_u, eta_max=eta_max, c=c, cname="c_T3",
                             cite="(C61)") + checks
    terms = {
        "gap": ratio(2.0 * F_gap / (eta_u * Q * Ts), c),
        "bias": ratio(2.0 * Q * mu**2 + 0.0 * Ts, c),
        "drift_staleness": ratio(32.0 * eta_u**2 * Q**2 * L_c**2 * (1 + 2 * Q) * (tau**2 + 1)
                                  * (1 + 2 * eta_u * L_c) * (sc2 + gc2) + 0.0 * Ts, c),
        "noise_diversity": ratio(4.0 * eta_u * Q * L_c * (sc2 + gc2) + 0.0 * Ts, c),
    }
    return assemble(theorem="PersA-FL Theorem 3", mode=mode, T=Ts, is_array=is_array,
                     terms=terms, checks=checks, base=Status.PROOF_LEVEL, derived=derived,
                     step_sizes={"eta": eta_u, "beta": beta},
                     errata=["E-P1", "E-P2", "E-P4", "E-P6", "E-P9"] + errata)


_HELP = {
    'lam': 'Moreau-envelope parameter lambda',
    'nu': 'inner-solve accuracy',
    'F_gap': 'F^(c)(w0) - f_star_P',
    'kappa_me': 'Lemma 5 kappa in (1, lam/L] (default lam/L)',
    'affine_additive': "H3.y declared: affine gradients, additive noise "
                       "(uses the paper's mu_c, E-P10)",
}

register_theorem(
    name='theorem3',
    function=theorem3,
    label=LABEL,
    paper="Toghani, Lee, Uribe: PersA-FL, personalized asynchronous federated learning ([P])",
    hypotheses=HYPOTHESES,
    statuses=(
        Status.CERTIFIED_CORRECTED,
        Status.PAPER_LITERAL_KNOWN_ERRATUM,
        Status.PROOF_LEVEL,
        Status.VACUOUS,
        Status.NOT_APPLICABLE,
    ),
    horizon='T',
    help={**HELP, **_HELP},
)
