"""The simple delay families: exponential, log-normal, uniform and constant.

Each is a frozen dataclass with closed-form moments (given in its docstring) and
support; its parameters are checked with :mod:`fedsim.errors`'s validators.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from fedsim.delays.base import REQUIRED, Delay, as_output
from fedsim.errors import check_number, require

__all__ = ["Exponential", "LogNormal", "Uniform", "Constant"]

_INF = math.inf


@dataclass(frozen=True)
class Exponential(Delay):
    """Exponential delay with ``rate`` lambda > 0: mean 1/lambda, variance 1/lambda^2."""

    rate: float
    kind: ClassVar[str] = "exponential"

    @classmethod
    def _signature(cls) -> dict[str, Any]:
        return {"rate": REQUIRED}

    @classmethod
    def _validate(cls, p: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
        rate = check_number(prefix + "rate", p["rate"], allow_inf=True)
        require(rate > 0.0, prefix + "rate", p["rate"], "must be > 0")
        require(rate < _INF, prefix + "rate", p["rate"], "must be finite")
        require(1.0 / rate < _INF, prefix + "rate", p["rate"],
                "must be large enough that the mean 1/rate is finite")
        return {"rate": rate}

    def _params(self) -> dict[str, Any]:
        return {"rate": self.rate}

    def sample(self, rng: np.random.Generator,
               size: int | tuple[int, ...] | None = None) -> float | np.ndarray:
        return as_output(rng.exponential(1.0 / self.rate, size), size)

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
        return {"mu": REQUIRED, "sigma": REQUIRED}

    @classmethod
    def _validate(cls, p: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
        mu = check_number(prefix + "mu", p["mu"], allow_inf=True)
        require(math.isfinite(mu), prefix + "mu", p["mu"], "must be finite")
        sigma = check_number(prefix + "sigma", p["sigma"], allow_inf=True)
        require(sigma > 0.0, prefix + "sigma", p["sigma"], "must be > 0")
        require(sigma < _INF, prefix + "sigma", p["sigma"], "must be finite")
        require(mu + sigma * sigma < 350.0, prefix + "sigma", p["sigma"],
                f"must satisfy mu + sigma^2 < 350 so the variance is finite (mu={mu!r})")
        return {"mu": mu, "sigma": sigma}

    def _params(self) -> dict[str, Any]:
        return {"mu": self.mu, "sigma": self.sigma}

    def sample(self, rng: np.random.Generator,
               size: int | tuple[int, ...] | None = None) -> float | np.ndarray:
        return as_output(rng.lognormal(self.mu, self.sigma, size), size)

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
        return {"low": REQUIRED, "high": REQUIRED}

    @classmethod
    def _validate(cls, p: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
        low = check_number(prefix + "low", p["low"], allow_inf=True)
        require(0.0 <= low < _INF, prefix + "low", p["low"],
                "must be >= 0 and finite (delays are durations)")
        high = check_number(prefix + "high", p["high"], allow_inf=True)
        require(low <= high < _INF, prefix + "high", p["high"],
                f"must be finite and >= low={low!r}")
        return {"low": low, "high": high}

    def _params(self) -> dict[str, Any]:
        return {"low": self.low, "high": self.high}

    def sample(self, rng: np.random.Generator,
               size: int | tuple[int, ...] | None = None) -> float | np.ndarray:
        return as_output(rng.uniform(self.low, self.high, size), size)

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


@dataclass(frozen=True)
class Constant(Delay):
    """A deterministic delay ``value`` (0 allowed).  ``sample`` does not consume ``rng``."""

    value: float
    kind: ClassVar[str] = "constant"

    @classmethod
    def _signature(cls) -> dict[str, Any]:
        return {"value": REQUIRED}

    @classmethod
    def _validate(cls, p: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
        value = check_number(prefix + "value", p["value"], allow_inf=True)
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
