"""Tagged constants of Per-FedAvg Theorem 4.5 (Assumptions 1-5, [F]) on fedsim's problems.

docs/theory/per-fedavg.md section 2.1.  :func:`perfedavg_constants_table` returns a
:class:`ConstantsTable` with ``L, B, rho, sigma_G2, sigma_H2, gamma_G2, gamma_H2`` and, on
quadratics, ``f_gap_maml`` (``F(w0) - inf F`` for the MAML objective):

* QuadraticProblem (shared Hessian): L = ||A||_2, rho = 0, sigma_H2 = 0 (the per-sample
  Hessian is exactly A in both noise models), sigma_G2 = max_i tr(C_i) (per sample),
  gamma_G2 = (1/n) sum ||A (b_i - bbar)||^2, gamma_H2 = 0: all EXACT; B = inf (INFINITE).
  Unequal Hessians: gamma_G2 = inf (INFINITE), gamma_H2 EXACT.
* LogisticProblem, nu_reg = 0: UPPER bounds from the row norms (B <= max_i mean ||x||,
  rho <= max_i mean ||x||^3/(6 sqrt 3), sigma_G2 <= max_i mean ||x||^2, sigma_H2 <= max_i
  mean ||x||^4/16, gamma_G2 <= 4 B^2, gamma_H2 <= 4 L^2); nu_reg > 0: B = inf.
"""

from __future__ import annotations

import math

import numpy as np

from fedsim.problems.constants import Constant, ConstantsTable, Tag

__all__ = ["perfedavg_constants_table"]


def _quadratic(problem, alpha: float | None, w0) -> list[Constant]:
    A = np.asarray(problem.A_stack)
    n = A.shape[0]
    L = float(max(np.max(np.abs(np.linalg.eigvalsh(a))) for a in A))
    sig = float(max(np.trace(c) for c in problem.C_stack))
    out = [Constant("L", L, Tag.EXACT, "max_i ||A_i||_2"),
           Constant("B", math.inf, Tag.INFINITE, "quadratic gradients are unbounded; harmless "
                    "only with rho = sigma_H = gamma_H = 0 (0*inf = 0)"),
           Constant("rho", 0.0, Tag.EXACT, "constant Hessians"),
           Constant("sigma_G2", sig, Tag.EXACT, "per-sample gradient variance max_i tr(C_i)"),
           Constant("sigma_H2", 0.0, Tag.EXACT, "the per-sample Hessian is exactly A_i")]
    bs = np.asarray(problem.b_stack)
    if problem.shared_hessian:
        dev = (bs - bs.mean(axis=0)) @ A[0].T
        out += [Constant("gamma_G2", float(np.mean(np.sum(dev**2, axis=1))), Tag.EXACT,
                         "(1/n) sum ||A (b_i - bbar)||^2, independent of w"),
                Constant("gamma_H2", 0.0, Tag.EXACT, "identical Hessians")]
        if alpha is not None and w0 is not None:
            Ia = np.eye(A.shape[1]) - alpha * A[0]
            Mm = Ia @ A[0] @ Ia
            e = np.asarray(w0, dtype=np.float64) - bs.mean(axis=0)
            out.append(Constant("f_gap_maml", float(0.5 * e @ Mm @ e), Tag.EXACT,
                                "F(w0) - inf F = 1/2 (w0-bbar)^T M (w0-bbar), M = (I-aA)A(I-aA)"))
    else:
        Abar = A.mean(axis=0)
        gh = float(np.mean([np.linalg.norm(a - Abar, 2) ** 2 for a in A]))
        out += [Constant("gamma_G2", math.inf, Tag.INFINITE,
                         "unequal Hessians: ||grad f_i - grad f|| grows linearly in w"),
                Constant("gamma_H2", gh, Tag.EXACT, "(1/n) sum ||A_i - Abar||_2^2")]
    del n
    return out


def _logistic(problem) -> list[Constant]:
    norms = [np.linalg.norm(np.asarray(X, dtype=np.float64), axis=1) for X in problem.X]
    m1 = max(float(np.mean(r)) for r in norms)
    m2 = max(float(np.mean(r**2)) for r in norms)
    m3 = max(float(np.mean(r**3)) for r in norms)
    m4 = max(float(np.mean(r**4)) for r in norms)
    L = float(problem.constants.value("L"))
    reg = float(problem.nu_reg) > 0
    return [Constant("L", L, Tag(problem.constants["L"].tag), "problem table"),
            (Constant("B", math.inf, Tag.INFINITE, "nu_reg > 0: the ridge gradient is "
                      "unbounded") if reg else
             Constant("B", m1, Tag.UPPER, "||grad l|| <= ||x||; max_i mean ||x||")),
            Constant("rho", m3 / (6.0 * math.sqrt(3.0)), Tag.UPPER,
                     "|s'''| <= 1/(6 sqrt 3): max_i mean ||x||^3/(6 sqrt 3)"),
            Constant("sigma_G2", m2, Tag.UPPER, "E||grad l||^2 <= max_i mean ||x||^2 "
                     "(the ridge cancels)"),
            Constant("sigma_H2", m4 / 16.0, Tag.UPPER, "||grad^2 l|| <= ||x||^2/4"),
            Constant("gamma_G2", 4.0 * m1 * m1, Tag.UPPER, "(2 max_i mean||x||)^2, ridge cancels"),
            Constant("gamma_H2", 4.0 * L * L, Tag.UPPER, "(2L)^2")]


def perfedavg_constants_table(problem, *, alpha: float | None = None,
                              w0=None) -> ConstantsTable:
    """The Per-FedAvg constants of ``problem`` (module docstring)."""
    from fedsim.problems.logistic import LogisticProblem
    from fedsim.problems.quadratic import QuadraticProblem

    if isinstance(problem, QuadraticProblem):
        return ConstantsTable(_quadratic(problem, alpha, w0))
    if isinstance(problem, LogisticProblem):
        return ConstantsTable(_logistic(problem))
    raise TypeError(f"no Per-FedAvg constants for {type(problem).__name__}")
