"""Shared pieces of [Y] AsyPFL Theorems 1-2: the constants B / A and the hypothesis checks.

docs/theory/asypfl.md sections 1-2.  ``core(c_drift)`` is the bracket of B (Thm 1,
``c_drift = 2``) and A (Thm 2, ``c_drift = 8``)::

    sum_k (p^k)^2 sigma_k^2 Sigma_k^2 + 6 L Gamma + c_drift E sum_k p^k (pi_k^2 E - pi_k) chi^2

``p^{2k}`` is read as ``(p^k)^2``; ``Sigma_k`` is undefined in [Y] (E-Y6): default 1;
``chi2`` is the second-moment discrepancy (E-Y7).  ``0 * inf = 0`` when every
``E_k = pi_k E = 1`` (the drift term is an exact zero of the proof).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from fedsim.theory.assembly import Check, fmt
from fedsim.theory.conventions import count, real

from fedsim.errors import require

__all__ = ["HELP", "HYPOTHESES", "inputs", "core", "checks", "SIM"]

SIM = "simulator property: the engine/validation layer must check it"

HYPOTHESES = {
    "H1a Asm 1 L-smooth": "each F_k is L-smooth (L = L_s)",
    "H1b Asm 1 L_c-Lipschitz": "each F_k L_c-Lipschitz: contradicts Asm 2 on R^d (E-Y1), waived",
    "H2 Asm 2 mu-strongly convex": "each F_k mu-strongly convex, mu > 0",
    "H3 unbiased independent gradients": "hidden: unbiased, independent across clients/ticks",
    "H5 Asm 3 variance": "E||g_k - grad F_k||^2 <= sigma_k^2 (the gradient actually used)",
    "H6 fixed tick schedule": "pi_k, E fixed; one local step per client per tick (eqs. (3)-(4))",
    "H7 Asm 4 discrepancy chi2": "second moment E||g_k - gbar||^2 <= chi^2 (E-Y7)",
    "H8 step size": "Thm 1: eta <= 1/(4L); Thm 2: gamma = max(8L/mu, max_k pi_k E)",
    "H9 sync tick": "T a common synchronisation tick, T = 0 mod lcm(pi) E (E-Y3)",
    "H10 full participation": "every client on its schedule (no random subset S^tau)",
    "H11 Sigma_k": "Sigma_k undefined in [Y] (E-Y6); 1 by convention",
    "H12 synchronous schedule": "equal pi_k when E_k > 1 (reader 2's counterexample (5,8))",
}

HELP = {
    "L": "smoothness L (= L_s) of every F_k",
    "mu": "strong convexity of every F_k",
    "p": "client weights p^k = m_k/m (comma list, sum 1)",
    "sigma2": "per-client variance sigma_k^2 of the stochastic gradient used (comma list)",
    "Gamma": "|F* - sum_k p^k F_k*|",
    "E": "base local epochs (E_k = pi_k E)",
    "pi": "staleness indicators pi_k (comma list of integers >= 1)",
    "chi2": "second-moment gradient discrepancy chi^2 (may be inf)",
    "D2": "||w0 - w*||^2",
    "T": "ticks (local steps of every client): a number or a comma list",
    "Sigma2": "Sigma_k^2 (undefined in the paper, E-Y6; default 1)",
    "mode": "corrected | paper_literal (| rate_shape for Theorem 2)",
}


def inputs(L, mu, p, sigma2, Gamma, E, pi, chi2, D2, Sigma2):
    """Checked inputs as floats / float arrays (raises ConfigError on bad ones)."""
    L = real("L", L, lo=0.0, strict=True)
    mu = real("mu", mu, lo=0.0)
    p = np.asarray(p, dtype=np.float64).ravel()
    require(p.size >= 1 and bool(np.all(p >= 0)) and abs(p.sum() - 1.0) <= 1e-9, "p",
            p.tolist(), "must be non-negative weights summing to 1")
    M = p.size
    s2 = np.broadcast_to(np.asarray(sigma2, dtype=np.float64).ravel(), (M,)).copy()
    S2 = np.broadcast_to(np.asarray(1.0 if Sigma2 is None else Sigma2,
                                    dtype=np.float64).ravel(), (M,)).copy()
    require(bool(np.all(s2 >= 0)), "sigma2", s2.tolist(), "must be >= 0")
    pis = [count("pi", int(x) if float(x) == int(x) else x, 1) for x in np.ravel(pi)]
    pis = pis * M if len(pis) == 1 else pis
    require(len(pis) == M, "pi", pis, f"must have one entry per client ({M})")
    E = count("E", E, 1)
    Gamma = real("Gamma", Gamma, lo=0.0, allow_inf=True)
    chi2 = real("chi2", chi2, lo=0.0, allow_inf=True)
    D2 = real("D2", D2, lo=0.0)
    return L, mu, p, s2, S2, E, pis, Gamma, chi2, D2


def core(L: float, p: np.ndarray, s2: np.ndarray, S2: np.ndarray, Gamma: float, E: int,
         pi: Sequence[int], chi2: float, c_drift: float) -> dict[str, float]:
    """The three summands of B (``c_drift = 2``) or A (``c_drift = 8``) and their sum."""
    noise = float(np.sum(p**2 * s2 * S2))
    het = 6.0 * L * Gamma if Gamma > 0 else 0.0
    w = E * float(sum(pk * (pik**2 * E - pik) for pk, pik in zip(p, pi, strict=True)))
    drift = 0.0 if w == 0.0 else c_drift * w * chi2
    return {"noise": noise, "heterogeneity": het, "drift": drift,
            "sum": noise + het + drift, "drift_weight": w}


def checks(*, L: float, mu: float, E: int, pi: Sequence[int], chi2: float, Gamma: float,
           S2: np.ndarray, T: np.ndarray, step_ok, step_detail: str) -> list[Check]:
    """Hypotheses H1-H12 (docs/theory/asypfl.md section 2), per horizon where they vary."""
    P = math.lcm(*pi) * E
    all_one = all(pk * E == 1 for pk in pi)
    synchronous = len(set(pi)) == 1
    out = [
        Check("H1a Asm 1 L-smooth", True, f"L = {fmt(L)}"),
        Check("H1b Asm 1 L_c-Lipschitz (waived, E-Y1)", None,
              "contradicts mu-strong convexity on R^d and enters no bound: waived"),
        Check("H2 Asm 2 mu-strongly convex", mu > 0, f"mu = {fmt(mu)}"),
        Check("H3 unbiased independent gradients", None, SIM),
        Check("H5 Asm 3 variance", None, "the caller's sigma_k^2; " + SIM),
        Check("H6 fixed tick schedule", None, SIM + " (fedsim's engine is the tick model "
              "only for one client)"),
        Check("H7 Asm 4 discrepancy chi2 finite", bool(all_one or math.isfinite(chi2)),
              f"chi2 = {fmt(chi2)}" + (" (unused: every E_k = 1)" if all_one else "")),
        Check("H8 step size", step_ok, step_detail),
        Check("H9 T common sync tick (E-Y3)", (np.asarray(T) % P) == 0,
              f"T must be a multiple of lcm(pi) E = {P}"),
        Check("H10 full participation", None, SIM),
        Check("H11 Sigma_k = 1 (E-Y6)", bool(np.all(S2 == 1.0)) or None,
              "Sigma_k undefined in [Y]; values != 1 are unsupported"),
        Check("H12 equal pi_k when some E_k > 1", bool(all_one or synchronous),
              f"pi = {list(pi)}" + ("" if all_one or synchronous else
                                    ": distinct periods refute the sync-chi form (reader 2, "
                                    "pi = (5,8))")),
        Check("Gamma finite", bool(math.isfinite(Gamma)), f"Gamma = {fmt(Gamma)}"),
    ]
    return out
