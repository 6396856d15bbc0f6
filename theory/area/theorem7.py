"""[A] Theorem 7: ``E||x_{s,K} - x*||^2`` for AREA with ``alpha_k = c/(k+d)`` (THEORY_SPEC 6).

Statement ([A] Theorem 7, eq. (3); proof eq. (28)): for L-smooth, mu-strongly convex f_i
(H7.1), unbiased gradients of variance <= sigma^2 (H7.2), i.i.d. events with ``p_i, p_s > 0``
summing to 1 (H7.3), the step ``alpha_k = c/(k+d)`` (H7.4) and ``alpha_0 M gamma < 1`` (H7.5),

    E||x_{s,K} - x*||^2 = O( r_p (1+delta kappa) sigma^2/(p_min M K)
                           + sigma zeta / K^1.5 + zeta^2 / K^2 ).

Three evaluation levels (6.d, never mixed): ``certified`` (C, :mod:`fedsim.theory.area.certified`),
``leading_terms`` (B) and ``rate_shape`` (A) (:mod:`fedsim.theory.area.levels`).  Only (C) is an
upper bound.  Errata E-A1..E-A16 (THEORY_SPEC 8) as listed in ``errata_applied``.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from fedsim.theory.area._inputs import as_output, count_at_least, horizons, probabilities
from fedsim.theory.area.certified import certified, initial_r, lyapunov0
from fedsim.theory.area.constants import SCHEDULE, area_constants
from fedsim.theory.area.levels import leading_terms, rate_shape
from fedsim.theory.params import Iterations, Vector
from fedsim.theory.registry import register_theorem
from fedsim.theory.result import BoundResult, Hypothesis, Status

from fedsim.errors import ConfigError, check_number, check_positive, require

__all__ = ["theorem7", "hypotheses", "LABEL", "HYPOTHESES", "LEVELS"]

#: the paper label of this theorem (THEORY_SPEC 6)
LABEL = "[A] AREA Theorem 7"
LEVELS = ("certified", "leading_terms", "rate_shape")
_LEVELS = LEVELS

#: the statement's hypotheses (THEORY_SPEC 6.a), name -> statement
HYPOTHESES = {
    "H7.1": "each f_i L-smooth and mu-strongly convex, 0 < mu <= L",
    "H7.2": "unbiased stochastic gradients with variance <= sigma^2, fresh at each local step",
    "H7.3": "i.i.d. events with p_i > 0, p_s > 0, sum_i p_i + p_s = 1",
    "H7.4": "step alpha_k = c/(k+d) (eq. (3) schedule)",
    "H7.5": "alpha_0 M gamma < 1",
}


def hypotheses(cs: dict[str, Any] | None, mu: float, L: float) -> list[Hypothesis]:
    hyps = [
        Hypothesis(
            "H7.1",
            bool(0 < mu <= L),
            f"each f_i L-smooth, mu-strongly convex with 0 < mu <= L (mu={mu!r}, L={L!r}); "
            "the smoothness/convexity of the objective itself is the problem's responsibility",
        ),
        Hypothesis(
            "H7.2",
            None,
            "unbiased stochastic gradients with variance <= sigma^2, fresh at each local step: "
            "a property of the simulator's noise model",
        ),
        Hypothesis(
            "H7.3",
            None,
            "p_i > 0, p_s > 0, sum = 1 checked; i.i.d. events independent of the noise and the "
            "model (5)-(7) with x_{i,0}=y_{i,0}=x_{s,0} are properties of the simulator",
        ),
        Hypothesis(
            "H7.4",
            True if cs is not None else False,
            "bound evaluated for the prescribed schedule alpha_k = c/(k+d); the simulator must "
            "use exactly this schedule (alpha_k at event k+1)"
            if cs is not None
            else "schedule undefined: gamma = 0 when mu = 0",
        ),
    ]
    if cs is None:
        hyps.append(Hypothesis("H7.5", False, "alpha_0*M*gamma undefined when mu = 0"))
    else:
        v = cs["alpha_0"] * cs["M"] * cs["gamma"]
        hyps.append(
            Hypothesis(
                "H7.5",
                bool(v < 1.0),
                f"alpha_0*M*gamma = {v:.10g} must be < 1 (fails only for mu = L and M = 1; "
                "E-A12, Lemma 20's Young constant)",
            )
        )
    return hyps


def theorem7(
    *,
    L: float,
    mu: float,
    M: int,
    p: Vector,
    p_s: float,
    sigma: float,
    zeta: float,
    R0: float,
    K: Iterations,
    grad_norms_at_xstar: Vector | None = None,
    r_init: Vector | None = None,
    level: Literal[*LEVELS] = "certified",
    paper_literal: bool = False,
    init: str = "exact",
) -> BoundResult:
    """[A] Theorem 7: ``E||x_{s,K} - x*||^2`` for AREA with ``alpha_k = c/(k+d)`` (THEORY_SPEC 6).

    Levels (6.d; never mixed):

    * ``"certified"`` (C), status ``CERTIFIED_CORRECTED``: ``min(C1, C2)``, the vector recursion
      (C1) and the scalar Lyapunov recursion (C2), both iterated numerically from the one-step
      lemma inequalities with exact (or upper-bounded) initial values.  A valid bound for every K.
      ``paper_literal=True`` is refused here (a certified bound cannot use erroneous constants).
    * ``"leading_terms"`` (B), status ``ASYMPTOTIC_LEADING_TERMS``: ``p_s * Lam28``, the explicit
      part of (28) with corrected constants (``paper_literal=True``: psi = 1+qbar, paper c8 and
      paper ctil_sigma).  NOT an upper bound: ``remainder`` names the unevaluated O(.) terms.
    * ``"rate_shape"`` (A), status ``RATE_SHAPE_ONLY``: formula (3) with unit hidden constants
      (default: third term with the E-A2/E-A15 pattern; ``paper_literal=True``: literal (3)).

    Initial values: ``r_init`` (exact r_i), else ``grad_norms_at_xstar`` (bound
    ``r_i <= R0 + alpha_0 M ||grad f_i(x*)||``), else ``r_i <= R0 + alpha_0 M L zeta``; Lam0
    and lam0 (6.c) are computed from these r_i.  ``init="paper_bounds"`` (leading_terms only)
    instead substitutes the paper's bounds ``Lam0 <= (1/p_s+8 qbar) R0^2 + 8 alpha_0^2 L^2 M^2
    zeta^2 qbar``, ``lam0 <= (1/p_s+4 qbar) R0 + 4 alpha_0 L M zeta qbar`` and its
    ``sqrt(a+b) <= sqrt(a)+sqrt(b)`` splits (6.d (B)).

    ``K`` is an int or an array of ints >= 0; the recursions run once to ``max(K)`` (the schedule
    does not depend on K) in O(n max(K)) time (O(g^2 max(K)) on the dense path for g <= 50
    distinct p_i) and O(max(K) + n) memory.  ``mu == 0`` gives ``NOT_APPLICABLE`` (H7.1), as does a
    failing H7.5 or an infinite sigma/zeta.
    """
    require(level in _LEVELS, "level", level, f"must be one of {_LEVELS}")
    require(isinstance(paper_literal, bool), "paper_literal", paper_literal, "must be a bool")
    require(init in ("exact", "paper_bounds"), "init", init, "must be 'exact' or 'paper_bounds'")
    require(
        init == "exact" or level == "leading_terms",
        "init",
        init,
        "may be 'paper_bounds' only with level='leading_terms'",
    )
    if level == "certified" and paper_literal:
        raise ConfigError(
            "paper_literal must be False for level='certified' (the certified recursion uses "
            "the corrected constants only), got paper_literal=True"
        )
    L_ = check_positive("L", L)
    mu_ = check_number("mu", mu, low=0.0)
    require(mu_ <= L_, "mu", mu, f"must be <= L={L_!r}")
    M_ = count_at_least("M", M, 1)
    pa, ps = probabilities(p, p_s)
    sig = check_number("sigma", sigma, low=0.0, allow_inf=True)
    zet = check_number("zeta", zeta, low=0.0, allow_inf=True)
    R0_ = check_number("R0", R0, low=0.0)
    Ks, scalar = horizons(K, 0)
    theorem = "AREA Theorem 7"

    if mu_ == 0.0:
        inf = np.full(Ks.shape, np.inf)
        return BoundResult(
            value=as_output(inf, scalar),
            status=Status.NOT_APPLICABLE,
            terms={"value_if_hypotheses_ignored": as_output(inf, scalar)},
            hypotheses=hypotheses(None, mu_, L_),
            derived_constants={"gamma": 0.0, "p_min": min(float(np.min(pa)), ps)},
            warnings=["mu = 0: Theorem 7 needs strong convexity; gamma = 0 makes c = d = inf"],
            theorem=theorem,
            mode=level,
        )

    cs = area_constants(
        L=L_, mu=mu_, M=M_, p=pa, p_s=ps, sigma=sig, zeta=zet, corrected=not paper_literal
    )
    hyps = hypotheses(cs, mu_, L_)
    warnings: list[str] = []
    failing = [h.name for h in hyps if h.holds is False]
    infinite = not (math.isfinite(sig) and math.isfinite(zet))
    if infinite:
        hyps.append(Hypothesis("finite constants", False, f"sigma={sig!r}, zeta={zet!r}"))
        failing.append("finite constants")
    d = cs["d"]
    step_sizes = {
        "schedule": SCHEDULE,
        "alpha_0": cs["alpha_0"],
        "c": cs["c"],
        "d": d,
        "alpha_K": as_output(cs["c"] / (Ks + d), scalar),
    }
    if np.min(Ks) < 10.0 * d:
        warnings.append(
            f"K not >> d: min(K)={int(np.min(Ks))} < 10*d = {10 * d:.6g}; the O(1/K) regime "
            "needs K >> d (the transient (d-1)^4*Lam0/(K+d-1)^4 dominates)"
        )

    r, r_src = initial_r(R0_, cs["alpha_0"], M_, L_, zet, cs["n"], grad_norms_at_xstar, r_init)
    derived = {k: v for k, v in cs.items() if k not in ("L", "mu", "M", "sigma", "zeta")}
    derived["r_init_source"] = r_src
    derived["r_init"] = r
    if not infinite:
        Lam0, lam0 = lyapunov0(cs, pa, r, R0_)
        derived["Lam0"], derived["lam0"] = Lam0, lam0

    errata = ["E-A1"]
    if level == "certified":
        errata += ["E-A3", "E-A4", "E-A5", "E-A7"]
        if infinite:
            terms: dict[str, Any] = {
                "C1_vector": as_output(np.full(Ks.shape, np.inf), scalar),
                "C2_scalar": as_output(np.full(Ks.shape, np.inf), scalar),
            }
            value = np.full(Ks.shape, np.inf)
        else:
            us, lyap = certified(cs, pa, r, R0_, int(np.max(Ks)))
            c1v, c2v = us[Ks], lyap[Ks]
            value = np.minimum(c1v, c2v)
            terms = {"C1_vector": as_output(c1v, scalar), "C2_scalar": as_output(c2v, scalar)}
        status = Status.CERTIFIED_CORRECTED
        remainder = None
    elif level == "leading_terms":
        terms, value = leading_terms(cs, Ks, scalar, infinite, derived, R0_, init)
        status = Status.ASYMPTOTIC_LEADING_TERMS
        remainder = (
            "O( zeta*(sigma + sqrt(sigma*zeta))/K^2 + zeta^2/K^2.5 + sigma^2/Ktil^2 ) plus "
            "d-dependent lower-order terms from sum_{k<K}(k+d)^p; NOT evaluated"
        )
        warnings.append(
            "leading_terms is NOT an upper bound: the remainder is not evaluated and is not "
            "small unless K >> d"
        )
        if paper_literal:
            warnings.append(
                "paper_literal: psi = 1+qbar (E-A3), c8 = sqrt(psi*chat_sigma*c1/12) (E-A2) and "
                "the paper's ctil_sigma (E-A5) -- known errata NOT applied"
            )
        else:
            errata += ["E-A2", "E-A3", "E-A5", "E-A9", "E-A16"]
    else:
        terms, value = rate_shape(cs, Ks, scalar, paper_literal)
        status = Status.RATE_SHAPE_ONLY
        remainder = "hidden constants set to 1; transient (d-1)^4*Lam0/Ktil^4 omitted"
        warnings.append(
            "rate_shape is NOT a bound: formula (3) with unit hidden constants, dimensionally "
            "inconsistent (E-A1); use only for log-log slopes once K >> d"
        )
        if not paper_literal:
            errata += ["E-A15"]

    if failing:
        terms = dict(terms)
        terms["value_if_hypotheses_ignored"] = as_output(
            np.asarray(value, dtype=np.float64), scalar)
        warnings.append("NOT_APPLICABLE: failing hypotheses " + ", ".join(failing))
        status = Status.NOT_APPLICABLE
    return BoundResult(
        value=as_output(np.asarray(value, dtype=np.float64), scalar),
        status=status,
        terms=terms,
        remainder=remainder,
        hypotheses=hyps,
        derived_constants=derived,
        step_sizes=step_sizes,
        errata_applied=errata,
        warnings=warnings,
        theorem=theorem,
        mode=level
        + ("(paper_literal)" if paper_literal else "")
        + ("(init=paper_bounds)" if init != "exact" else ""),
    )


_HELP = {
    'L': 'smoothness constant',
    'mu': 'strong convexity constant',
    'M': 'local steps',
    'p': 'client event probabilities p_i (comma list)',
    'p_s': 'server event probability',
    'sigma': 'gradient noise sigma ([A] Asm 1)',
    'zeta': 'max_i ||x* - u_i*||',
    'R0': '||x_{s,0} - x*||',
    'K': 'global iterations: a number or a comma list',
    'grad_norms_at_xstar': '||grad f_i(x*)|| per client (comma list)',
    'r_init': 'exact ||x_{i,0} - x*_{i,0}|| per client (comma list)',
    'level': 'certified | leading_terms | rate_shape (default certified)',
    'paper_literal': "use the paper's (erroneous) constants",
    'init': 'exact | paper_bounds (leading_terms only)',
}

register_theorem(
    name='theorem7',
    function=theorem7,
    label=LABEL,
    paper="Iakovidou, Kim: AREA, asynchronous federated learning ([A])",
    hypotheses=HYPOTHESES,
    statuses=(
        Status.CERTIFIED_CORRECTED,
        Status.ASYMPTOTIC_LEADING_TERMS,
        Status.RATE_SHAPE_ONLY,
        Status.NOT_APPLICABLE,
    ),
    horizon='K',
    help=_HELP,
)
