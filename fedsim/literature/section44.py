"""Koloskova, Stich & Jaggi 2022, §4.4's claim read as a bound on time: asynchronous SGD with
steps (11) is never slower than mini-batch SGD with the same ``n`` workers.

Statement (main text, §4.4, ``docs/theory/koloskova-2022.md``): "our result shows for the
first time that asynchronous SGD is always faster than mini-batch SGD, regardless of the
delay pattern.  A small note that in our reasoning we implicitly assumed that the sever can
perform its operations in negligible time."  The text's argument is a comparison of O(.)
gradient counts (mini-batch: ``O(sigma^2/eps^2 + n/eps)`` gradients; Algorithm 1 with
steps (11): the same rate (13), since ``tau_avg = tau_C = n``) plus a per-gradient time
argument; it is not a theorem with a proof, so the value here is the claim taken
literally, tested to see whether it fails (status ``PAPER_LITERAL_KNOWN_ERRATUM``: the
paper itself names the assumption under which it was reasoned, a server of zero time).

The value is mini-batch SGD's expected time to reach the target, computed exactly where
the noise is zero (``sigma = 0``: mini-batch SGD over ``n`` workers is then gradient
descent on ``f``, whose iterates do not depend on the delays, so its number of rounds to
the target, ``rounds``, is a deterministic count the caller supplies):
``E T_mb = rounds * E max_{i <= n} Delta_i``, each round waiting for the slowest of ``n``
independent compute times (a fresh draw per round and worker).  The claim "asynchronous
SGD is never slower" is then "``E T_async <= E T_mb``", read on the simulated
asynchronous time.

``E max_i Delta_i = int_0^inf (1 - F(x)^n) dx`` (:func:`expected_max`), closed forms for
the constant, exponential (``H_n / rate``), uniform (``low + (high - low) n/(n+1)``) and
Pareto laws (``scale Gamma(n+1) Gamma(1 - 1/a) / Gamma(n + 1 - 1/a)``, ``a > 1``; ``inf``
otherwise), numerical quadrature for the log-normal and the rare-straggler mixture
(``F(x) = (1-p) F_D(x) + p F_D(x/m)``); the laws are fedsim's (``fedsim/delays``).
"""

from __future__ import annotations

import math
from typing import Any

from scipy import integrate, special

from fedsim.errors import check_number, require
from fedsim.theory.registry import Theorem
from fedsim.theory.result import BoundResult, Hypothesis, Status

__all__ = ["expected_max", "cdf", "section44", "THEOREM", "HYPOTHESES", "KINDS"]

#: the compute laws :func:`expected_max` reads (fedsim's parametrisation)
KINDS = ("constant", "exponential", "uniform", "lognormal", "pareto", "straggler")

HYPOTHESES = {
    "homogeneous": "f_i = f for all i (Section 4: the claim is made for Algorithm 1 on one "
                   "function)",
    "server_time_zero": "the server performs its operations in negligible time (§4.4)",
    "step_rule_11": "steps (11) with eta <= 1/(4L) (Theorem 8)",
    "minibatch_exact": "sigma = 0, so that mini-batch SGD's rounds to the target are a "
                       "deterministic count",
}


def cdf(compute: dict[str, Any], x: float) -> float:
    """``P(Delta <= x)`` of the compute law ``compute`` (a fedsim delay table)."""
    k = compute["kind"]
    if k == "constant":
        return 1.0 if x >= float(compute["value"]) else 0.0
    if k == "exponential":
        return 1.0 - math.exp(-float(compute["rate"]) * x) if x > 0 else 0.0
    if k == "uniform":
        lo, hi = float(compute["low"]), float(compute["high"])
        return 0.0 if x <= lo else 1.0 if x >= hi else (x - lo) / (hi - lo)
    if k == "lognormal":
        return (float(special.ndtr((math.log(x) - float(compute["mu"]))
                                   / float(compute["sigma"]))) if x > 0 else 0.0)
    if k == "pareto":
        s, a = float(compute["scale"]), float(compute["shape"])
        return 1.0 - (s / x) ** a if x > s else 0.0
    if k == "straggler":
        p, m = float(compute["p"]), float(compute["m"])
        return (1.0 - p) * cdf(compute["base"], x) + p * cdf(compute["base"], x / m)
    raise ValueError(f"compute law {k!r} is not one of {list(KINDS)}")


def _support_top(compute: dict[str, Any]) -> float:
    k = compute["kind"]
    if k == "constant":
        return float(compute["value"])
    if k == "uniform":
        return float(compute["high"])
    if k == "straggler":
        return float(compute["m"]) * _support_top(compute["base"])
    return math.inf


def expected_max(compute: dict[str, Any], n: int) -> float:
    """``E max_{i <= n} Delta_i`` for ``n`` independent draws of ``compute`` (module
    docstring); ``inf`` when it diverges (Pareto with ``shape <= 1``)."""
    require(compute.get("kind") in KINDS, "compute.kind", compute.get("kind"),
            f"must be one of {list(KINDS)}")
    n = int(check_number("n", n, low=1.0))
    k = compute["kind"]
    if k == "constant":
        return float(compute["value"])
    if k == "exponential":
        return sum(1.0 / j for j in range(1, n + 1)) / float(compute["rate"])
    if k == "uniform":
        lo, hi = float(compute["low"]), float(compute["high"])
        return lo + (hi - lo) * n / (n + 1.0)
    if k == "pareto":
        s, a = float(compute["scale"]), float(compute["shape"])
        if a <= 1.0:
            return math.inf
        return s * math.exp(math.lgamma(n + 1.0) + math.lgamma(1.0 - 1.0 / a)
                            - math.lgamma(n + 1.0 - 1.0 / a))
    top = _support_top(compute)
    f = (lambda x: 1.0 - cdf(compute, x) ** n)
    if math.isfinite(top):
        val, _ = integrate.quad(f, 0.0, top, limit=200, points=_kinks(compute))
        return float(val)
    val, _ = integrate.quad(f, 0.0, math.inf, limit=400, epsabs=1e-12, epsrel=1e-10)
    return float(val)


def _kinks(compute: dict[str, Any]) -> list[float] | None:
    """The points where a bounded straggler law's density jumps (quadrature breaks)."""
    if compute["kind"] != "straggler":
        return None
    b, m = compute["base"], float(compute["m"])
    if b["kind"] == "uniform":
        pts = [float(b["low"]), float(b["high"]), m * float(b["low"]), m * float(b["high"])]
    elif b["kind"] == "constant":
        pts = [float(b["value"]), m * float(b["value"])]
    else:
        return None
    top = _support_top(compute)
    return sorted({x for x in pts if 0.0 < x < top}) or None


def section44(*, rounds: int, n: int, compute: dict[str, Any], L: float, eta: float,
              heterogeneity: float = 0.0, sigma: float = 0.0) -> BoundResult:
    """Mini-batch SGD's expected time to the target, ``rounds * E max_i Delta_i`` (module
    docstring), as §4.4's claimed upper bound on asynchronous SGD's time with steps (11)."""
    rounds = int(check_number("rounds", rounds, low=0.0))
    n = int(check_number("n", n, low=1.0))
    L = check_number("L", L, low=0.0, strict=True)
    eta = check_number("eta", eta, low=0.0, strict=True)
    heterogeneity = check_number("heterogeneity", heterogeneity, low=0.0)
    sigma = check_number("sigma", sigma, low=0.0)
    mx = expected_max(compute, n)
    hyps = [Hypothesis("homogeneous", heterogeneity == 0.0,
                       f"heterogeneity = {heterogeneity:g}"),
            Hypothesis("server_time_zero", None, HYPOTHESES["server_time_zero"]),
            Hypothesis("step_rule_11", eta <= 1.0 / (4.0 * L),
                       f"eta = {eta:g}, 1/(4L) = {1.0 / (4.0 * L):g}"),
            Hypothesis("minibatch_exact", sigma == 0.0, f"sigma = {sigma:g}")]
    ok = all(h.holds is not False for h in hyps)
    value = rounds * mx
    status = (Status.PAPER_LITERAL_KNOWN_ERRATUM if ok and math.isfinite(value)
              else Status.NOT_APPLICABLE)
    return BoundResult(value=value if math.isfinite(value) else math.inf, status=status,
                       hypotheses=hyps, theorem="Koloskova et al. §4.4",
                       mode="minibatch_time", terms={"rounds": float(rounds),
                                                     "expected_max": mx},
                       derived_constants={"expected_max": mx})


THEOREM = Theorem(name="koloskova_44", function=section44,
                  label="[K] Koloskova-Stich-Jaggi §4.4 (async never slower than mini-batch)",
                  paper="Koloskova, Stich & Jaggi, NeurIPS 2022, Section 4.4",
                  hypotheses=HYPOTHESES,
                  statuses=(Status.PAPER_LITERAL_KNOWN_ERRATUM, Status.NOT_APPLICABLE),
                  horizon="K",
                  help={"rounds": "mini-batch rounds to the target (sigma = 0)",
                        "n": "workers", "compute": "compute-time law (a delay table)",
                        "L": "smoothness", "eta": "base step", "heterogeneity":
                        "problem heterogeneity (0: homogeneous)", "sigma": "gradient noise"})
