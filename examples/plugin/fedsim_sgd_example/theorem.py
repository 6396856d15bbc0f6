"""SGD with a constant step on a strongly convex, smooth function (a textbook bound).

Statement.  Let f be mu-strongly convex and L-smooth with minimiser x*, and let
``x_{k+1} = x_k - eta g_k`` with unbiased stochastic gradients,
``E[g_k | x_k] = grad f(x_k)`` and ``E||g_k - grad f(x_k)||^2 <= sigma2``.  If
``0 < eta <= 2/(mu + L)`` then, with ``q = 1 - eta mu`` and ``R0 = ||x_0 - x*||``,

    E||x_K - x*||^2 <= q^(2K) R0^2 + eta^2 sigma2 (1 - q^(2K)) / (1 - q^2)       (1)

(mode ``sharp``) and, if also ``eta <= 1/L``, the textbook form

    E||x_K - x*||^2 <= q^K R0^2 + eta sigma2 / mu                                 (2)

(mode ``textbook``; (1) implies (2) since q^2 <= q and 1 - q^2 >= eta mu).
Proof of (1): for ``eta <= 2/(mu+L)``, ``||x - eta grad f(x) - x*|| <= q ||x - x*||``
(co-coercivity of a strongly convex smooth gradient, Nesterov 2004, Thm 2.1.12), and the
noise adds ``eta^2 sigma2`` to the second moment each step; unroll.  Equality holds for
``f = mu/2 ||x||^2`` with noise of variance exactly ``sigma2``.
"""

from __future__ import annotations

import numpy as np
from fedsim.theory.params import Horizons
from fedsim.theory.registry import Theorem
from fedsim.theory.result import BoundResult, Hypothesis, Status

from fedsim.errors import check_number, require

__all__ = ["sgd_bound", "THEOREM"]

HYPOTHESES = {
    "strongly_convex_smooth": "f is mu-strongly convex and L-smooth (0 < mu <= L)",
    "unbiased_bounded_noise": "E[g | x] = grad f(x), E||g - grad f(x)||^2 <= sigma2",
    "step_size": "0 < eta <= 2/(mu + L) (sharp), and eta <= 1/L (textbook)",
    "fresh_gradient": "g_k is evaluated at x_k itself: no stale gradient",
}


def sgd_bound(*, mu: float, L: float, eta: float, sigma2: float, R0: float, K: Horizons,
              mode: str = "textbook") -> BoundResult:
    """Bound (2) (``mode="textbook"``) or (1) (``mode="sharp"``) on E||x_K - x*||^2."""
    mu = check_number("mu", mu, low=0.0, strict=True)
    L = check_number("L", L, low=0.0, strict=True)
    eta = check_number("eta", eta, low=0.0, strict=True)
    sigma2 = check_number("sigma2", sigma2, low=0.0)
    R0 = check_number("R0", R0, low=0.0)
    require(mode in ("textbook", "sharp"), "mode", mode, "must be 'textbook' or 'sharp'")
    Ks = np.asarray(K, dtype=np.float64)
    limit = 2.0 / (mu + L) if mode == "sharp" else min(1.0 / L, 2.0 / (mu + L))
    step_ok = eta <= limit
    q = 1.0 - eta * mu
    if mode == "sharp":
        decay = q ** (2 * Ks)
        noise = eta**2 * sigma2 * (1.0 - decay) / (1.0 - q**2)
    else:
        decay = q**Ks
        noise = np.full_like(Ks, eta * sigma2 / mu)
    value = decay * R0**2 + noise
    hyps = [Hypothesis("strongly_convex_smooth", None if mu <= L else False,
                       f"mu = {mu:g}, L = {L:g}" + ("" if mu <= L else ": mu > L")),
            Hypothesis("unbiased_bounded_noise", None, HYPOTHESES["unbiased_bounded_noise"]),
            Hypothesis("step_size", bool(step_ok), f"eta = {eta:g}, limit {limit:g} ({mode})"),
            Hypothesis("fresh_gradient", None, HYPOTHESES["fresh_gradient"])]
    status = Status.CERTIFIED_PAPER if step_ok and mu <= L else Status.NOT_APPLICABLE
    out = float(value) if value.ndim == 0 else value
    return BoundResult(value=out, status=status, hypotheses=hyps, theorem="SGD bound",
                       mode=mode, terms={"initial": decay * R0**2, "noise": noise},
                       step_sizes={"eta": eta}, derived_constants={"q": q, "limit": limit})


THEOREM = Theorem(name="sgd_quadratic", function=sgd_bound,
                  label="[T] SGD, constant step, strongly convex",
                  paper="textbook (Nesterov 2004, Thm 2.1.12; e.g. Gower et al. 2019)",
                  hypotheses=HYPOTHESES, statuses=(Status.CERTIFIED_PAPER,
                                                   Status.NOT_APPLICABLE), horizon="K",
                  help={"mu": "strong convexity", "L": "smoothness", "eta": "step size",
                        "sigma2": "gradient-noise variance bound", "R0": "||x_0 - x*||",
                        "mode": "textbook | sharp"})
