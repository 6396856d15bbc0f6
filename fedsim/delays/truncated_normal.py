"""Moments of the truncated standard normal, accurate however far into a tail.

Textbook formulas for ``N(0, 1)`` truncated to ``[a, b]`` cancel catastrophically or
underflow beyond ~8 sd; these use the Mills ratio ``R(t) = (1 - Phi(t))/phi(t)`` and
Laplace's continued fraction instead (tested to ~1e-13 against scipy and against the
asymptotic series up to 500 sd).  Used by :class:`fedsim.delays.normal.Normal`.
"""

from __future__ import annotations

import math

__all__ = ["truncated_normal_moments"]

_SQRT2 = math.sqrt(2.0)
_SQRT_HALF_PI = math.sqrt(math.pi / 2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _phi(x: float) -> float:
    """Standard normal density (0 at +-inf)."""
    return 0.0 if math.isinf(x) else _INV_SQRT_2PI * math.exp(-0.5 * x * x)


def _xphi(x: float) -> float:
    """``x * phi(x)`` with the limit 0 at +-inf."""
    return 0.0 if math.isinf(x) else x * _phi(x)


def _mills_parts(t: float) -> tuple[float, float, float]:
    """``(R, g, h)`` at ``t >= 0`` (finite) without cancellation.

    ``R(t) = (1 - Phi(t))/phi(t)`` is the Mills ratio (``sqrt(pi/2) erfcx(t/sqrt2)``),
    ``g = 1 - t R`` and ``h = (1 + t^2) R - t``.  For ``t >= 2`` the last two are
    differences of nearly equal numbers; they come from Laplace's continued fraction
    ``R = 1/D_0``, ``D_k = t + (k+1)/D_{k+1}``, as ``g = R/D_1`` and
    ``h = 2R/(D_1 D_2)`` (200 levels, evaluated backwards: converged to 1e-16 for t >= 1.5).
    """
    from scipy import special  # imported where used: start-up time (issue 19)

    R = _SQRT_HALF_PI * float(special.erfcx(t / _SQRT2))
    if t < 2.0:
        return R, 1.0 - t * R, (1.0 + t * t) * R - t
    d, d2 = t, t
    for k in range(199, 0, -1):
        d = t + (k + 1) / d
        if k == 2:
            d2 = d
    return R, R / d, 2.0 * R / (d * d2)


def _moments_lower_half(a: float, b: float) -> tuple[float, float]:
    """Standardised mean and variance of N(0,1) truncated to [a, b] with b <= 0.

    Work with ``Y = X - b`` (the mass sits near ``b``) and divide everything by
    ``phi(b)``: with ``M(x) = Phi(x)/phi(x) = R(-x)``, ``r = phi(a)/phi(b) =
    exp((b^2 - a^2)/2)`` in [0, 1], ``w = b - a``, ``g, h`` of :func:`_mills_parts`,

    * ``Z/phi(b) = M(b) - r M(a)``,
    * ``E[Y] Z/phi(b) = -g(b) + r (g(a) + w M(a))``,
    * ``E[Y^2] Z/phi(b) = h(b) - r (h(a) + w (2 g(a) + w M(a)))``,

    which is algebraically the textbook formula but neither underflows nor cancels
    catastrophically far in the tail (``E[Y] ~ -1/t``, ``E[Y^2] ~ 2/t^2``).
    """
    mb, gb, hb = _mills_parts(-b)
    if math.isinf(a):
        dz, n1, n2 = mb, -gb, hb
    else:
        ma, ga, ha = _mills_parts(-a)
        r = math.exp(0.5 * (b - a) * (b + a))
        w = b - a
        dz = mb - r * ma
        n1 = -gb + r * (ga + w * ma)
        n2 = hb - r * (ha + w * (2.0 * ga + w * ma))
    ey = n1 / dz
    return b + ey, n2 / dz - ey * ey


def truncated_normal_moments(a: float, b: float) -> tuple[float, float]:
    """Standardised mean and variance of N(0,1) truncated to [a, b] (a < b).

    Textbook formulas: ``m = (phi(a) - phi(b))/Z`` and
    ``v = 1 + (a phi(a) - b phi(b))/Z - m^2`` with ``Z = Phi(b) - Phi(a)``.
    An interval in the upper half is mirrored to the lower half; one in the lower
    half uses :func:`_moments_lower_half`; one straddling 0 uses
    ``Z = (erf(b/sqrt2) - erf(a/sqrt2))/2`` (a sum of two non-negative terms, so it
    is computed to full relative precision).
    """
    if b <= 0.0:
        return _moments_lower_half(a, b)
    if a >= 0.0:
        m1, var = _moments_lower_half(-b, -a)
        return -m1, var
    from scipy import special

    z = 0.5 * (float(special.erf(b / _SQRT2)) - float(special.erf(a / _SQRT2)))
    m1 = (_phi(a) - _phi(b)) / z
    var = 1.0 + (_xphi(a) - _xphi(b)) / z - m1 * m1
    return m1, var
