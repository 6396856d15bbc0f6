"""Objectives with tagged constants (THEORY_SPEC section 9).

* :class:`QuadraticProblem` -- quadratic clients, constants EXACT (9.1);
* :class:`LogisticProblem` -- binary logistic regression, constants EXACT/UPPER/NUMERIC
  (9.2, 9.4); data from :mod:`fedsim.problems.data` (synthetic or scikit-learn's bundled
  digits);
* :class:`AutogradProblem` -- any per-sample loss written in ``autograd.numpy``; constants
  user-supplied or estimated, never EXACT;
* :class:`NormProblem` -- ``B ||x - c_i||``, convex, B-Lipschitz, non-smooth (the
  Theorem 8 counterexample of 7.d).

The names load lazily (issue 19: ``fedsim run`` on a quadratic imports neither autograd
nor the logistic problem's scipy.optimize).
"""

from fedsim.lazy import lazy_exports

#: public name -> (module, attribute), imported on first use
_LAZY: dict[str, tuple[str, str]] = {
    "Problem": ("fedsim.problems.base", "Problem"),
    "Constant": ("fedsim.problems.constants", "Constant"),
    "ConstantsTable": ("fedsim.problems.constants", "ConstantsTable"),
    "Tag": ("fedsim.problems.constants", "Tag"),
    "QuadraticProblem": ("fedsim.problems.quadratic", "QuadraticProblem"),
    "LogisticProblem": ("fedsim.problems.logistic", "LogisticProblem"),
    "Certificate": ("fedsim.problems.logistic", "Certificate"),
    "AutogradProblem": ("fedsim.problems.autodiff", "AutogradProblem"),
    "logistic_batch_loss": ("fedsim.problems.autodiff", "logistic_batch_loss"),
    "NormProblem": ("fedsim.problems.nonsmooth", "NormProblem"),
}

__all__ = list(_LAZY)

__getattr__, __dir__ = lazy_exports("fedsim.problems", _LAZY, globals())
