"""[P] Theorem 1 (FedAsync, Option A): ``(1/T) sum_{t<T} E||grad f(w^t)||^2`` (THEORY_SPEC 3).

Statement ([P] Theorem 1; proof eqs. (A74)-(A78)): under [P] Assumptions 1-4 (staleness
<= tau, L-smooth f_i bounded below, per-sample variance sigma_g2, diversity gamma_g2), with
``beta = 1``, ``eta = 1/(Q sqrt(L T))`` and ``T >= 160 L (Q+7)(tau+1)^3``,

    (1/T) sum_t E||grad f(w^t)||^2 <= 4 sqrt(L) f_gap/sqrt(T) + 8 sqrt(L) s2/sqrt(T)
                                       + 80 L (1+Q)(tau^2+1) s2/T,   s2 = sigma_g2/b + gamma_g2.
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
    MODES_12,
    Mode12,
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
from fedsim.theory.registry import register_theorem
from fedsim.theory.result import BoundResult, Status

__all__ = ["theorem1", "LABEL", "HYPOTHESES"]

#: the paper label of this theorem
LABEL = "[P] PersA-FL Theorem 1"

#: the statement's hypotheses, name -> statement (THEORY_SPEC 3.b)
HYPOTHESES = {
    'Asm 1': 'staleness t - Omega(t) <= tau; i.i.d. uniform uploader',
    'Asm 2': 'each f_i differentiable, L-smooth and bounded below',
    'Asm 3': 'per-sample gradient variance <= sigma_g2, fresh batches of size b',
    'Asm 4': 'gradient diversity <= gamma_g2',
    'beta == 1': 'server step beta = 1',
    'eta': 'client step eta = 1/(Q sqrt(L T))',
    'T': 'T >= 160 L (Q+7)(tau+1)^3',
}


@with_f_lower
def theorem1(*, L: float, Q: int, tau: int, b: int, sigma_g2: float, gamma_g2: float,
             f_gap: float, T: Horizons, beta: float = 1.0, eta: float | np.ndarray | None = None,
             mode: Mode12 = "paper") -> BoundResult:
    """[P] Theorem 1 (FedAsync, Option A): bound on ``(1/T) sum_{t<T} E||grad f(w^t)||^2``.

    ``mode="paper"`` (THEORY_SPEC 3.c, status CERTIFIED_PAPER)::

        s2 = sigma_g2/b + gamma_g2
        B1 = 4 sqrt(L) f_gap/sqrt(T) + 8 sqrt(L) s2/sqrt(T) + 80 L (1+Q)(tau^2+1) s2/T

    under ``beta = 1``, ``eta = 1/(Q sqrt(L T))``, ``T >= 160 L (Q+7)(tau+1)^3``.
    ``mode="general_eta"`` (THEORY_SPEC 3.d, PROOF_LEVEL): (A74)-(A76) divided by the
    coefficient ``c_T1 = (2Q-1)/Q - 4 eta L Q - 16 eta^2 L^2 Q^2 (1+2Q) tau' (tau+1)^2
    (1+4 eta L)`` with ``tau' = max(tau, 1)`` (E-P6), (A76) counted once (E-P5), ``n beta Q``
    read as ``eta beta Q`` (E-P4); valid if ``eta <= 1/(4L(Q+1))`` (A78) and ``c_T1 > 0``.
    ``f_gap = f(w^0) - f_star_P``.
    """
    mode = mode_of(mode, MODES_12)
    L = real("L", L, lo=0.0, strict=True)
    Q = count("Q", Q, 1)
    tau = count("tau", tau, 0)
    b = count("b", b, 1)
    sg2 = real("sigma_g2", sigma_g2, lo=0.0, allow_inf=True)
    gg2 = real("gamma_g2", gamma_g2, lo=0.0, allow_inf=True)
    f_gap = real("f_gap", f_gap, lo=0.0, allow_inf=True)
    beta = real("beta", beta, lo=0.0, strict=True)
    Ts, is_array = horizons(T)
    user_eta = step("eta", eta, Ts.shape)
    eta_pres = 1.0 / (Q * np.sqrt(L * Ts))
    eta_u = eta_pres if user_eta is None else user_eta
    s2 = sg2 / b + gg2
    taup = max(tau, 1)
    T_min = 160.0 * L * (Q + 7) * (tau + 1) ** 3
    eta_max = 1.0 / (4.0 * L * (Q + 1))

    def c_T1(e: np.ndarray) -> np.ndarray:
        return ((2 * Q - 1) / Q - 4 * e * L * Q
                - 16 * e**2 * L**2 * Q**2 * (1 + 2 * Q) * taup * (tau + 1) ** 2 * (1 + 4 * e * L))

    checks = common_checks(f_gap=f_gap, gap_name="f_gap", sigma_g2=sg2, gamma_g2=gg2,
                            option="Option A", local_rule="Option A (unbiased SGD steps)")
    derived: dict[str, Any] = {"s2": s2, "T_min": T_min, "eta_prescribed": eta_pres,
                               "eta_max": eta_max, "c_T1": c_T1(eta_u)}
    warnings: list[str] = []
    if mode == "paper":
        checks = beta_eta_checks(beta=beta, eta=eta_u, eta_pres=eta_pres,
                                  user_eta=user_eta is not None, Lname="L") + [
            Check("T >= 160 L (Q+7)(tau+1)^3", ge(Ts, T_min), f"T_min = {fmt(T_min)}"),
        ] + checks
        terms = {
            "gap": 4.0 * math.sqrt(L) * f_gap / np.sqrt(Ts),
            "noise_diversity": 8.0 * math.sqrt(L) * s2 / np.sqrt(Ts),
            "staleness": 80.0 * L * (1 + Q) * (tau**2 + 1) * s2 / Ts,
        }
        c_pres = c_T1(eta_pres)
        if np.any(ge(Ts, T_min) & (c_pres < 0.5)):  # never seen (THEORY_SPEC 3.c)
            warnings.append("c_T1 < 1/2 at the prescribed eta although T >= T_min")
        return assemble(theorem="PersA-FL Theorem 1", mode=mode, T=Ts, is_array=is_array,
                         terms=terms, checks=checks, base=Status.CERTIFIED_PAPER,
                         derived=derived, step_sizes={"eta": eta_u, "beta": beta},
                         errata=[], warnings=warnings)
    c = c_T1(eta_u)
    checks = general_checks(beta=beta, eta=eta_u, eta_max=eta_max, c=c, cname="c_T1",
                             cite="(A74), (A77)-(A78)") + checks
    terms = {
        "gap": ratio(2.0 * f_gap / (eta_u * Q * Ts), c),
        "noise_diversity": ratio(4.0 * eta_u * L * Q * s2 + 0.0 * Ts, c),
        "drift_staleness": ratio(16.0 * eta_u**2 * L**2 * Q**2 * (1 + 2 * Q) * (tau**2 + 1)
                                  * (1 + 4 * eta_u * L) * s2 + 0.0 * Ts, c),
    }
    return assemble(theorem="PersA-FL Theorem 1", mode=mode, T=Ts, is_array=is_array,
                     terms=terms, checks=checks, base=Status.PROOF_LEVEL, derived=derived,
                     step_sizes={"eta": eta_u, "beta": beta},
                     errata=["E-P4", "E-P5", "E-P6"])


_HELP = {
    'f_gap': 'f(w0) - f_star_P',
}

register_theorem(
    name='theorem1',
    function=theorem1,
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
