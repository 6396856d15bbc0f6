"""PersA-FL Theorems 1-3 and the Lemma 1-7 constants, as :class:`BoundResult` values.

Source: Toghani, Lee, Uribe, *PersA-FL* ([P], ``shared/papers/persa-fl.md``); every
formula below is the one of THEORY_SPEC sections 3 (Thm 1), 4 (Thm 2), 5 (Thm 3),
with the [P] errata of section 8 applied where stated.

Conventions shared by the three evaluators
------------------------------------------
* ``eta=None`` means the theorem's prescribed client step ``1/(Q sqrt(L T))`` (``L_b``
  for Thm 2, ``L_c`` for Thm 3); ``step_sizes`` always reports ``eta`` and ``beta``.
* In the paper/corrected/literal modes, ``eta`` or ``beta`` different from the
  prescription (relative tolerance ``REL_TOL``) is a failing hypothesis.  Horizon
  thresholds are compared with the same relative tolerance, so ``T`` equal to a
  threshold up to rounding meets it.
* Status (THEORY_SPEC 1.4): a checkable hypothesis that fails gives ``NOT_APPLICABLE``
  and ``terms["value_if_hypotheses_ignored"]``; ``value`` is always the formula's
  number (``value == sum`` of the other terms), so only ``result.is_bound`` certifies it.
* Infinite constants (THEORY_SPEC 1.5, 9.3, 12.7).  Assumptions 2-4, shared by all
  three theorems, fail globally when their constant is infinite: ``f_gap = inf``
  (some f_i unbounded below), ``sigma_g2 = inf``, ``gamma_g2 = inf`` give
  ``NOT_APPLICABLE`` (e.g. quadratics with unequal A_i: gamma_g = inf).  The
  second-order/bounded-gradient constants of Assumptions 5-6 (``rho``, ``sigma_h2``,
  ``gamma_h2``, ``G``), used by Thm 2 only through Lemmas 1-4, hold *formally* when
  infinite: the bound is ``+inf`` with status ``VACUOUS`` (quadratic Thm 2: G = inf)
  -- unless the infinity reaches ``L_b`` (alpha rho G = inf), where the horizon
  hypothesis ``T >= 64 L_b`` fails and the status is ``NOT_APPLICABLE``.
  ``0 * inf = 0`` is used only where the zero factor is an exact zero of the proof:
  ``alpha``, ``rho``, ``sigma_h2``, ``gamma_h2``, ``G``, ``sigma_g2`` in Lemmas 1-3,
  and ``gamma_g2 = 0`` in Lemma 7 (identical gradients give identical envelopes).
* Arrays of ``T`` give arrays of values and terms; the status is the worst over the
  horizons and ``derived_constants["status_per_T"]`` lists each one.

One module per idea: :mod:`fedsim.theory.persafl.lemmas` (Lemmas 1-7),
:mod:`fedsim.theory.persafl.theorem1`, :mod:`fedsim.theory.persafl.theorem2`,
:mod:`fedsim.theory.persafl.theorem3`; the conventions they share with
the other papers' theorems live in :mod:`fedsim.theory.conventions` (checks, ``0*inf``,
``f_lower``) and :mod:`fedsim.theory.assembly` (hypotheses, status).
"""

from __future__ import annotations

from fedsim.theory.conventions import REL_TOL
from fedsim.theory.persafl.lemmas import maml_constants, me_constants
from fedsim.theory.persafl.theorem1 import theorem1
from fedsim.theory.persafl.theorem2 import theorem2
from fedsim.theory.persafl.theorem3 import theorem3

__all__ = ["REL_TOL", "maml_constants", "me_constants", "theorem1", "theorem2", "theorem3"]
