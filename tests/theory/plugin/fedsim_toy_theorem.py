"""A toy theorem shipped as a plug-in (the test of the ``fedsim.theorems`` entry-point group).

Statement (eq. (1) of no paper): for ``a >= 0`` and ``T >= 1``,
``E[X_T] <= a n / sqrt(T)``.  It exists only to show that a separately installed package can
add a theorem to ``fedsim bounds`` and to the registry without touching fedsim.
"""

from __future__ import annotations

import numpy as np
from fedsim.theory.params import Horizons
from fedsim.theory.registry import Theorem
from fedsim.theory.result import BoundResult, Hypothesis, Status

from fedsim.errors import check_number


def toy_bound(*, a: float, T: Horizons, n: int = 1, halve: bool = False) -> BoundResult:
    """``a n / sqrt(T)`` (eq. (1)); ``halve`` divides it by two."""
    a = check_number("a", a, low=0.0)
    Ts = np.asarray(T, dtype=np.float64)
    value = a * n / np.sqrt(Ts) / (2.0 if halve else 1.0)
    out = float(value) if value.ndim == 0 else value
    return BoundResult(value=out, status=Status.PROOF_LEVEL, terms={"main": out},
                       hypotheses=[Hypothesis("a >= 0", True, f"a = {a:g}")],
                       theorem="Toy Theorem 1", mode="toy")


THEOREM = Theorem(name="toy", function=toy_bound, label="[T] Toy Theorem 1",
                  paper="no paper (plug-in test)", hypotheses={"a >= 0": "a nonnegative"},
                  statuses=(Status.PROOF_LEVEL,), horizon="T",
                  help={"a": "the constant a", "n": "a count"})
