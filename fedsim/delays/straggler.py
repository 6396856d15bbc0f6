"""The rare-straggler mixture: with probability ``p`` a draw of the ``base`` delay is
multiplied by ``m >= 1``.

``X = D (1 + (m - 1) B)``, ``D ~ base``, ``B ~ Bernoulli(p)`` independent.  Mean
``E D (1 - p + p m)``; ``E X^2 = E D^2 (1 - p + p m^2)``, variance ``E X^2 - (E X)^2``.
Support: ``lower = base.lower``; ``upper = m base.upper`` when ``p > 0`` (else
``base.upper``), so the engine's provable staleness bound (which reads only the supports)
is finite exactly when the base support is bounded away from 0 and above -- e.g. a
``constant`` or ``uniform`` base -- and grows with ``m``: the rare straggler raises
``tau_max`` while leaving the concurrency ``tau_C`` (the number of busy clients) unchanged.

Draw order: ``base.sample(rng, size)`` then ``rng.random(size)`` (one block each), so a
block of ``size`` is not the concatenation of two smaller blocks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from fedsim.delays.base import REQUIRED, Delay, as_output
from fedsim.errors import check_number, require

__all__ = ["Straggler"]


@dataclass(frozen=True)
class Straggler(Delay):
    """``{kind = "straggler", base = {...}, p = 0.01, m = 20}``.

    Rules: ``base`` a delay table; ``0 <= p <= 1``; ``1 <= m < inf``.
    """

    base: Delay
    p: float
    m: float
    kind: ClassVar[str] = "straggler"

    @classmethod
    def _signature(cls) -> dict[str, Any]:
        return {"base": REQUIRED, "p": REQUIRED, "m": REQUIRED}

    @classmethod
    def _validate(cls, p: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
        base = p["base"]
        if not isinstance(base, Delay):
            base = Delay.from_dict(base, prefix + "base")
        require(not isinstance(base, Straggler), prefix + "base", base.kind,
                "must not itself be a straggler mixture")
        prob = check_number(prefix + "p", p["p"], low=0.0, high=1.0)
        m = check_number(prefix + "m", p["m"], low=1.0)
        return {"base": base, "p": prob, "m": m}

    def _params(self) -> dict[str, Any]:
        return {"base": self.base.to_dict(), "p": self.p, "m": self.m}

    def sample(self, rng: np.random.Generator,
               size: int | tuple[int, ...] | None = None) -> float | np.ndarray:
        d = np.asarray(self.base.sample(rng, size), dtype=np.float64)
        slow = rng.random(size) < self.p
        return as_output(np.where(slow, d * self.m, d), size)

    @property
    def mean(self) -> float:
        return self.base.mean * (1.0 - self.p + self.p * self.m)

    @property
    def variance(self) -> float:
        second = self.base.variance + self.base.mean ** 2
        if not math.isfinite(second):
            return math.inf
        return second * (1.0 - self.p + self.p * self.m ** 2) - self.mean ** 2

    @property
    def lower(self) -> float:
        return self.base.lower

    @property
    def upper(self) -> float:
        return self.base.upper * self.m if self.p > 0.0 else self.base.upper
