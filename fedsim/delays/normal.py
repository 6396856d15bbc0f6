"""The exactly truncated normal delay (inverse-CDF sampling, tail-safe moments).

See :class:`Normal`; its moments come from :mod:`fedsim.delays.truncated_normal`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from fedsim.delays.base import REQUIRED, Delay, as_output
from fedsim.delays.truncated_normal import truncated_normal_moments
from fedsim.errors import check_number, require

__all__ = ["Normal"]

_INF = math.inf
# Beyond this many standard deviations the normal tail masses are computed in log space
# (ndtr underflows to 0 near -37.5; 30 leaves a wide margin).
_LOG_SPACE_CUTOFF = 30.0


@dataclass(frozen=True, init=False, repr=False)
class Normal(Delay):
    """Normal(mean, sd) truncated to ``[low, high]`` (default ``[0, inf)``), exactly.

    ``Normal(mean, sd, low=0.0, high=inf)``: ``mean`` and ``sd`` are the parameters of
    the *parent* normal and are stored as ``loc`` and ``sd``; the ``mean`` and
    ``variance`` *properties* are those of the truncated distribution actually drawn
    (so every :class:`Delay` has ``.mean`` = its expected value).  Rules: ``mean``
    finite, ``0 < sd < inf``, ``0 <= low < high <= inf``, ``low`` finite.

    Sampling method (exact, no rejection loop): inverse-CDF sampling on the truncated
    interval.  With standardised ends ``a = (low-mean)/sd``, ``b = (high-mean)/sd``
    and ``u ~ U[0,1)``, the target CDF level is ``P = Phi(a)(1-u) + Phi(b) u``, and its
    complement ``Q = 1 - P = Phi(-a)(1-u) + Phi(-b) u`` (both sums of non-negative
    terms, so neither suffers cancellation).  Upper-tail symmetry: each draw uses
    ``z = ndtri(P)`` when ``P <= Q`` and ``z = -ndtri(Q)`` otherwise, so the inverse
    CDF is only ever evaluated at levels <= 1/2, where ``ndtri`` has full relative
    precision.  When the interval lies more than 30 sd into a tail (where ``ndtr``
    would underflow) the same formulas are evaluated in log space with
    ``scipy.special.log_ndtr`` and ``ndtri_exp``.  The result ``mean + sd*z`` is
    clipped to ``[low, high]`` to remove the last-ulp rounding.

    Moments: the analytic truncated-normal formulas (see
    :func:`~fedsim.delays.truncated_normal.truncated_normal_moments`),
    written so that nothing underflows or cancels however far the interval is in a
    tail (tested to ~1e-13 against scipy and, beyond scipy's range, against the
    Mills-ratio asymptotic series up to 500 sd).  Intervals much narrower than the
    local scale (width w << 1/max(1, t)) lose about log10(1/(w max(1, t))^2) digits
    in the variance.
    """

    loc: float
    sd: float
    low: float
    high: float
    _a: float = field(repr=False, compare=False)
    _b: float = field(repr=False, compare=False)
    _cdf_levels: tuple[float, float, float, float] = field(repr=False, compare=False)
    _log: bool = field(repr=False, compare=False)
    _moments: tuple[float, float] = field(repr=False, compare=False)
    kind: ClassVar[str] = "normal"

    def __init__(self, mean: float, sd: float, low: float = 0.0, high: float = _INF) -> None:
        p = self._validate({"mean": mean, "sd": sd, "low": low, "high": high})
        object.__setattr__(self, "loc", p["mean"])
        object.__setattr__(self, "sd", p["sd"])
        object.__setattr__(self, "low", p["low"])
        object.__setattr__(self, "high", p["high"])
        a = (self.low - self.loc) / self.sd
        b = (self.high - self.loc) / self.sd
        object.__setattr__(self, "_a", a)
        object.__setattr__(self, "_b", b)
        from scipy import special  # imported where used: start-up time (issue 19)

        use_log = b < -_LOG_SPACE_CUTOFF or a > _LOG_SPACE_CUTOFF
        object.__setattr__(self, "_log", bool(use_log))
        f = special.log_ndtr if use_log else special.ndtr
        # levels: Phi(a), Phi(b), Phi(-a), Phi(-b)  (or their logs)
        lv = tuple(float(f(x)) for x in (a, b, -a, -b))
        object.__setattr__(self, "_cdf_levels", lv)
        m1, v = truncated_normal_moments(a, b)
        mom = (min(max(self.loc + self.sd * m1, self.low), self.high),
               self.sd * self.sd * max(v, 0.0))
        object.__setattr__(self, "_moments", mom)

    def __repr__(self) -> str:
        return f"Normal(mean={self.loc!r}, sd={self.sd!r}, low={self.low!r}, high={self.high!r})"

    @classmethod
    def _signature(cls) -> dict[str, Any]:
        return {"mean": REQUIRED, "sd": REQUIRED, "low": 0.0, "high": _INF}

    @classmethod
    def _validate(cls, p: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
        mean = check_number(prefix + "mean", p["mean"], allow_inf=True)
        require(math.isfinite(mean), prefix + "mean", p["mean"], "must be finite")
        sd = check_number(prefix + "sd", p["sd"], allow_inf=True)
        require(sd > 0.0, prefix + "sd", p["sd"], "must be > 0")
        require(sd < _INF, prefix + "sd", p["sd"], "must be finite")
        low = check_number(prefix + "low", p.get("low", 0.0), allow_inf=True)
        require(0.0 <= low < _INF, prefix + "low", p.get("low", 0.0),
                "must be >= 0 and finite (delays are durations)")
        high = check_number(prefix + "high", p.get("high", _INF), allow_inf=True)
        require(high > low, prefix + "high", p.get("high", _INF), f"must be > low={low!r}")
        a, b = (low - mean) / sd, (high - mean) / sd
        require(a < b, prefix + "sd", p["sd"],
                "must not be so small that [low, high] collapses to a point in sd units")
        return {"mean": mean, "sd": sd, "low": low, "high": high}

    def _params(self) -> dict[str, Any]:
        return {"mean": self.loc, "sd": self.sd, "low": self.low, "high": self.high}

    def sample(self, rng: np.random.Generator,
               size: int | tuple[int, ...] | None = None) -> float | np.ndarray:
        from scipy import special

        u = rng.random(size)
        pa, pb, qa, qb = self._cdf_levels
        if self._log:
            with np.errstate(divide="ignore"):
                lu, l1u = np.log(u), np.log1p(-u)
            lp = np.logaddexp(pa + l1u, pb + lu)
            lq = np.logaddexp(qa + l1u, qb + lu)
            lower_half = lp <= lq
            z = special.ndtri_exp(np.where(lower_half, lp, lq))
        else:
            v = 1.0 - u
            p = pa * v + pb * u
            q = qa * v + qb * u
            lower_half = p <= q
            z = special.ndtri(np.where(lower_half, p, q))
        z = np.where(lower_half, z, -z)
        x = np.clip(self.loc + self.sd * z, self.low, self.high)
        return as_output(x, size)

    @property
    def mean(self) -> float:  # type: ignore[override]
        """Mean of the truncated distribution (not the parent parameter ``loc``)."""
        return self._moments[0]

    @property
    def variance(self) -> float:
        """Variance of the truncated distribution."""
        return self._moments[1]

    @property
    def lower(self) -> float:
        return self.low

    @property
    def upper(self) -> float:
        return self.high
