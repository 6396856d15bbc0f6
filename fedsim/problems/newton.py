"""Damped Newton's method with an Armijo line search (THEORY_SPEC 9.4).

The minimiser of every smooth convex objective in :mod:`fedsim.problems` (the logistic
f and f_i, the Moreau inner problems, autograd losses) is computed here to a relative
gradient tolerance of 1e-13, so that the 9.4 certificates can bound the remaining error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["NewtonResult", "newton_minimize"]

_EPS = float(np.finfo(np.float64).eps)


@dataclass(frozen=True)
class NewtonResult:
    """Outcome of :func:`newton_minimize`: the point, its value and gradient norm."""

    x: np.ndarray
    fun: float
    grad_norm: float
    iterations: int
    converged: bool
    message: str


def newton_minimize(
    fun: Callable[[np.ndarray], float],
    grad: Callable[[np.ndarray], np.ndarray],
    hess: Callable[[np.ndarray], np.ndarray],
    x0: np.ndarray,
    *,
    gtol_rel: float = 1e-13,
    max_iter: int = 200,
) -> NewtonResult:
    """Damped Newton with exact Hessian and Armijo backtracking (THEORY_SPEC 9.4).

    Stops when ``||grad|| <= gtol_rel * max(1, ||grad(x0)||)`` or when the squared
    Newton decrement over two is ``<= 1e-26``.  If the Hessian is not positive
    definite (a non-convex user loss) it is shifted by ``(-lam_min + delta) I``
    so the step is still a descent direction.  Near the optimum, where the
    function values no longer resolve the Armijo decrease, a step is accepted
    when the value does not increase beyond round-off and the gradient norm
    decreases.  Stops without convergence when no step is accepted.
    """
    x = np.array(x0, dtype=np.float64, copy=True)
    g = np.asarray(grad(x), dtype=np.float64)
    gn = float(np.linalg.norm(g))
    target = gtol_rel * max(1.0, gn)
    fx = float(fun(x))
    for it in range(max_iter + 1):
        if gn <= target:
            return NewtonResult(x, fx, gn, it, True, f"||grad|| = {gn:.3g} <= {target:.3g}")
        if it == max_iter:
            break
        H = np.asarray(hess(x), dtype=np.float64)
        H = 0.5 * (H + H.T)
        try:
            c = np.linalg.cholesky(H)
            p = -np.linalg.solve(c.T, np.linalg.solve(c, g))
        except np.linalg.LinAlgError:
            lam = np.linalg.eigvalsh(H)
            shift = -lam[0] + max(1e-10 * max(1.0, abs(lam[-1])), 1e-300)
            p = -np.linalg.solve(H + shift * np.eye(H.shape[0]), g)
        slope = float(g @ p)
        if not np.isfinite(slope) or slope >= 0.0:
            p, slope = -g, -gn * gn
        if -slope / 2.0 <= 1e-26:
            return NewtonResult(x, fx, gn, it, True, f"Newton decrement^2/2 = {-slope / 2:.3g}")
        t = 1.0
        accepted = False
        for _ in range(60):
            xn = x + t * p
            fn = float(fun(xn))
            if np.isfinite(fn) and fn <= fx + 1e-4 * t * slope:
                accepted = True
            elif np.isfinite(fn) and fn <= fx + 16.0 * _EPS * max(1.0, abs(fx)):
                gtry = np.asarray(grad(xn), dtype=np.float64)
                if float(np.linalg.norm(gtry)) < gn:
                    accepted = True
            if accepted:
                break
            t *= 0.5
        if not accepted:
            return NewtonResult(x, fx, gn, it, False,
                                f"line search stalled at ||grad|| = {gn:.3g} (target {target:.3g})")
        x, fx = xn, fn
        g = np.asarray(grad(x), dtype=np.float64)
        gn = float(np.linalg.norm(g))
    return NewtonResult(x, fx, gn, max_iter, False,
                        f"max_iter={max_iter} reached at ||grad|| = {gn:.3g}")
