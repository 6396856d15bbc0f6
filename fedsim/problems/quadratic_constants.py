"""The constants table of a quadratic problem (THEORY_SPEC 9.1): every entry EXACT or INFINITE.

``L``/``mu`` are the extreme eigenvalues of the ``A_i``; ``rho = sigma_h2 = 0`` because the
Hessians are constant; ``sigma_g2 = max_i tr(C_i)``; the diversity ``gamma_g2`` is finite
only when all ``A_i`` are equal; ``G`` and ``B`` are infinite unless every ``A_i = 0``; the
minimum values and ``zeta`` come from the closed-form minimisers.  Two HEURISTIC local
variants over a ball around x* (THEORY_SPEC 9.1 "Optional local diagnostic") sit beside it.
"""

from __future__ import annotations

import math

import numpy as np

from fedsim.errors import check_number, require
from fedsim.problems.constants import Constant, ConstantsTable, Tag
from fedsim.problems.quadratic_facts import QuadraticFacts
from fedsim.problems.quadratic_linalg import max_quadratic_on_ball

__all__ = ["constants_table", "local_gamma_g2", "local_G"]


def constants_table(problem: QuadraticFacts) -> ConstantsTable:
    """The THEORY_SPEC 9.1 table of ``problem``."""
    ev = problem.eigvals
    L = float(np.max(ev))
    mu = float(np.min(ev))
    tr_c = np.trace(problem.C_stack, axis1=1, axis2=2)
    dev = problem.A_stack - problem.Abar
    gamma_h2 = float(np.mean([np.max(np.abs(np.linalg.eigvalsh(x))) ** 2 for x in dev]))
    zero = bool(np.all(problem.A_stack == 0.0))
    if problem.shared_hessian:
        ab = np.einsum("nij,nj->ni", problem.A_stack, problem.b_stack)
        dv = ab - ab.mean(axis=0)
        gg = Constant("gamma_g2", float(np.mean(np.sum(dv * dv, axis=1))), Tag.EXACT,
                      "all A_i equal: (1/n) sum ||A (b_i - bbar)||^2, constant in w")
    else:
        gg = Constant("gamma_g2", math.inf, Tag.INFINITE,
                      "Asm 4 fails globally: A_i differ")
    if zero:
        G = Constant("G", 0.0, Tag.EXACT, "all A_i = 0: every gradient vanishes")
        B = Constant("B", 0.0, Tag.EXACT, "all A_i = 0: every f_i is constant")
    else:
        G = Constant("G", math.inf, Tag.INFINITE,
                     "Asm 6 fails globally: ||A_i (w - b_i)|| is unbounded")
        B = Constant("B", math.inf, Tag.INFINITE,
                     "[A] Asm 6 fails: a nonzero quadratic is not Lipschitz")
    cov = "S_i" if problem.noise == "additive" else "A_i S_i A_i"
    zeta = float(np.max(np.linalg.norm(problem.x_star - problem.b_stack, axis=1)))
    return ConstantsTable([
        Constant("L", L, Tag.EXACT, "max_i lam_max(A_i)"),
        Constant("mu", mu, Tag.EXACT, "min_i lam_min(A_i)"),
        Constant("rho", 0.0, Tag.EXACT, "Hessians are constant"),
        Constant("sigma_g2", float(np.max(tr_c)), Tag.EXACT,
                 f"max_i tr(C_i), C_i = {cov}, independent of w (per sample)"),
        Constant("sigma_h2", 0.0, Tag.EXACT, "per-sample Hessian is exactly A_i"),
        gg,
        Constant("gamma_h2", gamma_h2, Tag.EXACT, "(1/n) sum ||A_i - Abar||_2^2"),
        G,
        B,
        Constant("f_star_A", problem.f_star, Tag.EXACT, "min f at x* = pinv(Abar) m"),
        Constant("f_star_P", problem.f_star_P, Tag.EXACT, "min_i c_i (f_i* = c_i at b_i)"),
        Constant("zeta", zeta, Tag.EXACT, "max_i ||x* - b_i|| (min-norm x*, u_i* = b_i)"),
    ])


def local_gamma_g2(problem: QuadraticFacts, R: float) -> float:
    """HEURISTIC ``max_{||w - x*|| <= R} (1/n) sum_i ||grad f_i(w) - grad f(w)||^2``.

    ``grad f_i - grad f = (A_i - Abar) v + g_i`` with ``v = w - x*``, ``g_i = A_i(x* - b_i)``
    (THEORY_SPEC 9.1); the maximum of this convex quadratic over the ball is solved
    exactly by :func:`max_quadratic_on_ball`.  Certifies nothing about a run.
    """
    check_number("R", R, allow_inf=True)
    require(math.isfinite(R) and R >= 0, "R", R, "must be finite and >= 0")
    dev = problem.A_stack - problem.Abar
    g = problem.grad_at_xstar
    H = np.einsum("nij,njk->ik", dev, dev) / problem.n
    h = np.einsum("nij,nj->i", dev, g) / problem.n
    k = float(np.mean(np.sum(g * g, axis=1)))
    return max_quadratic_on_ball(H, h, k, R)


def local_G(problem: QuadraticFacts, R: float) -> float:
    """HEURISTIC ``max_i max_{||w - x*|| <= R} ||grad f_i(w)||`` (exact trust-region solve)."""
    check_number("R", R, allow_inf=True)
    require(math.isfinite(R) and R >= 0, "R", R, "must be finite and >= 0")
    best = 0.0
    for i in range(problem.n):
        a, g = problem.A_stack[i], problem.grad_at_xstar[i]
        best = max(best, max_quadratic_on_ball(a @ a, a @ g, float(g @ g), R))
    return math.sqrt(best)
