"""The weighted logistic objective: the shared numerical kernel of f_i and f (THEORY_SPEC 9.2).

``sum_j c_j log(1 + exp(-a_j^T w)) + nu/2 ||w||^2`` with rows ``a_j = y_j x_j`` and weights
``c_j`` (``1/m_i`` for a client, ``1/(n m_i)`` for the whole), evaluated stably through
``np.logaddexp`` and ``scipy.special.expit``; plus the sigmoid constants of 9.2 and
``as_client_arrays``, the checks of the per-client ``(X_i, y_i)`` arrays (labels in
{-1, +1}) that :class:`fedsim.problems.logistic.LogisticProblem` is built from.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import expit

from fedsim.errors import ConfigError, check_finite, require

__all__ = ["S2_SUP", "Z_S2_ARGMAX", "WeightedLogistic", "as_client_arrays"]

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


def as_client_arrays(X: Any, y: Any) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per-client float64 ``(m_i, d)`` features and ``-1/+1`` labels, checked (ConfigError
    naming ``X[i]``/``y[i]``, the value and the rule)."""
    for name, obj in (("X", X), ("y", y)):
        require(isinstance(obj, (list, tuple)), name, type(obj).__name__,
                "must be a list with one array per client")
    require(len(X) >= 1, "X", len(X), "must hold at least one client")
    require(len(y) == len(X), "len(y)", len(y), f"must equal len(X) = {len(X)}")
    Xs: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    d = None
    for i, (Xi, yi) in enumerate(zip(X, y, strict=True)):
        try:
            Xi = np.array(Xi, dtype=np.float64)
            yi = np.array(yi, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"X[{i}] and y[{i}] must be numeric arrays ({exc})") from None
        require(Xi.ndim == 2, f"X[{i}].ndim", Xi.ndim, "must be 2 (rows m_i x features d)")
        require(Xi.shape[0] >= 1, f"X[{i}].shape", Xi.shape, "must have at least one row")
        require(Xi.shape[1] >= 1, f"X[{i}].shape", Xi.shape, "must have at least one column")
        if d is None:
            d = Xi.shape[1]
        require(Xi.shape[1] == d, f"X[{i}].shape", Xi.shape, f"must have d = {d} columns")
        require(yi.shape == (Xi.shape[0],), f"y[{i}].shape", yi.shape,
                f"must be ({Xi.shape[0]},) to match X[{i}]")
        check_finite(f"X[{i}]", Xi)
        check_finite(f"y[{i}]", yi)
        bad = yi[(yi != 1.0) & (yi != -1.0)]
        if bad.size:
            raise ConfigError(f"y[{i}] must contain only -1/+1 labels, got {float(bad[0])!r}")
        Xs.append(Xi)
        ys.append(yi)
    return Xs, ys
