"""Per-FedAvg Theorem 4.5 (Fallah, Mokhtari, Ozdaglar 2020), explicit constants of App. G.

Measured quantity (full version, statement of Thm 4.5)::

    LHS(K) = (1/(tau K)) sum_{k<K} sum_{t<tau} E||grad F(wbar_{k+1,t})||^2

with ``wbar_{k+1,t}`` the average of the *active* clients' local iterates (t = 0 is the
server model w_k) and ``F`` the MAML objective (3)-(5).  The statement hides an O(1);
the appendix proof, (108)+(111), gives (docs/theory/per-fedavg.md section 3)::

    B_45 = 4 (F(w_0) - F_inf)/(beta tau K) + 1120 (beta L_F)^2 tau (tau-1) (2 sigma_F^2 + gamma_F^2)
         + 8 beta L_F sigma_F^2 + 4 beta L_F gamma_F^2 q + 4 m^2,      q = (1-r)/(r(n-1))

with Lemma 4.2 ``L_F = 4L + alpha rho B``, Lemma 4.3 ``sigma_F^2`` and bias ``m``, Lemma 4.4
``gamma_F^2 = 3 B^2 alpha^2 gamma_H^2 + 192 gamma_G^2`` (FO / HF: Lemmas H.1 / H.2).

Modes (statuses, THEORY_SPEC 1.4):

* ``"corrected"`` -- B_45 with ``r = 1`` (E-F1: false for r < 1), Assumption 5 (E-F2), an
  independent Hessian batch D'' (E-F3) and the directional repair of (30b) (E-F4):
  ``CERTIFIED_CORRECTED``; ``r < 1`` -> ``NOT_APPLICABLE``.
* ``"paper_literal"`` -- the same explicit constant for any r, as the appendix proves it:
  ``PAPER_LITERAL_KNOWN_ERRATUM`` (E-F1: an exact counterexample at r = 1/2 violates it).
* ``"proof_level"`` -- (107) telescoped before step (108), divided by ``1/2 - beta L_F``:
  ``PROOF_LEVEL``, r = 1 only.
* ``"rate_shape"`` -- the printed O(1) form with O(1) = 1: ``RATE_SHAPE_ONLY`` for r = 1,
  ``PAPER_LITERAL_KNOWN_ERRATUM`` for r < 1 (even the shape misses a factor tau, E-F1).

B = inf (quadratics) enters only multiplied by rho, sigma_H^2 or gamma_H^2; ``0 * inf = 0``
when that partner is an exact zero (docs section 2.3), else the bound is ``VACUOUS``.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from fedsim.theory.assembly import Check, assemble, fmt
from fedsim.theory.conventions import count, m0, real
from fedsim.theory.params import Iterations
from fedsim.theory.registry import register_theorem
from fedsim.theory.result import BoundResult, Status

from fedsim.errors import require

__all__ = ["theorem4_5", "perfedavg_constants", "LABEL", "HYPOTHESES", "MODES"]

LABEL = "[F] Per-FedAvg Theorem 4.5"
MODES = ("corrected", "paper_literal", "proof_level", "rate_shape")
Mode = Literal["corrected", "paper_literal", "proof_level", "rate_shape"]
Variant = Literal["MAML", "FO", "HF"]
SIM = "simulator property: the engine/validation layer must check it"

#: the statement's hypotheses (docs/theory/per-fedavg.md section 2), name -> statement
HYPOTHESES = {
    "H1 Asm 1": "inf f_i > -inf (F_inf finite)",
    "H2 Asm 2": "f_i C^2, grad f_i L-Lipschitz, ||grad f_i|| <= B",
    "H3 Asm 3": "Hessians rho-Lipschitz",
    "H4 Asm 4": "per-sample gradient / Hessian variance <= sigma_G^2 / sigma_H^2 (11)-(12)",
    "H5 Asm 5": "gradient / Hessian dissimilarity <= gamma_G^2 / gamma_H^2 (13) (E-F2)",
    "H6 alpha": "0 <= alpha <= 1/L",
    "H7 tau": "integer tau >= 1, K >= 1",
    "H8 beta": "0 < beta <= 1/(10 tau L_F)",
    "H9 r": "full participation r = 1 (E-F1: false for r < 1)",
    "H10 batches": "Hessian on a batch D'' independent of D, D' (E-F3); fresh i.i.d. batches",
}


def perfedavg_constants(*, L: float, rho: float, B: float, alpha: float, sigma_G2: float,
                        sigma_H2: float, gamma_G2: float, gamma_H2: float, D: int, Dp: int,
                        Dpp: int, variant: str = "MAML",
                        hf_delta: float | None = None) -> dict[str, float]:
    """Lemmas 4.2-4.4 (H.1, H.2): ``L_F``, ``sigma_F2``, ``gamma_F2`` and the bias ``m``.

    ``0 * inf = 0`` only where B multiplies an exact zero (rho, sigma_H2, gamma_H2).
    """
    require(variant in ("MAML", "FO", "HF"), "variant", variant, "must be MAML, FO or HF")
    LF = 4.0 * L + m0(alpha * rho, B)
    s = sigma_G2 * (1.0 / Dp + (alpha * L) ** 2 / D)
    if variant == "MAML":
        sF2 = (3.0 * m0(B * B, alpha**2 * sigma_H2 / Dpp) + 12.0 * s
               + 3.0 * m0(alpha**2 * sigma_H2 / Dpp, s))
        m = 2.0 * alpha * L * math.sqrt(sigma_G2 / D)
    elif variant == "FO":
        sF2 = 2.0 * s + 2.0 * m0(alpha * L, B) ** 2
        m = alpha * L * math.sqrt(sigma_G2 / D) + m0(alpha * L, B)
    else:
        require(hf_delta is not None and hf_delta > 0, "hf_delta", hf_delta,
                "must be > 0 for the HF variant")
        dl = float(hf_delta)
        sF2 = (6.0 * sigma_G2 * (2 * (alpha * L) ** 2 / D + 2.0 / Dp
                                  + alpha**2 / (2 * dl**2 * Dpp))
               + 2.0 * m0((alpha * rho * dl) ** 2, B**4))
        m = alpha * (2 * L * math.sqrt(sigma_G2 / D) + L * math.sqrt(sigma_G2 / Dp)
                     + m0(rho * dl, B * B))
    gF2 = 3.0 * m0(B * B, alpha**2 * gamma_H2) + 192.0 * gamma_G2
    return {"L_F": LF, "sigma_F2": sF2, "gamma_F2": gF2, "m": m}


def theorem4_5(*, L: float, alpha: float, sigma_G2: float, gamma_G2: float, f_gap: float,
               tau: int, K: Iterations, n: int, r: float = 1.0, beta: float | None = None,
               rho: float = 0.0, B: float = math.inf, sigma_H2: float = 0.0,
               gamma_H2: float = 0.0, D: int = 1, Dp: int = 1, Dpp: int = 1,
               variant: Variant = "MAML", hf_delta: float | None = None,
               mode: Mode = "corrected") -> BoundResult:
    """[F] Per-FedAvg Theorem 4.5 (module docstring); ``beta=None`` is ``1/(10 tau L_F)``.

    ``f_gap = F(w_0) - F_inf`` (MAML objective), ``D, Dp, Dpp`` the batch sizes of the inner
    gradient, the outer gradient and the Hessian; ``r`` the participating fraction (rn an
    integer).  ``K`` may be an array (a curve over rounds).
    """
    require(mode in MODES, "mode", mode, f"must be one of {list(MODES)}")
    L = real("L", L, lo=0.0, strict=True)
    alpha = real("alpha", alpha, lo=0.0)
    sG2 = real("sigma_G2", sigma_G2, lo=0.0, allow_inf=True)
    gG2 = real("gamma_G2", gamma_G2, lo=0.0, allow_inf=True)
    sH2 = real("sigma_H2", sigma_H2, lo=0.0, allow_inf=True)
    gH2 = real("gamma_H2", gamma_H2, lo=0.0, allow_inf=True)
    rho = real("rho", rho, lo=0.0, allow_inf=True)
    B = real("B", B, lo=0.0, allow_inf=True)
    f_gap = real("f_gap", f_gap, lo=0.0, allow_inf=True)
    tau = count("tau", tau, 1)
    n = count("n", n, 1)
    D, Dp, Dpp = count("D", D, 1), count("Dp", Dp, 1), count("Dpp", Dpp, 1)
    r = real("r", r, lo=0.0, strict=True)
    require(r <= 1.0, "r", r, "must be <= 1")
    rn = r * n
    require(abs(rn - round(rn)) <= 1e-9 * n and round(rn) >= 1, "r", r,
            f"must make r*n an integer >= 1 (n = {n})")
    require(r == 1.0 or n >= 2, "n", n, "must be >= 2 when r < 1")
    Ks = np.array(K, dtype=np.float64)
    is_array = Ks.ndim > 0
    for k in Ks.ravel():
        require(k >= 1 and k == int(k), "K", float(k), "must be an integer >= 1")
    c = perfedavg_constants(L=L, rho=rho, B=B, alpha=alpha, sigma_G2=sG2, sigma_H2=sH2,
                            gamma_G2=gG2, gamma_H2=gH2, D=D, Dp=Dp, Dpp=Dpp, variant=variant,
                            hf_delta=hf_delta)
    LF, sF2, gF2, m = c["L_F"], c["sigma_F2"], c["gamma_F2"], c["m"]
    beta_max = 1.0 / (10.0 * tau * LF) if math.isfinite(LF) else 0.0
    b = beta_max if beta is None else real("beta", beta, lo=0.0, strict=True)
    q = 0.0 if r == 1.0 else (1.0 - r) / (r * (n - 1))
    bL = b * LF if math.isfinite(LF) else math.inf
    C = 2.0 * sF2 + gF2
    drift_tt = tau * (tau - 1)
    init = 4.0 * f_gap / (b * tau * Ks) if b > 0 else np.full(Ks.shape, math.inf)
    if mode in ("corrected", "paper_literal"):
        terms = {"init": init, "drift": 1120.0 * m0(bL**2 * drift_tt, C),
                 "noise": 8.0 * m0(bL, sF2), "sampling": 4.0 * m0(bL, q, gF2),
                 "bias": 4.0 * m * m}
    elif mode == "proof_level":
        den = 0.5 - bL if math.isfinite(bL) else 1e-300  # inf stays inf
        terms = {"init": init / 4.0 / den,
                 "drift": 140.0 * (1 + 2 * bL) * m0(bL**2 * drift_tt, C) / den,
                 "noise": m0(bL, 2.0 * sF2) / den, "sampling": m0(bL, q, gF2) / den,
                 "bias": m * m / den}
    else:  # the printed O(1) form, O(1) = 1
        terms = {"init": init, "noise_drift": m0(bL, sF2, 1.0 + m0(bL, drift_tt)),
                 "heterogeneity": m0(bL, gF2, q + m0(bL, drift_tt)),
                 "bias": alpha**2 * L**2 * sG2 / D if sG2 > 0 else 0.0}
    checks = [
        Check("H1 Asm 1 F_inf finite", bool(math.isfinite(f_gap)), f"f_gap = {fmt(f_gap)}"),
        Check("H2 Asm 2 L-smooth", True, f"L = {fmt(L)}"),
        Check("H2 Asm 2 bounded gradient B", None if not math.isfinite(B) else True,
              "B = inf: formally fails; harmless only because rho = sigma_H2 = gamma_H2 = 0 "
              "(0*inf = 0, docs 2.3)" if not math.isfinite(B) else f"B = {fmt(B)}"),
        Check("H3 Asm 3 rho-Lipschitz Hessian", bool(math.isfinite(rho)), f"rho = {fmt(rho)}"),
        Check("H4 Asm 4 variances", bool(math.isfinite(sG2) and math.isfinite(sH2)),
              f"sigma_G2 = {fmt(sG2)}, sigma_H2 = {fmt(sH2)}"),
        Check("H5 Asm 5 dissimilarity (E-F2)", bool(math.isfinite(gG2) and math.isfinite(gH2)),
              f"gamma_G2 = {fmt(gG2)}, gamma_H2 = {fmt(gH2)}"
              + ("" if math.isfinite(gG2) else " (e.g. quadratics with unequal Hessians)")),
        Check("H6 0 <= alpha <= 1/L", alpha <= (1.0 / L) * (1 + 1e-12),
              f"alpha L = {fmt(alpha * L)}"),
        Check("H7 tau >= 1", True, f"tau = {tau}"),
        Check("H8 beta <= 1/(10 tau L_F)", bool(b <= beta_max * (1 + 1e-12)),
              f"beta = {fmt(b)}, beta_max = {fmt(beta_max)}"),
        Check("H10 independent Hessian batch D'', fresh batches", None,
              SIM + " (the Algorithm 1 box reuses D': E-F3)"),
    ]
    if mode in ("corrected", "proof_level"):
        checks.insert(9, Check("H9 r == 1 (E-F1)", r == 1.0,
                               f"r = {fmt(r)}" + ("" if r == 1.0 else
                                                  ": Theorem 4.5 is false for r < 1 (E-F1)")))
    base = {"corrected": Status.CERTIFIED_CORRECTED, "proof_level": Status.PROOF_LEVEL,
            "paper_literal": Status.PAPER_LITERAL_KNOWN_ERRATUM,
            "rate_shape": (Status.RATE_SHAPE_ONLY if r == 1.0
                           else Status.PAPER_LITERAL_KNOWN_ERRATUM)}[mode]
    if any(not math.isfinite(x) for x in (LF, sF2, gF2, m)):
        base = Status.VACUOUS if base in (Status.CERTIFIED_CORRECTED,
                                          Status.PROOF_LEVEL) else base
    errata = {"corrected": ["E-F1", "E-F2", "E-F3", "E-F4"],
              "proof_level": ["E-F1", "E-F2", "E-F3", "E-F4"],
              "paper_literal": [], "rate_shape": []}[mode]
    warnings = []
    if mode == "paper_literal" or (mode == "rate_shape" and r < 1):
        warnings.append("E-F1: for r < 1 Theorem 4.5 is false for any O(1) constant (exact "
                        "counterexample, docs/theory/per-fedavg.md 5.1)")
    if mode == "rate_shape":
        warnings.append("printed O(1) form with O(1) = 1: a shape, not a bound (C = 2240 "
                        "makes it one for r = 1)")
    res = assemble(theorem="Per-FedAvg Theorem 4.5", mode=mode, T=Ks, is_array=is_array,
                   terms=terms, checks=checks, base=base,
                   derived={**c, "q": q, "beta_max": beta_max, "beta_L_F": bL},
                   step_sizes={"beta": b, "beta_max": beta_max, "alpha": alpha},
                   errata=errata, warnings=warnings)
    return res


_HELP = {
    "L": "smoothness L of each f_i (Asm 2)",
    "alpha": "MAML inner step, 0 <= alpha <= 1/L",
    "sigma_G2": "per-sample gradient variance (11)",
    "gamma_G2": "gradient dissimilarity (13), may be inf",
    "f_gap": "F(w_0) - inf F (MAML objective)",
    "tau": "local steps per round",
    "K": "rounds: an integer or a comma list",
    "n": "number of clients",
    "r": "participating fraction (r n integer); the theorem is false for r < 1 (E-F1)",
    "beta": "local outer step (default 1/(10 tau L_F))",
    "rho": "Hessian Lipschitz constant (Asm 3)",
    "B": "gradient bound (Asm 2); inf allowed when rho = sigma_H2 = gamma_H2 = 0",
    "sigma_H2": "per-sample Hessian variance (12)",
    "gamma_H2": "Hessian dissimilarity (13)",
    "D": "inner-gradient batch size", "Dp": "outer-gradient batch size D'",
    "Dpp": "Hessian batch size D''",
    "variant": "MAML (Hessian), FO (first order) or HF (Hessian-free, App. H)",
    "hf_delta": "HF finite-difference delta",
    "mode": "corrected | paper_literal | proof_level | rate_shape",
}

register_theorem(
    name="perfedavg_theorem4_5", function=theorem4_5, label=LABEL,
    paper="Fallah, Mokhtari, Ozdaglar: Personalized federated learning with theoretical "
          "guarantees: a model-agnostic meta-learning approach (NeurIPS 2020) ([F])",
    hypotheses=HYPOTHESES,
    statuses=(Status.CERTIFIED_CORRECTED, Status.PROOF_LEVEL,
              Status.PAPER_LITERAL_KNOWN_ERRATUM, Status.RATE_SHAPE_ONLY, Status.VACUOUS,
              Status.NOT_APPLICABLE),
    horizon="K", help=_HELP)
