"""The empirical delay: resampling a recorded list of durations.

Use it to replay measured client delays (e.g. from a trace of a real deployment).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from fedsim.delays.base import REQUIRED, Delay, as_output
from fedsim.errors import ConfigError, require

__all__ = ["Empirical"]


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
        return {"samples": REQUIRED}

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
        return as_output(self._arr[idx], size)

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
