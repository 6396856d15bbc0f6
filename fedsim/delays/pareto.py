"""The Pareto (type I) delay: heavy-tailed compute times.

``X = scale (1 + Y)``, ``Y`` NumPy's Lomax draw ``rng.pareto(shape)``, so
``P(X > x) = (scale / x)^shape`` for ``x >= scale``.  Mean ``shape scale / (shape - 1)``
for ``shape > 1`` (else ``inf``); variance ``scale^2 shape / ((shape - 1)^2 (shape - 2))``
for ``shape > 2`` (else ``inf``).  Support ``[scale, inf)``: **unbounded**, so the
engine's provable staleness bound (:func:`fedsim.engine.staleness.physical_staleness_bound`,
which reads only the supports) is ``inf`` under it, and a theorem hypothesis "bounded delay"
(``tau_max < inf``) reads as failing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from fedsim.delays.base import REQUIRED, Delay, as_output
from fedsim.errors import check_number

__all__ = ["Pareto"]


@dataclass(frozen=True)
class Pareto(Delay):
    """``{kind = "pareto", shape = a, scale = x_m}``: ``P(X > x) = (x_m/x)^a``, ``x >= x_m``.

    Rules: ``0 < shape < inf``, ``0 < scale < inf``.
    """

    shape: float
    scale: float
    kind: ClassVar[str] = "pareto"

    @classmethod
    def _signature(cls) -> dict[str, Any]:
        return {"shape": REQUIRED, "scale": REQUIRED}

    @classmethod
    def _validate(cls, p: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
        shape = check_number(prefix + "shape", p["shape"], low=0.0, strict=True)
        scale = check_number(prefix + "scale", p["scale"], low=0.0, strict=True)
        return {"shape": shape, "scale": scale}

    def _params(self) -> dict[str, Any]:
        return {"shape": self.shape, "scale": self.scale}

    def sample(self, rng: np.random.Generator,
               size: int | tuple[int, ...] | None = None) -> float | np.ndarray:
        return as_output(self.scale * (1.0 + rng.pareto(self.shape, size)), size)

    @property
    def mean(self) -> float:
        a = self.shape
        return a * self.scale / (a - 1.0) if a > 1.0 else math.inf

    @property
    def variance(self) -> float:
        a = self.shape
        if a <= 2.0:
            return math.inf
        return self.scale ** 2 * a / ((a - 1.0) ** 2 * (a - 2.0))

    @property
    def lower(self) -> float:
        return self.scale

    @property
    def upper(self) -> float:
        return math.inf
