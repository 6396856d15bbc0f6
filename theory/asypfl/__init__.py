"""[Y] AsyPFL (Ma, Lu, Li, Cui 2022) Theorems 1-2 and the exact tick-model oracle.

:mod:`fedsim.theory.asypfl.theorem1` (eq. (5)), :mod:`fedsim.theory.asypfl.theorem2` (eq. (6)),
:mod:`fedsim.theory.asypfl.oracle` (the tick model of eqs. (3)-(4) on quadratics, exact first and
second moments).  The audit is docs/theory/asypfl.md.
"""

from __future__ import annotations

from fedsim.theory.asypfl.oracle import tick_oracle
from fedsim.theory.asypfl.theorem1 import theorem1
from fedsim.theory.asypfl.theorem2 import gamma_t2, theorem2

__all__ = ["theorem1", "theorem2", "gamma_t2", "tick_oracle"]
