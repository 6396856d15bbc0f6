"""Exact-expectation oracles: the measured quantities of the theorems, computed exactly.

THEORY_SPEC section 10.  Four oracles, none of which simulates anything:

* :func:`area_moments` -- AREA ([A] Appendix A model, THEORY_SPEC 2.2) on quadratic clients
  with Gaussian gradient noise.  The first and second moments of the stacked centred state
  ``z_k = (x_1..x_n, y_1..y_n, x_s) - x*`` obey an exact affine recursion (section 10.1, block
  form); augmented with ``Ssum_k = sum_{j<k} (x_{s,j} - x*)`` it also gives the ergodic
  average of Theorem 8.  Cost O(n^2 d^3) per step, never the N^2 x N^2 map.
* :func:`fedasync_window_moments` -- FedAsync / PersA-FL Options A, B (exact Hessian), C
  (exact inner solve) in the bounded-window model of section 10.2(a), which satisfies [P]
  Assumption 1 exactly; gives the LHS of [P] Theorems 1-3 exactly.
* :func:`fedasync_expcycle_moments` -- the always-busy exponential-cycle model of 10.2(b).
  Exact too, but [P] Assumption 1 fails there (staleness is a geometric mixture, unbounded);
  the result says so in ``DataFrame.attrs``.
* :func:`enumerate_events` -- exact expectation by enumerating AREA event sequences for a
  deterministic (sub)gradient oracle, merging bit-identical states (section 7.d).  Works for
  any problem, including non-smooth ones; it is the tool behind the Theorem 8 counterexample.

Every oracle returns a :class:`pandas.DataFrame` whose ``attrs`` carry the model flags.

One module per oracle: :mod:`fedsim.theory.oracle.area`, :mod:`fedsim.theory.oracle.fedasync`,
:mod:`fedsim.theory.oracle.enumerate`; the shared checks and client maps in ``_common``.
"""

from __future__ import annotations

from fedsim.theory.oracle._common import PSD_RTOL, local_affine_map
from fedsim.theory.oracle.area import area_moments
from fedsim.theory.oracle.enumerate import enumerate_events
from fedsim.theory.oracle.fedasync import (
    expcycle_staleness_pmf,
    fedasync_expcycle_moments,
    fedasync_window_moments,
)

__all__ = [
    "area_moments",
    "fedasync_window_moments",
    "fedasync_expcycle_moments",
    "expcycle_staleness_pmf",
    "enumerate_events",
    "local_affine_map",
    "PSD_RTOL",
]
