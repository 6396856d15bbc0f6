"""Assembling a :class:`BoundResult`: hypotheses checked per horizon T.

:func:`assemble`, :class:`Check` and :func:`fmt` serve every paper's theorems ([P] 1-3,
[Y] AsyPFL 1-2, Per-FedAvg 4.5).
THEORY_SPEC 1.4 (status rules): a checkable hypothesis that fails gives ``NOT_APPLICABLE``
and ``terms["value_if_hypotheses_ignored"]``; the status is the worst over the horizons.
:func:`common_checks` are [P] Assumptions 1-4, shared by the three theorems.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from fedsim.theory.conventions import OBJ, REL_TOL, SIM, close
from fedsim.theory.result import BoundResult, Hypothesis, Status, worst_status

__all__ = ["Check", "assemble", "common_checks", "beta_eta_checks", "general_checks", "fmt"]


# --------------------------------------------------------------------------- assembly
@dataclass
class Check:
    """A hypothesis under construction: ``ok`` is a bool, a bool array over T, or None."""

    name: str
    ok: Any
    detail: str


def per_T_detail(ok: np.ndarray, T: np.ndarray, detail: str) -> str:
    ok = np.broadcast_to(ok, T.shape)
    if T.ndim == 0 or ok.all():
        return detail
    bad = T[~ok]
    span = f"T={fmt(bad.min())}..{fmt(bad.max())}"
    return f"{detail}; fails at {bad.size} of {T.size} horizons ({span})"


def fmt(x: Any) -> str:
    return f"{float(x):.10g}"


def assemble(*, theorem: str, mode: str, T: np.ndarray, is_array: bool,
              terms: dict[str, Any], checks: list[Check], base: Status,
              derived: dict[str, Any], step_sizes: dict[str, Any], errata: list[str],
              warnings: list[str] | None = None) -> BoundResult:
    """Sum the terms, derive the per-horizon and overall status (THEORY_SPEC 1.4)."""
    shape = T.shape
    terms = {k: np.broadcast_to(np.asarray(v, dtype=np.float64), shape).copy()
             for k, v in terms.items()}
    value = 0.0
    for v in terms.values():
        value = value + v
    value = np.asarray(value, dtype=np.float64)
    if np.isnan(value).any():  # pragma: no cover - guarded by the 0*inf rules above
        raise FloatingPointError(f"{theorem}: NaN in the bound; please report this input")
    fail = np.zeros(shape, dtype=bool)
    hyps = []
    for c in checks:
        if c.ok is None:
            hyps.append(Hypothesis(c.name, None, c.detail))
            continue
        ok = np.broadcast_to(np.asarray(c.ok, dtype=bool), shape)
        fail |= ~ok
        hyps.append(Hypothesis(c.name, bool(ok.all()), per_T_detail(ok, T, c.detail)))
    per = np.where(fail, Status.NOT_APPLICABLE.value,
                   np.where(np.isinf(value), Status.VACUOUS.value, base.value))
    status = worst_status([Status(s) for s in np.atleast_1d(per)])
    if fail.any():
        terms["value_if_hypotheses_ignored"] = value.copy()
    out = (lambda a: a) if is_array else (lambda a: float(a) if np.ndim(a) == 0 else a)
    derived = {k: (out(np.asarray(v, dtype=np.float64)) if isinstance(v, np.ndarray) else v)
               for k, v in derived.items()}
    if is_array:
        derived["status_per_T"] = [str(s) for s in per]
    steps = {k: (out(np.asarray(v, dtype=np.float64)) if isinstance(v, np.ndarray) else v)
             for k, v in step_sizes.items()}
    return BoundResult(
        value=out(value), status=status, terms={k: out(v) for k, v in terms.items()},
        hypotheses=hyps, derived_constants=derived, step_sizes=steps,
        errata_applied=list(errata), warnings=list(warnings or []), theorem=theorem, mode=mode,
    )


def common_checks(*, f_gap: float, gap_name: str, sigma_g2: float, gamma_g2: float,
                   option: str, local_rule: str) -> list[Check]:
    """Assumptions 1-4 of [P] (shared by Thms 1-3; THEORY_SPEC 3.b, 4.b, 5.b)."""
    return [
        Check("Asm 1 staleness <= tau, iid uniform arrivals", None,
               "t - Omega(t) <= tau; i_t iid Uniform[n] independent of delays and noise: "
               + SIM + " (THEORY_SPEC 2.1, window model 10.2(a))"),
        Check("Asm 2 each f_i differentiable and L-smooth", None, OBJ),
        Check("Asm 2 each f_i bounded below", bool(math.isfinite(f_gap)),
               f"{gap_name} = {fmt(f_gap)}" if math.isfinite(f_gap)
               else f"{gap_name} = inf: some f_i is unbounded below (f_star_P = -inf)"),
        Check("Asm 3 per-sample gradient variance <= sigma_g2", bool(math.isfinite(sigma_g2)),
               f"sigma_g2 = {fmt(sigma_g2)}" if math.isfinite(sigma_g2)
               else "sigma_g2 = inf: Asm 3 fails globally"),
        Check("Asm 3 fresh independent batches of size >= b", None, SIM),
        Check("Asm 4 gradient diversity <= gamma_g2", bool(math.isfinite(gamma_g2)),
               f"gamma_g2 = {fmt(gamma_g2)}" if math.isfinite(gamma_g2)
               else "gamma_g2 = inf: Asm 4 fails globally (e.g. quadratics with unequal A_i)"),
        Check(f"{option} local rule", None, f"the scenario must run {local_rule}; " + SIM),
    ]


def beta_eta_checks(*, beta: float, eta: np.ndarray, eta_pres: np.ndarray, user_eta: bool,
                     Lname: str) -> list[Check]:
    eta_ok = close(eta, eta_pres) if user_eta else True
    return [
        Check("beta == 1", beta == 1.0, f"beta = {fmt(beta)}"),
        Check(f"eta == 1/(Q sqrt({Lname} T))", eta_ok,
               "prescribed step used" if not user_eta else "user eta vs prescribed step"),
    ]


def general_checks(*, beta: float, eta: np.ndarray, eta_max: float, c: np.ndarray,
                    cname: str, cite: str) -> list[Check]:
    return [
        Check("beta == 1", beta == 1.0, f"beta = {fmt(beta)} (general-eta bound is for beta=1)"),
        Check(f"eta <= 1/(4 L (Q+1)) = {fmt(eta_max)}",
               np.asarray(eta) <= eta_max * (1.0 + REL_TOL),
               f"drift lemma step cap {cite}"),
        Check(f"{cname}(eta) > 0", np.asarray(c) > 0,
               f"proof coefficient {cite}; min {cname} = {fmt(np.min(c))}"),
    ]

