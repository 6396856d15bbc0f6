"""[Y] AsyPFL Theorem 1, eq. (5): fixed local step ``eta <= 1/(4L)``.

Measured quantity: ``E F(w^T) - F*`` with ``F = sum_k p^k F_k`` and ``w^T`` the global model
of eq. (4) at tick T (one local step of every client per tick).  Printed bound::

    (5)  E F(w^T) - F* <= L (1 - mu eta)^T / 2 * (||w0 - w*||^2 - 2B) + B
         B = L eta/(2 mu) * (sum_k (p^k)^2 sigma_k^2 Sigma_k^2 + 6 L Gamma
                             + 2 E sum_k p^k (pi_k^2 E - pi_k) chi^2)

Modes (docs/theory/asypfl.md):

* ``"paper_literal"`` -- (5) as printed: ``PAPER_LITERAL_KNOWN_ERRATUM``.  The bracket mixes
  units (E-Y2); it is negative for ``L (1-mu eta)^T > 1`` near ``w* = w0`` (exact
  counterexample CE1), and (5) fails off the synchronisation ticks (E-Y3, CE2).
* ``"corrected"`` -- ``L/2 (1-mu eta)^T D2 + B (1 - (1-mu eta)^T)`` (bracket ``- 2B/L``), at
  common synchronisation ticks.  ``CERTIFIED_CORRECTED`` when every ``E_k = pi_k E = 1``
  (plain SGD on F, both readers); ``PROOF_LEVEL`` for equal ``pi_k`` with ``E > 1`` (the drift
  lemma is a reconstruction, no counterexample); ``NOT_APPLICABLE`` for distinct ``pi_k``
  with some ``E_k > 1`` (reader 2's exact counterexample, periods (5, 8)).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from fedsim.theory.assembly import assemble, fmt
from fedsim.theory.asypfl._common import HELP, HYPOTHESES, checks, core, inputs
from fedsim.theory.conventions import real
from fedsim.theory.params import Horizons, Vector
from fedsim.theory.registry import register_theorem
from fedsim.theory.result import BoundResult, Status

from fedsim.errors import require

__all__ = ["theorem1", "ticks", "LABEL"]

LABEL = "[Y] AsyPFL Theorem 1"
Mode = Literal["corrected", "paper_literal"]


def ticks(T) -> tuple[np.ndarray, bool]:
    """Horizons as a float64 array of integers >= 0 (0-d for a scalar)."""
    arr = np.array(T, dtype=np.float64)
    for x in arr.ravel():
        require(np.isfinite(x) and x >= 0 and x == int(x), "T", float(x),
                "must be an integer >= 0")
    require(arr.size > 0, "T", T, "must not be empty")
    return arr, arr.ndim > 0


def theorem1(*, L: float, mu: float, eta: float, p: Vector, sigma2: Vector, Gamma: float,
             E: int, pi: Vector, chi2: float, D2: float, T: Horizons,
             Sigma2: Vector | None = None, mode: Mode = "corrected") -> BoundResult:
    """[Y] Theorem 1 (module docstring); ``T`` in ticks (array allowed)."""
    require(mode in ("corrected", "paper_literal"), "mode", mode,
            "must be 'corrected' or 'paper_literal'")
    L, mu, p, s2, S2, E, pi, Gamma, chi2, D2 = inputs(L, mu, p, sigma2, Gamma, E, pi, chi2,
                                                      D2, Sigma2)
    eta = real("eta", eta, lo=0.0, strict=True)
    Ts, is_array = ticks(T)
    c = core(L, p, s2, S2, Gamma, E, pi, chi2, 2.0)
    Bc = L * eta / (2.0 * mu) * c["sum"] if mu > 0 else np.inf
    q = 1.0 - mu * eta
    r = q**Ts
    all_one = c["drift_weight"] == 0.0
    step_ok = eta <= 1.0 / (4.0 * L) * (1 + 1e-12)
    chk = checks(L=L, mu=mu, E=E, pi=pi, chi2=chi2, Gamma=Gamma, S2=S2, T=Ts,
                 step_ok=step_ok, step_detail=f"eta = {fmt(eta)}, 1/(4L) = {fmt(1 / (4 * L))}")
    warnings = []
    if mode == "paper_literal":
        chk = [h for h in chk if not h.name.startswith(("H9", "H12"))]
        if mu > 0:
            terms = {"contraction": L * r / 2.0 * D2, "bracket_B": -L * r * Bc, "B": Bc + 0 * r}
        else:
            terms = {"contraction": L * r / 2.0 * D2, "B": np.inf + 0 * r}
        base, errata = Status.PAPER_LITERAL_KNOWN_ERRATUM, []
        warnings.append("E-Y2: the bracket (||w0-w*||^2 - 2B) mixes units; the corrected "
                        "bracket is - 2B/L; E-Y3: valid only at common sync ticks")
        if L > 1:
            warnings.append("L > 1: the literal (5) is below the corrected bound by "
                            "B (L-1) (1-mu eta)^T and can be negative")
    else:
        ball = Bc * (1.0 - r) if mu > 0 else np.inf + 0 * r  # mu = 0: H2 fails, no bound
        terms = {"contraction": L * r / 2.0 * D2, "noise_ball": ball}
        base = Status.CERTIFIED_CORRECTED if all_one else Status.PROOF_LEVEL
        errata = ["E-Y1", "E-Y2", "E-Y3", "E-Y6", "E-Y7"]
        if not all_one:
            warnings.append("some E_k > 1: the asynchronous drift lemma (R3) is a "
                            "reconstruction (the paper's proof is not available), no "
                            "counterexample for equal pi_k")
    res = assemble(theorem="AsyPFL Theorem 1", mode=mode, T=np.maximum(Ts, 0), is_array=is_array,
                   terms=terms, checks=chk, base=base,
                   derived={"B": Bc, "C1": c["sum"], "core_noise": c["noise"],
                            "core_heterogeneity": c["heterogeneity"],
                            "core_drift": c["drift"], "q": q, "r": r,
                            "sync_period": int(np.lcm.reduce(pi)) * E},
                   step_sizes={"eta": eta, "eta_max": 1.0 / (4.0 * L)},
                   errata=errata, warnings=warnings)
    if mode == "paper_literal":
        v = np.asarray(res.value)
        if np.any(v < 0):
            res.warnings.append("the literal bound is negative at some T: certainly violated")
    return res


register_theorem(
    name="asypfl_theorem1", function=theorem1, label=LABEL,
    paper="Ma, Lu, Li, Cui: Asynchronous personalized federated learning with irregular "
          "clients (ACML 2022) ([Y])",
    hypotheses=HYPOTHESES,
    statuses=(Status.CERTIFIED_CORRECTED, Status.PROOF_LEVEL,
              Status.PAPER_LITERAL_KNOWN_ERRATUM, Status.VACUOUS, Status.NOT_APPLICABLE),
    horizon="T", help={**HELP, "eta": "fixed local step, <= 1/(4L)"})
