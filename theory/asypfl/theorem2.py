"""[Y] AsyPFL Theorem 2, eq. (6): decayed step ``eta_tau = 2/(mu (gamma + tau))``.

Same measured quantity as Theorem 1 (``E F(w^T) - F*`` at tick T).  Printed bound::

    (6)  E F(w^T) - F* <= 2L / (mu (gamma+T)^{2/3}) * (A/mu + 2L ||w0 - w*||)
         A = sum_k (p^k)^2 sigma_k^2 Sigma_k^2 + 6 L Gamma + 8 E sum_k p^k (pi_k^2 E - pi_k) chi^2
         gamma = max(8L/mu, max_k pi_k E)

Modes (docs/theory/asypfl.md):

* ``"paper_literal"`` -- (6) as printed: ``PAPER_LITERAL_KNOWN_ERRATUM`` (E-Y4: the norm is
  not squared, exact counterexample CE3; E-Y3).
* ``"corrected"`` -- Li et al.'s induction, max form (both readers):
  ``L/(2(gamma+T)) max(4A/mu^2, gamma ||w0-w*||^2)``: ``CERTIFIED_CORRECTED`` when every
  ``E_k = 1``, else ``PROOF_LEVEL`` (drift lemma reconstructed; no counterexample found,
  also for distinct pi_k).
* ``"rate_shape"`` -- the claimed order ``(gamma+T)^{-2/3}`` (the literal value):
  ``RATE_SHAPE_ONLY``; the corrected and exact order is ``1/T`` (E-Y5).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from fedsim.theory.assembly import assemble, fmt
from fedsim.theory.asypfl._common import HELP, HYPOTHESES, checks, core, inputs
from fedsim.theory.asypfl.theorem1 import ticks
from fedsim.theory.params import Horizons, Vector
from fedsim.theory.registry import register_theorem
from fedsim.theory.result import BoundResult, Status

from fedsim.errors import require

__all__ = ["theorem2", "gamma_t2", "LABEL"]

LABEL = "[Y] AsyPFL Theorem 2"
Mode = Literal["corrected", "paper_literal", "rate_shape"]


def gamma_t2(L: float, mu: float, E: int, pi) -> float:
    """``gamma = max(8L/mu, max_k pi_k E)`` of Theorem 2."""
    return max(8.0 * L / mu, float(max(pi)) * E)


def theorem2(*, L: float, mu: float, p: Vector, sigma2: Vector, Gamma: float, E: int,
             pi: Vector, chi2: float, D2: float, T: Horizons, Sigma2: Vector | None = None,
             gamma: float | None = None, mode: Mode = "corrected") -> BoundResult:
    """[Y] Theorem 2 (module docstring); ``gamma=None`` is the prescribed value."""
    require(mode in ("corrected", "paper_literal", "rate_shape"), "mode", mode,
            "must be 'corrected', 'paper_literal' or 'rate_shape'")
    L, mu, p, s2, S2, E, pi, Gamma, chi2, D2 = inputs(L, mu, p, sigma2, Gamma, E, pi, chi2,
                                                      D2, Sigma2)
    Ts, is_array = ticks(T)
    g_pres = gamma_t2(L, mu, E, pi) if mu > 0 else math.inf  # mu = 0: H2 fails
    g = g_pres if gamma is None else float(gamma)
    c = core(L, p, s2, S2, Gamma, E, pi, chi2, 8.0)
    A = c["sum"]
    all_one = c["drift_weight"] == 0.0
    step_ok = bool(mu > 0 and abs(g - g_pres) <= 1e-12 * g_pres)
    chk = checks(L=L, mu=mu, E=E, pi=pi, chi2=chi2, Gamma=Gamma, S2=S2, T=Ts,
                 step_ok=step_ok, step_detail=f"gamma = {fmt(g)}, prescribed {fmt(g_pres)}")
    chk = [h for h in chk if not h.name.startswith("H12")]
    warnings = []
    if mode in ("paper_literal", "rate_shape"):
        chk = [h for h in chk if not h.name.startswith("H9")]
        pref = 2.0 * L / (mu * (g + Ts) ** (2.0 / 3.0)) if mu > 0 else np.inf + 0 * Ts
        terms = {"noise": pref * A / mu if mu > 0 else pref,
                 "initial": pref * 2.0 * L * math.sqrt(D2)}
        base = (Status.PAPER_LITERAL_KNOWN_ERRATUM if mode == "paper_literal"
                else Status.RATE_SHAPE_ONLY)
        errata = []
        warnings.append("E-Y4: ||w0-w*|| is not squared (the bound fails for large "
                        "||w0-w*||); E-Y5: the exact and corrected order is 1/T, not T^{-2/3}")
    else:
        v = max(4.0 * A / mu**2, g * D2) if mu > 0 else math.inf
        terms = {"induction": L * v / (2.0 * (g + Ts)) if mu > 0 else np.inf + 0 * Ts}
        base = Status.CERTIFIED_CORRECTED if all_one else Status.PROOF_LEVEL
        errata = ["E-Y1", "E-Y3", "E-Y4", "E-Y5", "E-Y6", "E-Y7"]
        if not all_one:
            warnings.append("some E_k > 1: the drift lemma under the decayed step is a "
                            "reconstruction (no counterexample found)")
    return assemble(theorem="AsyPFL Theorem 2", mode=mode, T=Ts, is_array=is_array,
                    terms=terms, checks=chk, base=base,
                    derived={"A": A, "gamma": g, "gamma_prescribed": g_pres,
                             "core_noise": c["noise"], "core_heterogeneity": c["heterogeneity"],
                             "core_drift": c["drift"], "claimed_exponent": -2.0 / 3.0,
                             "corrected_exponent": -1.0,
                             "sync_period": int(np.lcm.reduce(pi)) * E},
                    step_sizes={"eta_0": 2.0 / (mu * g) if mu > 0 else 0.0, "gamma": g,
                                "eta_tau": "2/(mu (gamma + tau)), tau = tick"},
                    errata=errata, warnings=warnings)


register_theorem(
    name="asypfl_theorem2", function=theorem2, label=LABEL,
    paper="Ma, Lu, Li, Cui: Asynchronous personalized federated learning with irregular "
          "clients (ACML 2022) ([Y])",
    hypotheses=HYPOTHESES,
    statuses=(Status.CERTIFIED_CORRECTED, Status.PROOF_LEVEL,
              Status.PAPER_LITERAL_KNOWN_ERRATUM, Status.RATE_SHAPE_ONLY, Status.VACUOUS,
              Status.NOT_APPLICABLE),
    horizon="T", help={**HELP, "gamma": "Theorem 2's gamma (default: the prescription)"})
