"""The interface every objective implements (engine, theory and oracles rely on it).

A problem is ``f(w) = (1/n) sum_i f_i(w)`` over ``n`` clients in dimension
``dim``.  Stochastic gradients are drawn as opaque *batches*: a batch is drawn
once with :meth:`Problem.sample_batch` and then evaluated at any point with
:meth:`Problem.batch_grad` / :meth:`Problem.batch_hvp`.  This is what
PersA-FL's Options B and C need (THEORY_SPEC section 2.1): the same batch D is
used for every evaluation that the paper writes with D, and for Option C the
stochastic *function* ``f_tilde_i(., D)`` stays fixed during the inner solve.

Objectives of PersA-FL ([P] eq. (9)-(10), THEORY_SPEC section 2.1)::

    F^(b)(w) = (1/n) sum_i f_i(w - alpha grad f_i(w))            (MAML)
    F^(c)(w) = (1/n) sum_i min_theta f_i(theta) + lam/2||theta-w||^2   (Moreau envelope)
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from fedsim.problems.constants import ConstantsTable

__all__ = ["Problem"]


class Problem(ABC):
    """Abstract federated objective with known (tagged) constants.

    Subclasses set ``n`` (clients) and ``dim`` and implement the abstract
    methods.  All arrays are float64.  ``i`` is a client index in ``range(n)``.
    """

    n: int
    dim: int

    # --- deterministic oracles -------------------------------------------------
    @abstractmethod
    def loss(self, i: int, w: np.ndarray) -> float:
        """f_i(w)."""

    @abstractmethod
    def grad(self, i: int, w: np.ndarray) -> np.ndarray:
        """grad f_i(w)."""

    @abstractmethod
    def hess(self, i: int, w: np.ndarray) -> np.ndarray:
        """grad^2 f_i(w), a dim x dim matrix."""

    def hvp(self, i: int, w: np.ndarray, v: np.ndarray) -> np.ndarray:
        """grad^2 f_i(w) v (override for a matrix-free version)."""
        return self.hess(i, w) @ v

    def f(self, w: np.ndarray) -> float:
        """Global objective f(w) = mean_i f_i(w)."""
        return float(np.mean([self.loss(i, w) for i in range(self.n)]))

    def grad_f(self, w: np.ndarray) -> np.ndarray:
        """grad f(w)."""
        return np.mean([self.grad(i, w) for i in range(self.n)], axis=0)

    # --- stochastic oracles ----------------------------------------------------
    @abstractmethod
    def sample_batch(self, i: int, size: int, rng: np.random.Generator) -> Any:
        """Draw a minibatch D of ``size`` samples for client ``i`` (opaque object)."""

    @abstractmethod
    def batch_grad(self, i: int, w: np.ndarray, batch: Any) -> np.ndarray:
        """grad f_tilde_i(w, D): unbiased for grad f_i(w), variance <= sigma_g2/|D|."""

    @abstractmethod
    def batch_hvp(self, i: int, w: np.ndarray, v: np.ndarray, batch: Any) -> np.ndarray:
        """grad^2 f_tilde_i(w, D) v."""

    # --- personalised objectives ([P] eq. (9), (10)) ---------------------------
    def grad_F_maml(self, w: np.ndarray, alpha: float) -> np.ndarray:
        """grad F^(b)(w) = mean_i (I - alpha H_i(w)) grad f_i(w - alpha grad f_i(w))."""
        out = np.zeros(self.dim)
        for i in range(self.n):
            inner = w - alpha * self.grad(i, w)
            g = self.grad(i, inner)
            out += g - alpha * self.hvp(i, w, g)
        return out / self.n

    def F_maml(self, w: np.ndarray, alpha: float) -> float:
        """F^(b)(w) = mean_i f_i(w - alpha grad f_i(w))."""
        return float(np.mean([self.loss(i, w - alpha * self.grad(i, w)) for i in range(self.n)]))

    @abstractmethod
    def theta_hat(self, i: int, w: np.ndarray, lam: float) -> np.ndarray:
        """argmin_theta f_i(theta) + lam/2 ||theta - w||^2 (exact or to 1e-13)."""

    def grad_F_me(self, w: np.ndarray, lam: float) -> np.ndarray:
        """grad F^(c)(w) = mean_i lam (w - theta_hat_i(w))."""
        return lam * np.mean([w - self.theta_hat(i, w, lam) for i in range(self.n)], axis=0)

    def F_me(self, w: np.ndarray, lam: float) -> float:
        """F^(c)(w) = mean_i [f_i(theta_hat_i) + lam/2 ||theta_hat_i - w||^2]."""
        tot = 0.0
        for i in range(self.n):
            th = self.theta_hat(i, w, lam)
            tot += self.loss(i, th) + 0.5 * lam * float(np.dot(th - w, th - w))
        return tot / self.n

    # --- constants -------------------------------------------------------------
    @property
    def constants(self) -> ConstantsTable:
        """The table of THEORY_SPEC section 9 (L, mu, rho, sigma_g2, ...).

        Built by :meth:`_build_table` on first access (some entries need solves) and cached
        in ``self._table``; a problem whose table changes (AutogradProblem's estimates)
        overrides this property instead.
        """
        table = getattr(self, "_table", None)
        if table is None:
            table = self._build_table()
            self._table = table
        return table

    def _build_table(self) -> ConstantsTable:
        """Compute the constants table (subclasses implement this or override ``constants``)."""
        raise NotImplementedError(f"{type(self).__name__} must implement _build_table() or "
                                  "override the constants property")

    def constants_frame(self):  # -> pandas.DataFrame
        """``constants`` as a DataFrame with columns name, value, tag, reason."""
        return self.constants.to_frame()
