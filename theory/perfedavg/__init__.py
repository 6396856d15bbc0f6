"""Per-FedAvg ([F] Fallah, Mokhtari, Ozdaglar 2020) Theorem 4.5 and its exact quadratic oracle.

:mod:`fedsim.theory.perfedavg.theorem4_5` evaluates the explicit bound of App. G (four modes);
:mod:`fedsim.theory.perfedavg.oracle` computes the measured quantity exactly on quadratics with a
shared Hessian (any participation fraction).  The audit is docs/theory/per-fedavg.md.
"""

from __future__ import annotations

from fedsim.theory.perfedavg.oracle import perfedavg_quadratic_exact
from fedsim.theory.perfedavg.theorem4_5 import perfedavg_constants, theorem4_5

__all__ = ["theorem4_5", "perfedavg_constants", "perfedavg_quadratic_exact"]
