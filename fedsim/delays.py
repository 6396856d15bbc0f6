"""Delay models: non-negative random durations for download, compute, upload and think time.

Every model is a frozen dataclass deriving from :class:`Delay` with

* ``sample(rng, size=None)`` -- vectorised draws from an explicit
  ``numpy.random.Generator`` (a Python ``float`` when ``size`` is None, a float64
  array otherwise; the engine draws in blocks, e.g. ``size=4096``);
* analytic ``mean`` and ``variance`` properties (of the delay actually drawn:
  for the truncated normal these are the *truncated* moments);
* the support ``lower``/``upper`` (``inf`` when unbounded), always inside
  ``[0, inf)`` because delays are durations -- the engine derives its provable
  staleness bound from these;
* ``Normal(mean, sd, low, high)`` keeps the parent normal's ``mean`` as ``loc``, so
  that ``.mean`` is, for every model, the expected delay;
* ``to_dict()`` and ``Delay.from_dict(d)`` with TOML-friendly dicts such as
  ``{"kind": "exponential", "rate": 2.0}`` (kinds: exponential, normal,
  lognormal, uniform, constant, empirical).

Parameters are validated when the object is built; a bad one raises
:class:`fedsim.errors.ConfigError` naming the field, the value and the rule
(``rate must be > 0, got rate=-1.0``).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from scipy import special

from fedsim.errors import ConfigError, require

__all__ = [
    "Delay",
    "Exponential",
    "Normal",
    "LogNormal",
    "Uniform",
    "Constant",
    "Empirical",
    "KINDS",
]

_INF = math.inf
_SQRT2 = math.sqrt(2.0)
_SQRT_HALF_PI = math.sqrt(math.pi / 2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
# Beyond this many standard deviations the normal tail masses are computed in log space
# (ndtr underflows to 0 near -37.5; 30 leaves a wide margin).
_LOG_SPACE_CUTOFF = 30.0


def _real(field_name: str, value: Any) -> float:
    """``value`` as a float, or ConfigError if it is not a real number (bools are refused)."""
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_))
    require(ok, field_name, value, "must be a real number")
    v = float(value)
    require(not math.isnan(v), field_name, value, "must not be NaN")
    return v


def _out(x: Any, size: int | tuple[int, ...] | None) -> float | np.ndarray:
    """Scalar float when ``size`` is None, else a float64 array."""
    if size is None:
        return float(x)
    return np.asarray(x, dtype=np.float64)


@dataclass(frozen=True)
class Delay(ABC):
    """Abstract base of every delay model (a non-negative random duration)."""

    kind: ClassVar[str] = ""

    @abstractmethod
    def sample(self, rng: np.random.Generator,
               size: int | tuple[int, ...] | None = None) -> float | np.ndarray:
        """Draw ``size`` delays (a float when ``size`` is None)."""

    @property
    @abstractmethod
    def mean(self) -> float:
        """Analytic mean of the delay."""

    @property
    @abstractmethod
    def variance(self) -> float:
        """Analytic variance of the delay."""

    @property
    @abstractmethod
    def lower(self) -> float:
        """Smallest possible value (the infimum of the support)."""

    @property
    @abstractmethod
    def upper(self) -> float:
        """Largest possible value (the supremum of the support; ``inf`` if unbounded)."""

    @abstractmethod
    def _params(self) -> dict[str, Any]:
        """The constructor keywords of this model."""

    @classmethod
    @abstractmethod
    def _validate(cls, p: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
        """Check keyword values (field names prefixed by ``prefix``); return them normalised."""

    def __post_init__(self) -> None:
        """Validate the fields named by ``_signature`` at construction and store them
        normalised (models whose fields differ from their keywords override this)."""
        fields = {k: getattr(self, k) for k in self._signature()}
        for k, v in self._validate(fields).items():
            object.__setattr__(self, k, v)

    def to_dict(self) -> dict[str, Any]:
        """``{"kind": ..., <parameters>}``; ``Delay.from_dict(d.to_dict()) == d``."""
        return {"kind": self.kind, **self._params()}

    @staticmethod
    def from_dict(d: Mapping[str, Any], field_name: str = "") -> Delay:
        """Build a delay from ``{"kind": "exponential", "rate": 2.0}``-style dicts.

        ``field_name`` (e.g. ``"delays.upload"``) prefixes the names in error
        messages: ``delays.upload.rate must be > 0, got delays.upload.rate=-1.0``.
        Unknown kinds, unknown keys and missing keys raise ConfigError.
        """
        prefix = f"{field_name}." if field_name else ""
        require(isinstance(d, Mapping), field_name or "delay", d,
                "must be a table/dict with a 'kind' key")
        require("kind" in d, f"{prefix}kind", None,
                f"is required (one of {sorted(KINDS)})")
        kind = d["kind"]
        require(isinstance(kind, str) and kind in KINDS, f"{prefix}kind", kind,
                f"must be one of {sorted(KINDS)}")
        cls = KINDS[kind]
        allowed = cls._keys()
        params = {k: v for k, v in d.items() if k != "kind"}
        for key in params:
            require(key in allowed, f"{prefix}{key}", params[key],
                    f"is not a parameter of a {kind} delay (allowed: {', '.join(allowed)})")
        for key in cls._required():
            require(key in params, f"{prefix}{key}", None,
                    f"is required for a {kind} delay")
        cls._validate(params, prefix)
        return cls(**params)

    @classmethod
    def _keys(cls) -> tuple[str, ...]:
        return tuple(cls._signature())

    @classmethod
    def _required(cls) -> tuple[str, ...]:
        return tuple(k for k, default in cls._signature().items() if default is _REQUIRED)

    @classmethod
    def _signature(cls) -> dict[str, Any]:
        raise NotImplementedError


_REQUIRED = object()


# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Exponential(Delay):
    """Exponential delay with ``rate`` lambda > 0: mean 1/lambda, variance 1/lambda^2."""

    rate: float
    kind: ClassVar[str] = "exponential"

    @classmethod
    def _signature(cls) -> dict[str, Any]:
        return {"rate": _REQUIRED}

    @classmethod
    def _validate(cls, p: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
        rate = _real(prefix + "rate", p["rate"])
        require(rate > 0.0, prefix + "rate", p["rate"], "must be > 0")
        require(rate < _INF, prefix + "rate", p["rate"], "must be finite")
        require(1.0 / rate < _INF, prefix + "rate", p["rate"],
                "must be large enough that the mean 1/rate is finite")
        return {"rate": rate}

    def _params(self) -> dict[str, Any]:
        return {"rate": self.rate}

    def sample(self, rng: np.random.Generator,
               size: int | tuple[int, ...] | None = None) -> float | np.ndarray:
        return _out(rng.exponential(1.0 / self.rate, size), size)

    @property
    def mean(self) -> float:
        return 1.0 / self.rate

    @property
    def variance(self) -> float:
        return 1.0 / (self.rate * self.rate)

    @property
    def lower(self) -> float:
        return 0.0

    @property
    def upper(self) -> float:
        return _INF


# ------------------------------------------------------------------------------------------
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
    R = _SQRT_HALF_PI * float(special.erfcx(t / _SQRT2))
    if t < 2.0:
        return R, 1.0 - t * R, (1.0 + t * t) * R - t
    d, d2 = t, t
    for k in range(199, 0, -1):
        d = t + (k + 1) / d
        if k == 2:
            d2 = d
    return R, R / d, 2.0 * R / (d * d2)


def _tn_moments_lower(a: float, b: float) -> tuple[float, float]:
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


def _tn_moments(a: float, b: float) -> tuple[float, float]:
    """Standardised mean and variance of N(0,1) truncated to [a, b] (a < b).

    Textbook formulas: ``m = (phi(a) - phi(b))/Z`` and
    ``v = 1 + (a phi(a) - b phi(b))/Z - m^2`` with ``Z = Phi(b) - Phi(a)``.
    An interval in the upper half is mirrored to the lower half; one in the lower
    half uses :func:`_tn_moments_lower`; one straddling 0 uses
    ``Z = (erf(b/sqrt2) - erf(a/sqrt2))/2`` (a sum of two non-negative terms, so it
    is computed to full relative precision).
    """
    if b <= 0.0:
        return _tn_moments_lower(a, b)
    if a >= 0.0:
        m1, var = _tn_moments_lower(-b, -a)
        return -m1, var
    z = 0.5 * (float(special.erf(b / _SQRT2)) - float(special.erf(a / _SQRT2)))
    m1 = (_phi(a) - _phi(b)) / z
    var = 1.0 + (_xphi(a) - _xphi(b)) / z - m1 * m1
    return m1, var


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

    Moments: the analytic truncated-normal formulas (see :func:`_tn_moments`),
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
    _lvl: tuple[float, float, float, float] = field(repr=False, compare=False)
    _log: bool = field(repr=False, compare=False)
    _mom: tuple[float, float] = field(repr=False, compare=False)
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
        use_log = b < -_LOG_SPACE_CUTOFF or a > _LOG_SPACE_CUTOFF
        object.__setattr__(self, "_log", bool(use_log))
        f = special.log_ndtr if use_log else special.ndtr
        # levels: Phi(a), Phi(b), Phi(-a), Phi(-b)  (or their logs)
        lv = tuple(float(f(x)) for x in (a, b, -a, -b))
        object.__setattr__(self, "_lvl", lv)
        m1, v = _tn_moments(a, b)
        mom = (min(max(self.loc + self.sd * m1, self.low), self.high),
               self.sd * self.sd * max(v, 0.0))
        object.__setattr__(self, "_mom", mom)

    def __repr__(self) -> str:
        return f"Normal(mean={self.loc!r}, sd={self.sd!r}, low={self.low!r}, high={self.high!r})"

    @classmethod
    def _signature(cls) -> dict[str, Any]:
        return {"mean": _REQUIRED, "sd": _REQUIRED, "low": 0.0, "high": _INF}

    @classmethod
    def _validate(cls, p: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
        mean = _real(prefix + "mean", p["mean"])
        require(math.isfinite(mean), prefix + "mean", p["mean"], "must be finite")
        sd = _real(prefix + "sd", p["sd"])
        require(sd > 0.0, prefix + "sd", p["sd"], "must be > 0")
        require(sd < _INF, prefix + "sd", p["sd"], "must be finite")
        low = _real(prefix + "low", p.get("low", 0.0))
        require(0.0 <= low < _INF, prefix + "low", p.get("low", 0.0),
                "must be >= 0 and finite (delays are durations)")
        high = _real(prefix + "high", p.get("high", _INF))
        require(high > low, prefix + "high", p.get("high", _INF), f"must be > low={low!r}")
        a, b = (low - mean) / sd, (high - mean) / sd
        require(a < b, prefix + "sd", p["sd"],
                "must not be so small that [low, high] collapses to a point in sd units")
        return {"mean": mean, "sd": sd, "low": low, "high": high}

    def _params(self) -> dict[str, Any]:
        return {"mean": self.loc, "sd": self.sd, "low": self.low, "high": self.high}

    def sample(self, rng: np.random.Generator,
               size: int | tuple[int, ...] | None = None) -> float | np.ndarray:
        u = rng.random(size)
        pa, pb, qa, qb = self._lvl
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
        return _out(x, size)

    @property
    def mean(self) -> float:  # type: ignore[override]
        """Mean of the truncated distribution (not the parent parameter ``loc``)."""
        return self._mom[0]

    @property
    def variance(self) -> float:
        """Variance of the truncated distribution."""
        return self._mom[1]

    @property
    def lower(self) -> float:
        return self.low

    @property
    def upper(self) -> float:
        return self.high


# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LogNormal(Delay):
    """``exp(N(mu, sigma^2))``: ``mu``, ``sigma`` are the mean and sd of the underlying normal.

    Mean ``exp(mu + sigma^2/2)``, variance ``(exp(sigma^2) - 1) exp(2 mu + sigma^2)``.
    Rules: ``mu`` finite, ``0 < sigma < inf``, ``mu + sigma^2 < 350`` (finite variance).
    """

    mu: float
    sigma: float
    kind: ClassVar[str] = "lognormal"

    @classmethod
    def _signature(cls) -> dict[str, Any]:
        return {"mu": _REQUIRED, "sigma": _REQUIRED}

    @classmethod
    def _validate(cls, p: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
        mu = _real(prefix + "mu", p["mu"])
        require(math.isfinite(mu), prefix + "mu", p["mu"], "must be finite")
        sigma = _real(prefix + "sigma", p["sigma"])
        require(sigma > 0.0, prefix + "sigma", p["sigma"], "must be > 0")
        require(sigma < _INF, prefix + "sigma", p["sigma"], "must be finite")
        require(mu + sigma * sigma < 350.0, prefix + "sigma", p["sigma"],
                f"must satisfy mu + sigma^2 < 350 so the variance is finite (mu={mu!r})")
        return {"mu": mu, "sigma": sigma}

    def _params(self) -> dict[str, Any]:
        return {"mu": self.mu, "sigma": self.sigma}

    def sample(self, rng: np.random.Generator,
               size: int | tuple[int, ...] | None = None) -> float | np.ndarray:
        return _out(rng.lognormal(self.mu, self.sigma, size), size)

    @property
    def mean(self) -> float:
        return math.exp(self.mu + 0.5 * self.sigma ** 2)

    @property
    def variance(self) -> float:
        s2 = self.sigma ** 2
        return math.expm1(s2) * math.exp(2.0 * self.mu + s2)

    @property
    def lower(self) -> float:
        return 0.0

    @property
    def upper(self) -> float:
        return _INF


# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Uniform(Delay):
    """Uniform on ``[low, high]``, ``0 <= low <= high < inf`` (``low == high`` is a point mass).

    Mean ``(low + high)/2``, variance ``(high - low)^2/12``.
    """

    low: float
    high: float
    kind: ClassVar[str] = "uniform"

    @classmethod
    def _signature(cls) -> dict[str, Any]:
        return {"low": _REQUIRED, "high": _REQUIRED}

    @classmethod
    def _validate(cls, p: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
        low = _real(prefix + "low", p["low"])
        require(0.0 <= low < _INF, prefix + "low", p["low"],
                "must be >= 0 and finite (delays are durations)")
        high = _real(prefix + "high", p["high"])
        require(low <= high < _INF, prefix + "high", p["high"],
                f"must be finite and >= low={low!r}")
        return {"low": low, "high": high}

    def _params(self) -> dict[str, Any]:
        return {"low": self.low, "high": self.high}

    def sample(self, rng: np.random.Generator,
               size: int | tuple[int, ...] | None = None) -> float | np.ndarray:
        return _out(rng.uniform(self.low, self.high, size), size)

    @property
    def mean(self) -> float:
        return 0.5 * (self.low + self.high)

    @property
    def variance(self) -> float:
        w = self.high - self.low
        return w * w / 12.0

    @property
    def lower(self) -> float:
        return self.low

    @property
    def upper(self) -> float:
        return self.high


# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Constant(Delay):
    """A deterministic delay ``value`` (0 allowed).  ``sample`` does not consume ``rng``."""

    value: float
    kind: ClassVar[str] = "constant"

    @classmethod
    def _signature(cls) -> dict[str, Any]:
        return {"value": _REQUIRED}

    @classmethod
    def _validate(cls, p: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
        value = _real(prefix + "value", p["value"])
        require(0.0 <= value < _INF, prefix + "value", p["value"], "must be >= 0 and finite")
        return {"value": value}

    def _params(self) -> dict[str, Any]:
        return {"value": self.value}

    def sample(self, rng: np.random.Generator,
               size: int | tuple[int, ...] | None = None) -> float | np.ndarray:
        if size is None:
            return self.value
        return np.full(size, self.value, dtype=np.float64)

    @property
    def mean(self) -> float:
        return self.value

    @property
    def variance(self) -> float:
        return 0.0

    @property
    def lower(self) -> float:
        return self.value

    @property
    def upper(self) -> float:
        return self.value


# ------------------------------------------------------------------------------------------
@dataclass(frozen=True, repr=False)
class Empirical(Delay):
    """Resample the given non-negative ``samples`` uniformly with replacement.

    The draw is ``samples[J]`` with ``J`` uniform on ``{0..n-1}``, so the mean and
    variance are the population moments of ``samples`` (variance with divisor n) and
    the support is ``[min, max]``.  ``samples`` is stored as a tuple of floats.
    """

    samples: tuple[float, ...]
    _arr: np.ndarray = field(init=False, repr=False, compare=False)
    kind: ClassVar[str] = "empirical"

    def __post_init__(self) -> None:
        super().__post_init__()
        arr = np.array(self.samples, dtype=np.float64)
        arr.setflags(write=False)
        object.__setattr__(self, "_arr", arr)

    def __repr__(self) -> str:
        n = len(self.samples)
        if n <= 8:
            return f"Empirical(samples={self.samples!r})"
        head = ", ".join(repr(x) for x in self.samples[:4])
        return f"Empirical(samples=({head}, ...), n={n}, min={self.lower!r}, max={self.upper!r})"

    @classmethod
    def _signature(cls) -> dict[str, Any]:
        return {"samples": _REQUIRED}

    @classmethod
    def _validate(cls, p: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
        name = prefix + "samples"
        raw = p["samples"]
        ok = isinstance(raw, (Sequence, np.ndarray)) and not isinstance(raw, (str, bytes))
        require(ok, name, raw, "must be a sequence of numbers")
        try:
            arr = np.asarray(raw, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{name} must be a sequence of numbers, got {name}={raw!r}") from exc
        require(arr.ndim == 1, name, raw, "must be one-dimensional")
        require(arr.size >= 1, name, raw, "must be non-empty")
        require(bool(np.all(np.isfinite(arr))), name, raw, "must contain only finite values")
        require(bool(np.all(arr >= 0.0)), name, raw, "must contain only values >= 0")
        return {"samples": tuple(float(x) for x in arr)}

    def _params(self) -> dict[str, Any]:
        return {"samples": list(self.samples)}

    def sample(self, rng: np.random.Generator,
               size: int | tuple[int, ...] | None = None) -> float | np.ndarray:
        idx = rng.integers(0, self._arr.size, size)
        return _out(self._arr[idx], size)

    @property
    def mean(self) -> float:
        m = math.fsum(self.samples) / len(self.samples)
        return min(max(m, self.lower), self.upper)  # guard the last-ulp rounding

    @property
    def variance(self) -> float:
        return float(np.var(self._arr))

    @property
    def lower(self) -> float:
        return float(np.min(self._arr))

    @property
    def upper(self) -> float:
        return float(np.max(self._arr))


KINDS: dict[str, type[Delay]] = {
    cls.kind: cls for cls in (Exponential, Normal, LogNormal, Uniform, Constant, Empirical)
}
