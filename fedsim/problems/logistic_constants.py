"""The tagged constants of a logistic problem: the THEORY_SPEC 9.2 table and the 9.4 minima.

``L`` and ``mu`` are EXACT; ``rho``, ``G``, ``B``, ``sigma_g2``, ``sigma_h2``, ``gamma_g2``
and ``gamma_h2`` are UPPER bounds computed from the data alone (:func:`data_constants`);
``f_star_A``, ``f_star_P`` and ``zeta`` are NUMERIC values from Newton's method with the
certificate's tolerance stated in the reason, or EXACT/INFINITE flags when the data are
separable (no minimiser).
"""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np

from fedsim.problems.constants import Constant, ConstantsTable, Tag
from fedsim.problems.logistic_certificate import Certificate, Solution
from fedsim.problems.separability import SeparabilityReport
from fedsim.problems.weighted_logistic import S2_SUP

__all__ = ["LogisticFacts", "data_constants", "constants_table"]


class LogisticFacts(Protocol):
    """What the constants read of a logistic problem: the client count ``n``, the ridge term
    ``nu_reg`` and the THEORY_SPEC 9.4 minimisers (``LogisticProblem`` provides them)."""

    n: int
    nu_reg: float

    def separability_report(self) -> SeparabilityReport: ...

    def solve_global(self) -> Solution: ...

    def solve_client(self, i: int) -> Solution: ...


def data_constants(X: list[np.ndarray]) -> dict[str, np.ndarray]:
    """Per-client data parts of the 9.2 constants: ``l_data``, ``rho``, ``G``, ``sigma_g2``,
    ``sigma_h2`` (each an ``(n,)`` array, independent of ``nu_reg``)."""
    l_data, rho, G, sg, sh = [], [], [], [], []
    for Xi in X:
        m = Xi.shape[0]
        nrm = np.linalg.norm(Xi, axis=1)
        spec = float(np.linalg.norm(Xi, 2))
        l_data.append(spec * spec / (4.0 * m))
        Mw = (Xi.T * (nrm / m)) @ Xi
        r1 = float(np.linalg.eigvalsh(0.5 * (Mw + Mw.T))[-1])
        rho.append(S2_SUP * min(r1, float(np.mean(nrm ** 3)), float(np.max(nrm)) ** 3))
        G.append(min(float(np.mean(nrm)), spec / math.sqrt(m)))
        sg.append(float(np.mean(nrm ** 2)))
        sh.append(float(np.mean(nrm ** 4)) / 16.0)
    return {k: np.array(v) for k, v in
            dict(l_data=l_data, rho=rho, G=G, sigma_g2=sg, sigma_h2=sh).items()}


def constants_table(problem: LogisticFacts, dc: dict[str, np.ndarray]) -> ConstantsTable:
    """The 9.2 table of ``problem`` from its :func:`data_constants` ``dc``; solving for
    f_star_A, f_star_P and zeta (9.4) happens here."""
    nu = problem.nu_reg
    L = float(np.max(dc["l_data"])) + nu
    C = [
        Constant("L", L, Tag.EXACT,
                 "max_i lam_max(X_i^T X_i)/(4 m_i) + nu_reg, attained at w = 0 (s'(0) = 1/4)"),
        Constant("mu", nu, Tag.EXACT,
                 "inf_w lam_min(Hessian) = nu_reg, approached as ||w|| -> inf"
                 + (" (not strongly convex)" if nu == 0 else "")),
        Constant("rho", float(np.max(dc["rho"])), Tag.UPPER,
                 "max_i (1/(6 sqrt3)) min(lam_max(mean ||x|| x x^T), mean ||x||^3, "
                 "max ||x||^3)"),
    ]
    if nu == 0.0:
        G = float(np.max(dc["G"]))
        C += [Constant("G", G, Tag.UPPER,
                       "max_i min(mean_j ||x_j||, ||X_i||_2/sqrt(m_i))"),
              Constant("B", G, Tag.UPPER, "= G: f_i is G-Lipschitz ([A] Asm 6)")]
    else:
        C += [Constant("G", math.inf, Tag.INFINITE,
                       "nu_reg > 0: ||grad f_i|| grows like nu_reg ||w|| ([P] Asm 6 fails)"),
              Constant("B", math.inf, Tag.INFINITE,
                       "nu_reg > 0: f_i is not Lipschitz ([A] Asm 6 fails)")]
    C += [
        Constant("sigma_g2", float(np.max(dc["sigma_g2"])), Tag.UPPER,
                 "max_i mean_j ||x_j||^2 (one row drawn uniformly with replacement)"),
        Constant("sigma_h2", float(np.max(dc["sigma_h2"])), Tag.UPPER,
                 "max_i (1/16) mean_j ||x_j||^4 (Frobenius)"),
        Constant("gamma_g2", float(np.mean(dc["G"] ** 2)), Tag.UPPER,
                 "(1/n) sum_i G_i^2 (data part; a common nu_reg w cancels)"),
        Constant("gamma_h2", float(np.max(dc["l_data"])) ** 2, Tag.UPPER,
                 "(max_i lam_max(X_i^T X_i)/(4 m_i))^2: data Hessians PSD"),
    ]
    C += _minimum_constants(problem)
    return ConstantsTable(C)



def _minimum_constants(problem: LogisticFacts) -> list[Constant]:
    rep = problem.separability_report()
    x, fA, cA = problem.solve_global()
    if x is None and rep.whole.strictly_separable:
        cfA = Constant("f_star_A", 0.0, Tag.EXACT,
                       "FLAG: all rows strictly separable: inf f = 0, NOT attained")
    else:
        cfA = Constant("f_star_A", fA, Tag.NUMERIC, _value_reason("inf f", cA, x is None))
    sols = [problem.solve_client(i) for i in range(problem.n)]
    strict = [i for i, s in enumerate(rep.clients)
              if s.strictly_separable and sols[i].x is None]
    if strict:
        cfP = Constant("f_star_P", 0.0, Tag.EXACT,
                       f"FLAG: client(s) {strict} strictly separable: inf f_i = 0, "
                       "NOT attained")
    else:
        k = int(np.argmin([s.f for s in sols]))
        worst = max(sols, key=lambda s: (not s.certificate.valid, s.certificate.f_gap_bound))
        why = f"min_i inf f_i (client {k}); " + _value_reason(
            "inf f_i", worst.certificate, sols[k].x is None)
        weak = [i for i, s in enumerate(sols) if s.x is None]
        if weak:
            why += f"; FLAG: client(s) {weak} weakly separable (inf not attained)"
        cfP = Constant("f_star_P", sols[k].f, Tag.NUMERIC, why)
    if x is None or any(s.x is None for s in sols):
        czeta = Constant("zeta", math.inf, Tag.INFINITE,
                         "x* or some u_i* does not exist (separable data, nu_reg = 0)")
    else:
        z = float(max(np.linalg.norm(x - s.x) for s in sols))
        if cA.valid and all(s.certificate.valid for s in sols):
            tol = cA.dist_bound + max(s.certificate.dist_bound for s in sols)
            why = f"max_i ||x* - u_i*|| by Newton; certified to +-{tol:.1e}"
        else:
            why = "max_i ||x* - u_i*|| by Newton to 1e-13 rel.; some certificate NOT valid"
        if problem.nu_reg == 0.0 and not all(
                s.coercive for s in (*rep.clients, rep.whole)):
            why += "; FLAG: a minimiser is not unique (min-norm point used)"
        czeta = Constant("zeta", z, Tag.NUMERIC, why)
    return [cfA, cfP, czeta]



def _value_reason(what: str, cert: Certificate, not_attained: bool) -> str:
    if cert.valid:
        why = f"Newton; certified 0 <= computed - {what} <= {cert.f_gap_bound:.1e}"
    else:
        why = f"Newton to ||grad|| <= 1e-13 rel.; certificate NOT valid ({cert.note})"
    if not_attained:
        why += f"; FLAG: weakly separable, {what} NOT attained (min over non-separable rows)"
    return why
