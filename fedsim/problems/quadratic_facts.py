"""What the constants and the exact personalised objectives read of a quadratic problem.

:class:`QuadraticFacts` is the interface of :class:`fedsim.problems.quadratic.QuadraticProblem`
that :mod:`~fedsim.problems.quadratic_constants` and
:mod:`~fedsim.problems.quadratic_personalized` use (THEORY_SPEC 9.1): the stacked client
matrices, their eigen-decompositions and the global minimiser.  Those modules annotate with it
instead of importing the problem class, which imports them.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

__all__ = ["QuadraticFacts"]


class QuadraticFacts(Protocol):
    """``f_i(x) = c_i + 0.5 (x - b_i)^T A_i (x - b_i)`` over ``n`` clients, stacked."""

    n: int
    noise: str                      # "additive" or "sampling"
    A_stack: np.ndarray             # (n, d, d) Hessians A_i
    b_stack: np.ndarray             # (n, d) client minimisers b_i
    c: np.ndarray                   # (n,) client minima c_i
    C_stack: np.ndarray             # (n, d, d) per-sample gradient-noise covariances C_i
    eigvals: np.ndarray             # (n, d) eigenvalues of A_i
    eigvecs: np.ndarray             # (n, d, d) eigenvectors of A_i (columns)
    noise_in_eigenbasis: np.ndarray  # (n, d) diag(V_i^T C_i V_i)
    shared_hessian: bool            # every A_i equal
    Abar: np.ndarray                # (d, d) mean Hessian
    x_star: np.ndarray              # (d,) global minimiser
    grad_at_xstar: np.ndarray       # (n, d) grad f_i(x*)
    f_star: float                   # min f

    @property
    def f_star_P(self) -> float:
        """``min_i c_i``."""
        ...
