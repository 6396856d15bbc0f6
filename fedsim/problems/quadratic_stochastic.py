"""The stochastic oracles of a quadratic problem (THEORY_SPEC section 9.1, noise models).

:class:`QuadraticStochasticOracles` is the part of
:class:`~fedsim.problems.quadratic.QuadraticProblem` that draws and uses batches; it reads
the problem's ``client_hessian(i)``, ``b_stack``, ``noise``, ``noise_factor``,
``eigvals``/``eigvecs``, ``dim`` and its Moreau objective ``me(lam)``.  A batch is one
d-vector (docs/INTERNALS.md 1):

* ``"additive"``: the mean noise ``e_D = chol(S_i) z / sqrt(m)``, ``batch_grad = A_i (w -
  b_i) + e_D``;
* ``"sampling"``: the sample mean ``xibar_D = b_i + chol(S_i) z / sqrt(m)``, ``batch_grad =
  A_i (w - xibar_D)``.

The per-sample Hessian is exactly ``A_i`` in both models (``batch_hvp = A_i v``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fedsim.problems.compiled import CompiledView
from fedsim.problems.quadratic_personalized import check_batch_size
from fedsim.problems.quadratic_view import quadratic_compiled_view

__all__ = ["QuadraticStochasticOracles"]


class QuadraticStochasticOracles:
    """Batches of a quadratic problem: draw, gradient, Hessian-vector product, the Option C
    inexact proximal solution, and the compiled view of them (module docstring)."""

    def compiled_view(self, batch: int) -> CompiledView:
        """The compiled oracles for batches of ``batch`` samples
        (:func:`fedsim.problems.quadratic_view.quadratic_compiled_view`), built once per
        batch size (its arrays are ``n d^2`` floats; the problem is immutable)."""
        views = self.__dict__.setdefault("_views", {})
        view = views.get(int(batch))
        if view is None:
            view = views[int(batch)] = quadratic_compiled_view(self, batch)
        return view

    def sample_batch(self, i: int, size: int, rng: np.random.Generator) -> np.ndarray:
        """A batch of ``size`` samples as one d-vector (draws exactly d standard normals).

        additive: ``e_D = chol(S_i) z / sqrt(size)``; sampling: ``xibar_D = b_i + chol(S_i) z
        / sqrt(size)``.
        """
        check_batch_size(size)
        e = self.noise_factor[i] @ rng.standard_normal(self.dim)
        e *= 1.0 / math.sqrt(size)
        if self.noise == "additive":
            return e
        e += self.b_stack[i]
        return e

    def batch_grad(self, i: int, w: np.ndarray, batch: np.ndarray) -> np.ndarray:
        """additive: A_i (w - b_i) + e_D; sampling: A_i (w - xibar_D)."""
        if self.noise == "additive":
            out = self.client_hessian(i) @ (w - self.b_stack[i])
            out += batch
            return out
        return self.client_hessian(i) @ (w - batch)

    def batch_hvp(self, i: int, w: np.ndarray, v: np.ndarray, batch: Any) -> np.ndarray:
        """A_i v (the per-sample Hessian is exactly A_i)."""
        return self.client_hessian(i) @ v

    def batch_theta_hat(self, i: int, w: np.ndarray, lam: float, batch: np.ndarray,
                        residual: np.ndarray | None = None) -> np.ndarray:
        """Minimiser of ``h_tilde(theta) = f_tilde_i(theta, D) + lam/2 ||theta - w||^2`` (Option C).

        additive: ``(A_i + lam I)^{-1}(A_i b_i - e_D + lam w)``; sampling: ``(A_i + lam I)^{-1}
        (A_i xibar_D + lam w)``.  Equals ``theta_hat_i(w) - (A_i + lam I)^{-1} (batch_grad -
        grad)`` since the batch gradient is the exact one plus a constant.  With ``residual``
        r, returns the controlled inexact solution ``theta* + (A_i + lam I)^{-1} r`` of
        THEORY_SPEC 9.1, for which ``grad h_tilde(theta) = r`` exactly (so nu = ||r||).
        """
        me = self.me(lam)
        if self.noise == "additive":
            err = batch
        else:
            err = self.client_hessian(i) @ (self.b_stack[i] - batch)
        if residual is not None:
            err = err - residual
        k = self.eigvecs[i]
        res = k @ ((k.T @ err) / (self.eigvals[i] + lam))
        return me.theta_hat(i, w) - res
