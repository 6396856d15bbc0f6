"""Koloskova, Stich & Jaggi 2022, Theorems 6 and 8 as rate shapes (``RATE_SHAPE_ONLY``).

Statements (main text, ``docs/theory/koloskova-2022.md``): under Assumptions 1 (variance
``sigma^2``) and 3 (L-smooth), ``(1/(T+1)) sum_t ||grad f(x_t)||^2 <= eps`` after

* Theorem 6, eq. (8), a constant step: ``O(sigma^2/eps^2 + sqrt(tau_C tau_max)/eps)``;
* Theorem 8, eq. (12), steps (11) with ``eta <= 1/(4L)``: ``O(sigma^2/eps^2 + tau_C/eps)``

iterations.  The constants are in the appendix, which was not read, so the value returned
is the *shape* only, written as the accuracy after ``K`` iterations:
``eps(K) = sigma/sqrt(K) + tau/K`` with ``tau = sqrt(tau_C tau_max)`` (Theorem 6) or
``tau_C`` (Theorem 8).  It matches the iteration count up to a factor 2 both ways: with
``eps = sigma/sqrt(K) + tau/K``, ``sigma^2/eps^2 <= K`` and ``tau/eps <= K``, and
conversely ``K >= sigma^2/eps^2 + tau/eps`` gives ``eps(K) <= 2 eps``.  The testable
content is the shape: the fitted log-log slope in ``K`` (``-1/2`` when the noise term
dominates, ``-1`` when the delay term does) and the growth with ``tau_max`` (Theorem 6) or
its absence (Theorem 8).
"""

from __future__ import annotations

import math

import numpy as np

from fedsim.errors import check_number, require
from fedsim.theory.params import Horizons
from fedsim.theory.registry import Theorem
from fedsim.theory.result import BoundResult, Hypothesis, Status

__all__ = ["theorem6_shape", "theorem8_shape", "THEOREM6", "THEOREM8", "HYPOTHESES"]

HYPOTHESES = {
    "A1_bounded_variance": "E||grad F_i(x, xi) - grad f_i(x)||^2 <= sigma^2 (eq. (2))",
    "A3_smooth": "each f_i L-smooth (eq. (4))",
    "homogeneous": "f_i = f for all i (Section 4)",
    "tau_max_finite": "the maximum delay tau_max is finite (Theorem 6's rate reads it)",
    "step_rule_11": "eta_t = eta if tau_t <= tau_C, else <= min{eta, 1/(4 L tau_t)}, with "
                    "eta <= 1/(4L) (eq. (11), Theorem 8)",
}


def _shape(sigma2: float, tau: float, K: Horizons) -> tuple[np.ndarray, np.ndarray]:
    Ks = np.asarray(K, dtype=np.float64)
    require(bool(np.all(Ks >= 1)), "K", list(np.atleast_1d(Ks)), "must be >= 1")
    return math.sqrt(sigma2) / np.sqrt(Ks), tau / Ks


def _out(x: np.ndarray) -> float | np.ndarray:
    return float(x) if x.ndim == 0 else x


def _open(name: str) -> Hypothesis:
    return Hypothesis(name, None, HYPOTHESES[name])


def theorem6_shape(*, sigma2: float, tau_C: int, tau_max: float, K: Horizons) -> BoundResult:
    """Theorem 6 (8) written as ``eps(K) = sigma/sqrt(K) + sqrt(tau_C tau_max)/K``."""
    sigma2 = check_number("sigma2", sigma2, low=0.0)
    tau_C = int(check_number("tau_C", tau_C, low=1.0))
    tau_max = check_number("tau_max", tau_max, low=0.0, allow_inf=True)
    finite = math.isfinite(tau_max)
    noise, delay = _shape(sigma2, math.sqrt(tau_C * tau_max) if finite else math.inf, K)
    hyps = [_open("A1_bounded_variance"), _open("A3_smooth"), _open("homogeneous"),
            Hypothesis("tau_max_finite", finite, f"tau_max = {tau_max:g}")]
    status = Status.RATE_SHAPE_ONLY if finite else Status.NOT_APPLICABLE
    return BoundResult(value=_out(noise + delay), status=status, hypotheses=hyps,
                       theorem="Koloskova et al. Theorem 6", mode="rate_shape",
                       terms={"noise": noise, "delay": delay},
                       remainder="O(.): constants of the appendix (not read) omitted",
                       derived_constants={"tau": math.sqrt(tau_C * tau_max)})


def theorem8_shape(*, sigma2: float, tau_C: int, L: float, eta: float, K: Horizons,
                   rule: str = "koloskova") -> BoundResult:
    """Theorem 8 (12) written as ``eps(K) = sigma/sqrt(K) + tau_C/K``; the step rule (11)
    is checked for fedsim's rules (``fedsim.servers.delay_adaptive``): ``koloskova``
    (``eta/tau_t`` beyond ``tau_C``) and ``koloskova_drop`` satisfy (11) iff
    ``eta <= 1/(4L)``; ``mishchenko`` (``eta tau_C/tau_t``) exceeds ``eta/tau_t`` for
    ``tau_C > 1`` and satisfies (11) iff ``eta tau_C <= 1/(4L)``."""
    sigma2 = check_number("sigma2", sigma2, low=0.0)
    tau_C = int(check_number("tau_C", tau_C, low=1.0))
    L = check_number("L", L, low=0.0, strict=True)
    eta = check_number("eta", eta, low=0.0, strict=True)
    require(rule in ("koloskova", "koloskova_drop", "mishchenko"), "rule", rule,
            "must be koloskova, koloskova_drop or mishchenko")
    limit = 1.0 / (4.0 * L) / (tau_C if rule == "mishchenko" else 1.0)
    ok = eta <= limit
    noise, delay = _shape(sigma2, float(tau_C), K)
    hyps = [_open("A1_bounded_variance"), _open("A3_smooth"), _open("homogeneous"),
            Hypothesis("step_rule_11", ok, f"rule {rule}, eta = {eta:g}, limit {limit:g}")]
    return BoundResult(value=_out(noise + delay),
                       status=Status.RATE_SHAPE_ONLY if ok else Status.NOT_APPLICABLE,
                       hypotheses=hyps, theorem="Koloskova et al. Theorem 8",
                       mode="rate_shape", terms={"noise": noise, "delay": delay},
                       remainder="O(.): constants of the appendix (not read) omitted",
                       step_sizes={"eta": eta}, derived_constants={"limit": limit})


_HELP = {"sigma2": "gradient-noise variance bound (Assumption 1)",
         "tau_C": "concurrency (Definition 1)", "tau_max": "maximum delay (eq. (6))",
         "L": "smoothness", "eta": "base step", "rule": "koloskova | koloskova_drop | "
         "mishchenko"}

THEOREM6 = Theorem(name="koloskova_theorem6", function=theorem6_shape,
                   label="[K] Koloskova-Stich-Jaggi Theorem 6",
                   paper="Koloskova, Stich & Jaggi, NeurIPS 2022, eq. (8)",
                   hypotheses={k: HYPOTHESES[k] for k in ("A1_bounded_variance", "A3_smooth",
                                                          "homogeneous", "tau_max_finite")},
                   statuses=(Status.RATE_SHAPE_ONLY, Status.NOT_APPLICABLE), horizon="K",
                   help=_HELP)
THEOREM8 = Theorem(name="koloskova_theorem8", function=theorem8_shape,
                   label="[K] Koloskova-Stich-Jaggi Theorem 8",
                   paper="Koloskova, Stich & Jaggi, NeurIPS 2022, eqs. (11)-(12)",
                   hypotheses={k: HYPOTHESES[k] for k in ("A1_bounded_variance", "A3_smooth",
                                                          "homogeneous", "step_rule_11")},
                   statuses=(Status.RATE_SHAPE_ONLY, Status.NOT_APPLICABLE), horizon="K",
                   help=_HELP)
