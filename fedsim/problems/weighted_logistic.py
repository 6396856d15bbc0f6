"""The weighted logistic objective: the shared numerical kernel of f_i and f (THEORY_SPEC 9.2).

``sum_j c_j log(1 + exp(-a_j^T w)) + nu/2 ||w||^2`` with rows ``a_j = y_j x_j`` and weights
``c_j`` (``1/m_i`` for a client, ``1/(n m_i)`` for the whole), evaluated stably through
``np.logaddexp`` and ``scipy.special.expit``; plus the sigmoid constants of 9.2.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import expit

__all__ = ["S2_SUP", "Z_S2_ARGMAX", "WeightedLogistic"]

#: sup_z |s''(z)| = 1/(6 sqrt 3) for the sigmoid s (THEORY_SPEC 9.2, derivations)
S2_SUP: float = 1.0 / (6.0 * math.sqrt(3.0))
#: the maximisers of |s''| are z = +-ln(2 + sqrt 3) (THEORY_SPEC 9.2)
Z_S2_ARGMAX: float = math.log(2.0 + math.sqrt(3.0))

_EPS = float(np.finfo(np.float64).eps)


class WeightedLogistic:
    """``sum_j c_j log(1 + exp(-a_j^T w)) + nu/2 ||w||^2`` with rows ``a_j = y_j x_j``."""

    def __init__(self, rows: np.ndarray, weights: np.ndarray, nu: float) -> None:
        self.rows = rows
        self.weights = weights
        self.nu = nu
        self.dim = rows.shape[1]
        self.row_norms = np.linalg.norm(rows, axis=1)

    def value(self, w: np.ndarray) -> float:
        z = self.rows @ w
        return float(self.weights @ np.logaddexp(0.0, -z) + 0.5 * self.nu * (w @ w))

    def grad(self, w: np.ndarray) -> np.ndarray:
        z = self.rows @ w
        return -(self.rows.T @ (self.weights * expit(-z))) + self.nu * w

    def hess(self, w: np.ndarray) -> np.ndarray:
        z = self.rows @ w
        dw = self.weights * expit(z) * expit(-z)
        H = (self.rows.T * dw) @ self.rows
        H[np.diag_indices_from(H)] += self.nu
        return H

    def hvp(self, w: np.ndarray, v: np.ndarray) -> np.ndarray:
        z = self.rows @ w
        dw = self.weights * expit(z) * expit(-z)
        return self.rows.T @ (dw * (self.rows @ v)) + self.nu * v

    def grad_error_bound(self, w: np.ndarray) -> float:
        """Floating-point allowance for the computed gradient (standard summation bound).

        ``|fl(sum) - sum| <= gamma_k sum |terms|`` with ``gamma_k ~ k eps``; the margins,
        the sigmoid and the products add a few relative eps each, which the ``+ d + 10``
        covers.  Used so that certificates do not assume the computed gradient is exact.
        """
        k = self.rows.shape[0] + self.dim + 10
        scale = float(self.weights @ self.row_norms) + self.nu * float(np.linalg.norm(w))
        return 2.0 * k * _EPS * scale

