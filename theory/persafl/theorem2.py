"""[P] Theorem 2 (PersA-FL-MAML, Option B): ``(1/T) sum E||grad F^(b)(w^t)||^2`` (THEORY_SPEC 4).

Statement ([P] Theorem 2; proof eqs. (B50)-(B53)): under [P] Assumptions 1-6 and Lemmas 1-4
(eqs. (21)-(25), :func:`fedsim.theory.persafl.lemmas.maml_constants`), with ``beta = 1``,
``eta = 1/(Q sqrt(L_b T))`` and ``T >= 64 L_b``,

    (1/T) sum_t E||grad F^(b)(w^t)||^2 <= 4 sqrt(L_b) F_gap/sqrt(T)
        + 8 sqrt(L_b)(sigma_b2 + gamma_b2)/sqrt(T) + 20 Q L_b (G_b^2 + sigma_b2)(tau^2+1)/T
        + 4 Q alpha^2 L^2 (1+alpha L)^2 sigma_g2/b.
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
)
from fedsim.theory.conventions import (
    HELP,
    MODES_12,
    OBJ,
    SIM,
    Mode12,
    count,
    ge,
    horizons,
    m0,
    mode_of,
    ratio,
    real,
    step,
    with_f_lower,
)
from fedsim.theory.params import Horizons
from fedsim.theory.persafl.lemmas import maml_constants
from fedsim.theory.registry import register_theorem
from fedsim.theory.result import BoundResult, Status

__all__ = ["theorem2", "LABEL", "HYPOTHESES"]

#: the paper label of this theorem
LABEL = "[P] PersA-FL Theorem 2"

#: the statement's hypotheses, name -> statement (THEORY_SPEC 4.b)
HYPOTHESES = {
    'Asm 1-4': 'as in Theorem 1',
    'Asm 5': 'Hessians rho-Lipschitz, Hessian variance sigma_h2 and diversity gamma_h2',
    'Asm 6': 'gradients bounded by G',
    'beta == 1': 'server step beta = 1',
    'eta': 'client step eta = 1/(Q sqrt(L_b T))',
    'T': 'T >= 64 L_b',
}


@with_f_lower
def theorem2(*, L: float, rho: float, G: float, alpha: float, sigma_g2: float, sigma_h2: float,
             gamma_g2: float, gamma_h2: float, b: int, Q: int, tau: int, F_gap: float, T: Horizons,
             beta: float = 1.0, eta: float | np.ndarray | None = None,
             mode: Mode12 = "paper") -> BoundResult:
    """[P] Theorem 2 (PersA-FL-MAML, Option B): bound on ``(1/T) sum E||grad F^(b)(w^t)||^2``.

    ``mode="paper"`` (THEORY_SPEC 4.d, CERTIFIED_PAPER), with the Lemma 1-4 constants of
    :func:`maml_constants`::

        B2 = 4 sqrt(L_b) F_gap/sqrt(T) + 8 sqrt(L_b)(sigma_b2 + gamma_b2)/sqrt(T)
           + 20 Q L_b (G_b^2 + sigma_b2)(tau^2+1)/T + 4 Q alpha^2 L^2 (1+alpha L)^2 sigma_g2/b

    under ``beta = 1``, ``eta = 1/(Q sqrt(L_b T))``, ``T >= 64 L_b``.
    ``mode="general_eta"`` (THEORY_SPEC 4.e, PROOF_LEVEL): (B50)-(B53) divided by
    ``c_T2 = (2Q-1)/Q - 4 eta L_b Q``, with ``(1 + 2 eta L_b)`` in (B51) (E-P19); valid if
    ``c_T2 > 0``.  ``F_gap = F^(b)(w^0) - f_star_P``.
    """
    mode = mode_of(mode, MODES_12)
    cs = maml_constants(L=L, rho=rho, G=G, alpha=alpha, sigma_g2=sigma_g2, sigma_h2=sigma_h2,
                        gamma_g2=gamma_g2, gamma_h2=gamma_h2, b=b)
    L, a = float(L), float(alpha)
    sg2, gg2 = float(sigma_g2), float(gamma_g2)
    rho, G, sh2, gh2, b = float(rho), float(G), float(sigma_h2), float(gamma_h2), int(b)
    Q = count("Q", Q, 1)
    tau = count("tau", tau, 0)
    F_gap = real("F_gap", F_gap, lo=0.0, allow_inf=True)
    beta = real("beta", beta, lo=0.0, strict=True)
    Ts, is_array = horizons(T)
    user_eta = step("eta", eta, Ts.shape)
    L_b, mu_b, sb2, gb2, G_b = (cs[k] for k in ("L_b", "mu_b", "sigma_b2", "gamma_b2", "G_b"))
    finite_Lb = math.isfinite(L_b)
    eta_pres = 1.0 / (Q * np.sqrt(L_b * Ts))
    eta_u = eta_pres if user_eta is None else user_eta
    T_min = 64.0 * L_b

    def c_T2(e: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            return (2 * Q - 1) / Q - 4 * e * L_b * Q if finite_Lb else -np.inf + 0 * e

    def formal(name: str, x: float) -> str:
        if math.isinf(x):
            return f"{name} = inf: holds only formally; bound is +inf (VACUOUS, THEORY_SPEC 1.5)"
        return f"{name} = {fmt(x)}"

    checks = common_checks(f_gap=F_gap, gap_name="F_gap", sigma_g2=sg2, gamma_g2=gg2,
                            option="Option B", local_rule="Option B (MAML, batches D, D', D'')")
    checks += [
        Check("alpha >= 0", True, f"alpha = {fmt(a)} (no alpha <= 1/L needed, E-P7)"),
        Check("Asm 5 f_i twice differentiable", None, OBJ),
        Check("Asm 5 Hessian Lipschitz <= rho", True, formal("rho", rho)),
        Check("Asm 5 Hessian variance (Frobenius) <= sigma_h2", True,
               formal("sigma_h2", sh2) + "; must be the Frobenius quantity (E-P13): " + OBJ),
        Check("Asm 5 Hessian diversity <= gamma_h2", True, formal("gamma_h2", gh2)),
        Check("Asm 6 ||grad f_i|| <= G", True, formal("G", G)),
        Check("batches D, D', D'' independent, each of size >= b", None, SIM),
    ]
    derived: dict[str, Any] = dict(cs)
    derived.update({"T_min": T_min, "eta_prescribed": eta_pres, "c_T2": c_T2(eta_u)})
    errata = ["E-P7", "E-P13", "E-P14"]
    if mode == "paper":
        checks = beta_eta_checks(beta=beta, eta=eta_u, eta_pres=eta_pres,
                                  user_eta=user_eta is not None, Lname="L_b") + [
            Check("T >= 64 L_b", ge(Ts, T_min) if finite_Lb else False,
                   f"T_min = {fmt(T_min)}"
                   + ("" if finite_Lb else " (L_b = inf: alpha rho G = inf)")
                   ),
        ] + checks
        bias = m0(4.0 * Q * a**2 * L**2 * (1 + a * L) ** 2, sg2) / b
        if finite_Lb:
            terms = {
                "gap": 4.0 * math.sqrt(L_b) * F_gap / np.sqrt(Ts),
                "noise_diversity": 8.0 * math.sqrt(L_b) * (sb2 + gb2) / np.sqrt(Ts),
                "staleness": 20.0 * Q * L_b * (G_b**2 + sb2) * (tau**2 + 1) / Ts,
                "bias": bias,
            }
        else:
            terms = {"gap": np.inf, "noise_diversity": np.inf, "staleness": np.inf, "bias": bias}
        return assemble(theorem="PersA-FL Theorem 2", mode=mode, T=Ts, is_array=is_array,
                         terms=terms, checks=checks, base=Status.CERTIFIED_PAPER,
                         derived=derived, step_sizes={"eta": eta_u, "beta": beta},
                         errata=errata)
    c = c_T2(eta_u)
    checks = [Check("beta == 1", beta == 1.0,
                     f"beta = {fmt(beta)} (the general-eta bound is for beta=1)"),
              Check("c_T2(eta) > 0", c > 0,
                     f"proof coefficient (B50); min c_T2 = {fmt(np.min(c))}"),
              ] + checks
    if finite_Lb:
        terms = {
            "gap": ratio(2.0 * F_gap / (eta_u * Q * Ts), c),
            "drift_staleness": ratio(8.0 * eta_u**2 * Q**3 * L_b**2 * (1 + 2 * eta_u * L_b)
                                      * (G_b**2 + sb2) * (tau**2 + 1) + 0.0 * Ts, c),
            "noise_diversity": ratio(4.0 * eta_u * L_b * Q * (sb2 + gb2) + 0.0 * Ts, c),
            "bias": ratio(2.0 * Q * mu_b**2 + 0.0 * Ts, c),
        }
    else:
        terms = {"gap": np.inf, "drift_staleness": np.inf, "noise_diversity": np.inf,
                 "bias": np.inf}
    return assemble(theorem="PersA-FL Theorem 2", mode=mode, T=Ts, is_array=is_array,
                     terms=terms, checks=checks, base=Status.PROOF_LEVEL, derived=derived,
                     step_sizes={"eta": eta_u, "beta": beta}, errata=errata + ["E-P19"])


_HELP = {
    'rho': 'Hessian Lipschitz constant (may be inf)',
    'G': 'gradient bound of Assumption 6 (may be inf)',
    'alpha': 'MAML inner step',
    'sigma_h2': 'Hessian variance, Frobenius norm (may be inf)',
    'gamma_h2': 'Hessian diversity (may be inf)',
    'F_gap': 'F^(b)(w0) - f_star_P',
}

register_theorem(
    name='theorem2',
    function=theorem2,
    label=LABEL,
    paper="Toghani, Lee, Uribe: PersA-FL, personalized asynchronous federated learning ([P])",
    hypotheses=HYPOTHESES,
    statuses=(
        Status.CERTIFIED_PAPER,
        Status.PROOF_LEVEL,
        Status.VACUOUS,
        Status.NOT_APPLICABLE,
    ),
    horizon='T',
    help={**HELP, **_HELP},
)
