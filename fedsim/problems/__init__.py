"""Objectives with tagged constants (THEORY_SPEC section 9).

* :class:`QuadraticProblem` -- quadratic clients, constants EXACT (9.1);
* :class:`LogisticProblem` -- binary logistic regression, constants EXACT/UPPER/NUMERIC
  (9.2, 9.4); data from :mod:`fedsim.problems.data` (synthetic or scikit-learn's bundled
  digits);
* :class:`AutogradProblem` -- any per-sample loss written in ``autograd.numpy``; constants
  user-supplied or estimated, never EXACT;
* :class:`NormProblem` -- ``B ||x - c_i||``, convex, B-Lipschitz, non-smooth (the
  Theorem 8 counterexample of 7.d).
"""

from fedsim.problems.autodiff import AutogradProblem, logistic_batch_loss
from fedsim.problems.base import Problem
from fedsim.problems.constants import Constant, ConstantsTable, Tag
from fedsim.problems.logistic import Certificate, LogisticProblem
from fedsim.problems.nonsmooth import NormProblem
from fedsim.problems.quadratic import QuadraticProblem

__all__ = ["Problem", "Constant", "ConstantsTable", "Tag", "QuadraticProblem",
           "LogisticProblem", "Certificate", "AutogradProblem", "logistic_batch_loss",
           "NormProblem"]
