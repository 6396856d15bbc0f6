"""[A] Theorem 8: ``E[f(xbar_{s,K}) - f*]``, convex B-Lipschitz f_i, constant step (THEORY_SPEC 7).

Statement ([A] Theorem 8; proof in [A] Appendix C, Lyapunov function eq. (34), Lemma eqs.
(35)-(41); THEORY_SPEC 7.b-7.c): for convex, B-Lipschitz f_i with a minimiser
x*, bounded gradient variance sigma2 and i.i.d. events, the ergodic average after K global
iterations with the constant step ``alpha* = sqrt(A R^2/(C_B M K))`` satisfies

    E[f(xbar_{s,K}) - f*] <= sqrt(A C_B R^2/(M K)),   A = 1/p_s + 2 qbar,

with ``C_B = sigma2 + M B^2`` (corrected, E-A6; the paper's ``sigma2 + (M+1) B^2/2`` is
violated for M >= 2 by exact counterexamples, THEORY_SPEC 7.d).
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from fedsim.theory.area._inputs import as_output, count_at_least, horizons, probabilities
from fedsim.theory.params import Iterations, Vector
from fedsim.theory.registry import register_theorem
from fedsim.theory.result import BoundResult, Hypothesis, Status

from fedsim.errors import check_number, check_positive, require

__all__ = ["theorem8", "LABEL", "HYPOTHESES", "MODES"]

#: the paper label of this theorem (THEORY_SPEC 7)
LABEL = "[A] AREA Theorem 8"
MODES = ("corrected", "paper", "general_alpha")
_MODES8 = MODES
_REL_TOL_ALPHA = 1e-12

#: the statement's hypotheses (THEORY_SPEC 7.a), name -> statement
HYPOTHESES = {
    "convex_lipschitz": "each f_i convex and B-Lipschitz",
    "bounded_variance": "E[g_i|x] = d_i(x), E||g_i - d_i||^2 <= sigma2",
    "iid_events": "i.i.d. events with p_i > 0, p_s > 0, sum = 1",
    "minimiser_exists": "a minimiser x* exists, R >= ||x_{s,0} - x*||",
    "prescribed_step": "alpha = sqrt(A R^2/(C_B M K))",
}


def theorem8(
    *,
    M: int,
    p: Vector,
    p_s: float,
    sigma2: float,
    B: float,
    R: float,
    K: Iterations,
    alpha: float | None = None,
    mode: Literal[*MODES] = "corrected",
) -> BoundResult:
    """[A] Theorem 8: ``E[f(xbar_{s,K}) - f*]`` for convex B-Lipschitz f_i, constant step (7.c).

    ``A = 1/p_s + 2*qbar``; ``B8(alpha) = A R^2/(2 alpha M K) + alpha C_B/2`` (the proof's
    inequality, any alpha > 0).  The theorem's step ``alpha* = sqrt(A R^2/(C_B M K))`` makes the
    two terms equal and gives ``sqrt(A C_B R^2/(M K))``.  ``value == sum(terms)`` (ignoring the
    informational ``value_if_hypotheses_ignored`` / ``B8_general_alpha`` entries).

    Modes:

    * ``"corrected"``: ``C_B = sigma2 + M B^2`` (E-A6), ``CERTIFIED_CORRECTED``.
    * ``"paper"``: ``C_B = sigma2 + (M+1) B^2/2``; ``PAPER_LITERAL_KNOWN_ERRATUM`` if M >= 2
      (the statement is violated, 7.d), ``CERTIFIED_PAPER`` if M == 1.
    * ``"general_alpha"``: ``B8(alpha)`` with the corrected C_B, ``PROOF_LEVEL`` (alpha None ->
      the corrected prescription).

    ``alpha=None`` -> the theorem's step for each K (it depends on K).  In ``"paper"`` /
    ``"corrected"`` mode a given alpha that differs from the prescription (relative tol 1e-12)
    makes the statement ``NOT_APPLICABLE``; the value is then ``B8(alpha)`` with the mode's C_B
    (also in ``terms["B8_general_alpha"]``); use ``mode="general_alpha"`` for the PROOF_LEVEL
    bound at that alpha.  ``B = inf`` -> ``NOT_APPLICABLE`` (f_i not Lipschitz) with
    ``terms["value_if_hypotheses_ignored"] = inf``.  K must be >= 1 (ergodic average).
    """
    require(mode in _MODES8, "mode", mode, f"must be one of {_MODES8}")
    M_ = count_at_least("M", M, 1)
    pa, ps = probabilities(p, p_s)
    s2 = check_number("sigma2", sigma2, low=0.0, allow_inf=True)
    B_ = check_number("B", B, low=0.0, allow_inf=True)
    R_ = check_number("R", R, low=0.0)
    Ks, scalar = horizons(K, 1)
    if alpha is not None:
        a_given = check_positive("alpha", alpha)
    qbar = float(np.mean(1.0 / pa))
    A = 1.0 / ps + 2.0 * qbar
    CB_corr = s2 + M_ * B_**2
    CB_paper = s2 + (M_ + 1) * B_**2 / 2.0
    CB = CB_paper if mode == "paper" else CB_corr
    Kf = Ks.astype(np.float64)
    MK = M_ * Kf
    theorem = "AREA Theorem 8"
    errata = [] if mode == "paper" else ["E-A6"]
    warnings: list[str] = []
    finite = math.isfinite(B_) and math.isfinite(s2)

    hyps = [
        Hypothesis(
            "convex_lipschitz",
            bool(math.isfinite(B_)),
            f"each f_i convex and B-Lipschitz (B={B_!r}); convexity is the problem's property",
        ),
        Hypothesis(
            "bounded_variance",
            False if not math.isfinite(s2) else None,
            "E[g_i|x] = d_i(x), E||g_i - d_i||^2 <= sigma2: a property of the simulator's noise"
            + (" (sigma2 = inf)" if not math.isfinite(s2) else ""),
        ),
        Hypothesis(
            "iid_events",
            None,
            "p_i > 0, p_s > 0, sum = 1 checked; i.i.d. events are a property of the simulator",
        ),
        Hypothesis("minimiser_exists", None, "x* must exist; R = ||x_{s,0} - x*|| (or a bound)"),
    ]

    if finite and CB > 0:
        a_star = R_ * np.sqrt(A / (CB * MK))  # R outside the root: no underflow of R^2
    else:
        a_star = np.full(Kf.shape, np.inf if finite else 0.0)
    step_sizes: dict[str, Any] = {
        "schedule": "alpha constant for all k",
        "alpha_prescribed": as_output(a_star, scalar),
    }
    prescribed = alpha is None
    if alpha is not None:
        step_sizes["alpha"] = a_given
        if finite:
            prescribed = bool(np.all(np.abs(a_given - a_star) <= _REL_TOL_ALPHA * a_star))

    if not finite:
        inf = np.full(Kf.shape, np.inf)
        terms: dict[str, Any] = {"value_if_hypotheses_ignored": as_output(inf, scalar)}
        warnings.append("B or sigma2 infinite: the Lipschitz/variance assumption fails")
        return BoundResult(
            value=as_output(inf, scalar),
            status=Status.NOT_APPLICABLE,
            terms=terms,
            hypotheses=hyps,
            derived_constants={"qbar": qbar, "A": A, "C_B": CB},
            step_sizes=step_sizes,
            errata_applied=errata,
            warnings=warnings,
            theorem=theorem,
            mode=mode,
        )
    if alpha is None:
        # at the prescribed step both terms equal sqrt(A C_B R^2/(M K))/2 (0 if R = 0 or C_B = 0)
        t1 = 0.5 * R_ * np.sqrt(A * CB / MK)
        t2 = t1.copy()
        if CB == 0.0:
            warnings.append("C_B = 0 (B = sigma2 = 0): f is constant, the bound is 0")
    else:
        t1 = A * R_**2 / (2.0 * a_given * MK)
        t2 = np.full(Kf.shape, a_given * CB / 2.0)
    value = t1 + t2
    terms = {"distance_term": as_output(t1, scalar), "noise_term": as_output(t2, scalar)}

    if mode == "general_alpha":
        status = Status.PROOF_LEVEL
        warnings.append(
            "general_alpha: B8(alpha) from the proof's inequality (corrected C_B), not the "
            "theorem statement"
        )
    elif not prescribed:
        status = Status.NOT_APPLICABLE
        terms["B8_general_alpha"] = as_output(value, scalar)
        sqrt_val = R_ * np.sqrt(A * CB / MK)
        terms["value_if_hypotheses_ignored"] = as_output(sqrt_val, scalar)
        hyps.append(
            Hypothesis(
                "prescribed_step",
                False,
                f"alpha={a_given!r} differs from the prescribed sqrt(A R^2/(C_B M K))",
            )
        )
        warnings.append(
            "alpha is not the theorem's step: the statement does not apply; value is B8(alpha) "
            "with this mode's C_B (use mode='general_alpha' for the PROOF_LEVEL bound"
            + (", which needs the corrected C_B" if mode == "paper" and M_ >= 2 else "")
            + ")"
        )
    elif mode == "paper":
        status = Status.PAPER_LITERAL_KNOWN_ERRATUM if M_ >= 2 else Status.CERTIFIED_PAPER
        if M_ >= 2:
            warnings.append(
                "paper constant (M+1)B^2/2 is an erratum for M >= 2 (E-A6); the paper's "
                "statement is violated by exact counterexamples (THEORY_SPEC 7.d)"
            )
    else:
        status = Status.CERTIFIED_CORRECTED
    if mode != "general_alpha" and prescribed:
        hyps.append(Hypothesis("prescribed_step", True, "alpha = sqrt(A R^2/(C_B M K))"))
    return BoundResult(
        value=as_output(value, scalar),
        status=status,
        terms=terms,
        hypotheses=hyps,
        derived_constants={
            "qbar": qbar,
            "A": A,
            "C_B": CB,
            "C_B_paper": CB_paper,
            "C_B_corrected": CB_corr,
        },
        step_sizes=step_sizes,
        errata_applied=errata,
        warnings=warnings,
        theorem=theorem,
        mode=mode,
    )


_HELP = {
    'M': 'local steps',
    'p': 'client event probabilities p_i (comma list)',
    'p_s': 'server event probability',
    'sigma2': 'gradient noise variance',
    'B': 'Lipschitz constant of each f_i',
    'R': '||x_{s,0} - x*||',
    'K': 'global iterations: a number or a comma list',
    'alpha': "constant step (default: the theorem's)",
    'mode': 'corrected | paper | general_alpha (default corrected)',
}

register_theorem(
    name='theorem8',
    function=theorem8,
    label=LABEL,
    paper="Iakovidou, Kim: AREA, asynchronous federated learning ([A])",
    hypotheses=HYPOTHESES,
    statuses=(
        Status.CERTIFIED_CORRECTED,
        Status.CERTIFIED_PAPER,
        Status.PAPER_LITERAL_KNOWN_ERRATUM,
        Status.PROOF_LEVEL,
        Status.NOT_APPLICABLE,
    ),
    horizon='K',
    help=_HELP,
)
