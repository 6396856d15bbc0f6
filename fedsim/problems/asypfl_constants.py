"""Tagged constants of AsyPFL Theorems 1-2 ([Y] Assumptions 1-4) on fedsim's problems.

docs/theory/asypfl.md sections 1.6 and 2.  :func:`asypfl_constants_table` returns ``L, mu,
Gamma, chi2`` (second moment, at synchronised points: the "sync" flavour of E-Y7),
``sigma2_k`` and ``Sigma2_k`` for every client k, and ``p_k`` (:func:`asypfl_weights`, the
weights the server uses too: ``1/n`` on quadratics, real-data-row shares on logistic
problems) and, when ``pi`` is given, ``pi_k`` (a fixed schedule, EXACT by definition).

* Quadratic: L = max_k lam_max(A_k), mu = min_k lam_min(A_k), sigma2_k = tr(C_k)/b,
  Gamma = F* - sum_k p_k F_k* (F_k* = c_k): EXACT; chi2 = max_k (||A (b_k - bbar)||^2 +
  tr(C_k)/b) EXACT with a shared Hessian, INFINITE otherwise.
* Logistic with nu_reg > 0: mu = nu_reg EXACT, L from the problem's table, sigma2_k <=
  mean_k ||x||^2 / b UPPER, chi2 <= 4 max ||x||^2 UPPER (the ridge cancels), Gamma NUMERIC
  (from the certified global and client minimisers).  nu_reg = 0: mu = 0.
* ``Sigma2_k = 1``: Sigma_k is undefined in [Y] (E-Y6); both readers read it as 1.
"""

from __future__ import annotations

import math

import numpy as np

from fedsim.problems.constants import Constant, ConstantsTable, Tag

__all__ = ["asypfl_constants_table", "asypfl_weights"]


def asypfl_weights(problem) -> np.ndarray:
    """AsyPFL's client weights ``p^k = m_k / m``, ``m = sum_k m_k`` ([Y] Section 3.1, the
    weights of the objective ``sum_k p^k F_k`` and of the aggregation eq. (4)).

    On a :class:`~fedsim.problems.logistic.LogisticProblem`, ``m_k`` is the client's number
    of REAL data rows, ``problem.m_data``: THEORY_SPEC 9.4's 2d synthetic anchor rows (which
    every client gets by default) are part of ``f_i`` but are not samples the client holds,
    and counting them would pull the weights toward uniform.  On the softmax (digits) and
    autodiff problems ``m_k`` is the client's number of training rows, ``problem.m`` (the
    test and validation rows are not training samples).  Problems without sample counts
    (quadratics) get ``1/n`` each.
    """
    from fedsim.problems.autodiff import AutogradProblem
    from fedsim.problems.logistic import LogisticProblem
    from fedsim.problems.softmax import SoftmaxProblem

    if isinstance(problem, LogisticProblem):
        m = np.asarray(problem.m_data, dtype=np.float64)
        return m / m.sum()
    if isinstance(problem, (SoftmaxProblem, AutogradProblem)):
        m = np.asarray(problem.m, dtype=np.float64)
        return m / m.sum()
    return np.full(int(problem.n), 1.0 / int(problem.n))


def asypfl_constants_table(problem, *, batch: int = 1, pi=None) -> ConstantsTable:
    """The AsyPFL constants of ``problem`` for batch size ``batch`` (module docstring)."""
    from fedsim.problems.logistic import LogisticProblem
    from fedsim.problems.quadratic import QuadraticProblem

    p = asypfl_weights(problem)
    n = p.size
    out: list[Constant] = []
    if isinstance(problem, QuadraticProblem):
        A = np.asarray(problem.A_stack)
        ev = [np.linalg.eigvalsh(a) for a in A]
        Lq = float(max(e.max() for e in ev))
        mq = float(min(e.min() for e in ev))
        mq = 0.0 if mq <= 1e-12 * Lq else mq  # an eigenvalue 0 reproduced to rounding
        out += [Constant("L", Lq, Tag.EXACT, "max_k lam_max(A_k)"),
                Constant("mu", mq, Tag.EXACT, "min_k lam_min(A_k)")]
        s2 = [float(np.trace(c)) / batch for c in problem.C_stack]
        Fk = np.asarray(problem.c, dtype=np.float64)
        gam = float(problem.f_star) - float(np.dot(p, Fk))
        out.append(Constant("Gamma", max(gam, 0.0), Tag.EXACT, "F* - sum_k p_k F_k*"))
        if problem.shared_hessian:
            bs = np.asarray(problem.b_stack)
            dev = (bs - p @ bs) @ A[0].T
            chi = float(max(np.sum(dev[k] ** 2) + s2[k] for k in range(n)))
            out.append(Constant("chi2", chi, Tag.EXACT, "max_k ||A(b_k - bbar)||^2 + tr(C_k)/b "
                                "(second moment at common points, E-Y7)"))
        else:
            out.append(Constant("chi2", math.inf, Tag.INFINITE, "unequal Hessians: "
                                "g_k - gbar grows linearly in w"))
        s2_tag, s2_why = Tag.EXACT, "tr(C_k)/b"
    elif isinstance(problem, LogisticProblem):
        nu = float(problem.nu_reg)
        out += [Constant("L", float(problem.constants.value("L")),
                         Tag(problem.constants["L"].tag), "problem table"),
                Constant("mu", nu, Tag.EXACT, "nu_reg (strong convexity of every F_k)")]
        norms = [np.linalg.norm(np.asarray(X, dtype=np.float64), axis=1) for X in problem.X]
        s2 = [float(np.mean(r**2)) / batch for r in norms]
        _, _, cert = problem.solve_global()
        fk = [float(problem.solve_client(k)[1]) for k in range(n)]
        gam = float(problem.f_star) - float(np.dot(p, fk))
        out.append(Constant("Gamma", max(gam, 0.0), Tag.NUMERIC,
                            f"F* - sum_k p_k F_k* from solved minimisers (certificate "
                            f"valid: {bool(cert.valid)})"))
        mx = max(float(r.max()) for r in norms)
        out.append(Constant("chi2", 4.0 * mx * mx, Tag.UPPER, "(2 max ||x||)^2, ridge cancels"))
        s2_tag, s2_why = Tag.UPPER, "mean_k ||x||^2 / b"
    else:
        raise TypeError(f"no AsyPFL constants for {type(problem).__name__}")
    for k in range(n):
        out.append(Constant(f"sigma2_{k}", s2[k], s2_tag, s2_why))
    for k in range(n):
        out.append(Constant(f"Sigma2_{k}", 1.0, Tag.EXACT, "undefined in [Y] (E-Y6): 1"))
    for k in range(n):
        out.append(Constant(f"p_{k}", float(p[k]), Tag.EXACT, "client weight m_k/m"))
    if pi is not None:
        for k, v in enumerate(pi):
            out.append(Constant(f"pi_{k}", float(v), Tag.EXACT, "fixed schedule (given)"))
    return ConstantsTable(out)
