"""Scenario builders: one per theorem, in regime and deliberately out of regime.

Each builder returns a :class:`Case`: the simulated run sets it needs (engine scenario
dicts), and the verdict rows it produces (theorem, scenario, mode, horizon) with the bound
(a :class:`fedsim.theory.result.BoundResult` evaluated for exactly the constants of the simulated
problem), the exact oracle value where one exists, and the checks that only the simulation
can make (measured staleness against the declared tau).

Design rules (issue 6, THEORY_SPEC 9.3):

* **Theorems 1-3** run the bounded-window FedAsync model (THEORY_SPEC 10.2(a)): the
  uploader is i.i.d. uniform and the staleness is i.i.d. on {0..tau} by construction, so
  [P] Assumption 1 holds exactly with a provable tau, and the exact oracle
  :func:`fedsim.theory.oracle.fedasync_window_moments` gives the measured quantity without noise.
  Their step size eta = 1/(Q sqrt(L T)) depends on the horizon T, so every T is its own
  run set: a trajectory's running average is never compared with the bound of another T.
  Theorem 1 uses a quadratic with a shared Hessian (gamma_g finite, EXACT), Theorem 2 an
  unregularised logistic problem with anchor rows in every client (G, rho finite;
  quadratics are VACUOUS there), Theorem 3 a shared-Hessian quadratic with lam >= 7L and
  additive noise (so the paper's mu_c is valid, H3.y).
* **Theorem 7** runs AREA's iterate model (i.i.d. Poisson events) on strongly convex
  quadratics with client-specific Hessians and the Theorem 7 schedule; that schedule does
  not depend on K, so one trajectory gives the whole curve, and
  :func:`fedsim.theory.oracle.area_moments` gives the exact curve.
* **Theorem 8** runs the iterate model on an unregularised logistic problem (convex,
  B-Lipschitz, minimiser guaranteed by an anchor client) with the constant step of
  Theorem 8, which depends on K: one run set per K.  R is inflated by the minimiser's
  certified error (THEORY_SPEC 9.4).  The known counterexample (THEORY_SPEC 7.d) uses
  ``f_i(x) = |x + 1|`` from ``x_{s,0} = 0`` (the paper's ``|x|`` from 1, shifted).
* **Scales**: each theorem is built at L ~ 1 and at L << 1 (THEORY_SPEC 1.3, E-P17).
* **Out of regime** (negative control (a)): a step 10x the prescribed one; lam < 7L
  (Theorem 3); a declared tau smaller than the simulated staleness (Theorem 1); a
  fixed-count aggregation for AREA (Theorem 7).  Each must come out ``not_applicable``
  with the failing hypothesis named.

One module per paper: :mod:`fedsim.validation.scenarios.persafl` ([P] Theorems 1-3) and
:mod:`fedsim.validation.scenarios.area` ([A] Theorems 7-8), on the shared records of
:mod:`fedsim.validation.cases`.  Each module's ``GRIDS`` table (a
:class:`CaseGrid` per theorem) is collected in :data:`GRIDS`, which
:mod:`fedsim.validation.suites` reads when a suite runs; importing this package registers
nothing anywhere.
"""

from __future__ import annotations

from fedsim.validation.cases import (
    CLAIM_STATUSES,
    SEED,
    Case,
    CaseGrid,
    ExactSpec,
    Row,
    RunSpec,
    SimCheck,
    set_oracle_cache,
)
from fedsim.validation.scenarios import area as _area_grids
from fedsim.validation.scenarios import asypfl as _asypfl_grids
from fedsim.validation.scenarios import perfedavg as _perfedavg_grids
from fedsim.validation.scenarios import persafl as _persafl_grids
from fedsim.validation.scenarios.area import theorem7_case, theorem8_case, theorem8_counterexample
from fedsim.validation.scenarios.asypfl import (
    asypfl_case,
    asypfl_counterexample,
    asypfl_periods_counterexample,
)
from fedsim.validation.scenarios.perfedavg import perfedavg_case, perfedavg_counterexample
from fedsim.validation.scenarios.persafl import theorem1_case, theorem2_case, theorem3_case

__all__ = [
    "RunSpec", "ExactSpec", "Row", "SimCheck", "Case", "CaseGrid", "GRIDS", "CLAIM_STATUSES",
    "theorem1_case", "theorem2_case", "theorem3_case", "theorem7_case", "theorem8_case",
    "theorem8_counterexample", "set_oracle_cache", "SEED", "perfedavg_case", "asypfl_case",
    "asypfl_counterexample", "asypfl_periods_counterexample", "perfedavg_counterexample",
]

#: every built-in theorem's grids, in the registry's order (read by the suites when they run)
GRIDS: tuple[CaseGrid, ...] = (*_persafl_grids.GRIDS, *_area_grids.GRIDS,
                               *_perfedavg_grids.GRIDS, *_asypfl_grids.GRIDS)
