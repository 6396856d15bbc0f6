"""Linear programmes deciding whether a logistic loss has a minimiser (THEORY_SPEC 9.4).

With rows ``a_j = y_j x_j`` (and ``nu_reg = 0``) the loss is coercive iff no direction
``w != 0`` has every margin ``a_j^T w >= 0`` with one of them positive.  Three LPs decide:
the coercivity LP ``max sum_j a_j^T w`` s.t. ``a_j^T w >= 0``, ``|w_k| <= 1``; the strict
separability LP (every margin ``>= 1``); and, for weakly separable data, the LP finding the
rows that some recession direction separates strictly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedsim.errors import FedsimError

__all__ = ["Separability", "SeparabilityReport", "diagnose_separability", "separable_rows"]


@dataclass(frozen=True)
class Separability:
    """LP diagnosis of one data set (THEORY_SPEC 9.4), independent of ``nu_reg``.

    ``lp_max`` is ``max sum_j y_j x_j^T w`` s.t. ``y_j x_j^T w >= 0``, ``-1 <= w_k <= 1``;
    ``kind`` is ``"coercive"`` (lp_max = 0 and rank d: unique minimiser when
    nu_reg = 0), ``"attained_not_unique"`` (lp_max = 0, rank < d),
    ``"strictly_separable"`` (some w has every margin >= 1, verified on the LP
    witness: inf f = 0, not attained) or ``"weakly_separable"`` (lp_max > 0 but
    not strictly separable: no minimiser).  ``separable_rows`` are the indices
    ``S`` of the rows that some ``w`` with all margins ``>= 0`` makes strictly
    positive (all rows when strictly separable, none when lp_max = 0).
    """

    rows: int
    rank: int
    lp_max: float
    strictly_separable: bool
    kind: str
    separable_rows: tuple[int, ...] = ()

    @property
    def coercive(self) -> bool:
        """True if the unregularised loss is coercive (a unique minimiser exists)."""
        return self.kind == "coercive"

    @property
    def minimiser_exists(self) -> bool:
        """True if the unregularised loss attains its infimum."""
        return self.kind in ("coercive", "attained_not_unique")


@dataclass(frozen=True)
class SeparabilityReport:
    """Per-client and global :class:`Separability` (``whole`` is the union of all rows)."""

    clients: tuple[Separability, ...]
    whole: Separability

    def to_frame(self):  # -> pandas.DataFrame
        """One row per client plus a row ``"global"``."""
        import pandas as pd

        recs = [(str(i), s.rows, s.rank, s.lp_max, s.strictly_separable, s.kind)
                for i, s in enumerate(self.clients)]
        s = self.whole
        recs.append(("global", s.rows, s.rank, s.lp_max, s.strictly_separable, s.kind))
        return pd.DataFrame(recs, columns=["set", "rows", "rank", "lp_max",
                                           "strictly_separable", "kind"])


def diagnose_separability(rows: np.ndarray) -> Separability:
    from scipy.optimize import linprog  # scipy.optimize: 0.5 s to import (issue 19)

    M, d = rows.shape
    rank = int(np.linalg.matrix_rank(rows))
    res = linprog(-rows.sum(axis=0), A_ub=-rows, b_ub=np.zeros(M), bounds=[(-1.0, 1.0)] * d,
                  method="highs")
    if res.status != 0:
        raise FedsimError(f"coercivity LP failed: {res.message}")
    lp_max = max(0.0, -float(res.fun))
    tol = 1e-9 * max(1.0, float(np.abs(rows).sum()))
    strict = False
    res2 = linprog(np.zeros(d), A_ub=-rows, b_ub=-np.ones(M), bounds=[(None, None)] * d,
                   method="highs")
    if res2.status == 0:
        # verify the witness: every margin strictly positive => strictly separable
        strict = bool(np.min(rows @ res2.x) > 0.0)
    sep_rows: tuple[int, ...] = ()
    if strict:
        kind = "strictly_separable"
        sep_rows = tuple(range(M))
    elif lp_max > tol and (sep_rows := separable_rows(rows)):
        # decided on the scale-free LP (t_j in {0, 1}), not on lp_max against round-off
        kind = "weakly_separable"
    elif rank == d:
        kind = "coercive"
    else:
        kind = "attained_not_unique"
    return Separability(M, rank, lp_max, strict, kind, sep_rows)


def separable_rows(rows: np.ndarray) -> tuple[int, ...]:
    """Rows j that some w in C = {w: y_k x_k^T w >= 0 for all k} makes strictly positive.

    LP over (w, t): max sum_j t_j s.t. t_j <= a_j^T w, a_j^T w >= 0, 0 <= t_j <= 1.  A sum of
    scaled witnesses lies in the cone C and has margin >= 1 on every such row, so at the
    optimum t_j = 1 exactly on them and t_j = 0 elsewhere (rows outside S have a_j^T w = 0
    on all of C).
    """
    from scipy.optimize import linprog

    M, d = rows.shape
    eye = np.eye(M)
    A_ub = np.block([[-rows, eye], [-rows, np.zeros((M, M))]])
    b_ub = np.zeros(2 * M)
    c = np.concatenate([np.zeros(d), -np.ones(M)])
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, bounds=[(None, None)] * d + [(0.0, 1.0)] * M,
                  method="highs")
    if res.status != 0:
        raise FedsimError(f"separable-rows LP failed: {res.message}")
    return tuple(int(j) for j in np.flatnonzero(res.x[d:] > 0.5))
