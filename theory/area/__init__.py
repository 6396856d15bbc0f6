"""AREA (Iakovidou & Kim, [A]) Theorems 7 and 8: constants, step sizes and bounds.

THEORY_SPEC sections 2.2 (execution model), 6 (Theorem 7), 7 (Theorem 8) and 8 ([A] errata).
One module per idea:

* :mod:`fedsim.theory.area.constants` -- :func:`area_constants` (6.b/6.c), :func:`step_size` (H7.4),
  :func:`optimal_server_rate` (7.c);
* :mod:`fedsim.theory.area.certified` -- the certified recursions (C1)/(C2) of 6.d (C);
* :mod:`fedsim.theory.area.levels` -- the leading terms (B) and the rate shape (A) of 6.d;
* :mod:`fedsim.theory.area.theorem7` -- :func:`theorem7` (three levels; only (C) is a bound);
* :mod:`fedsim.theory.area.theorem8` -- :func:`theorem8` (paper / corrected constant, E-A6, or the
  general-alpha proof-level bound).

All evaluators take keyword arguments only; an array of horizons K gives arrays out.
"""

from __future__ import annotations

from fedsim.theory.area.constants import SCHEDULE, area_constants, optimal_server_rate, step_size
from fedsim.theory.area.theorem7 import theorem7
from fedsim.theory.area.theorem8 import theorem8

__all__ = [
    "area_constants",
    "step_size",
    "optimal_server_rate",
    "theorem7",
    "theorem8",
    "SCHEDULE",
]
