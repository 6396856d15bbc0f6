"""FedBuff: buffered asynchronous aggregation (Nguyen et al. 2022, ref. [24] of [A], [51] of [P]).

Clients upload pseudo-gradients ``Delta_i = w_{i,0} - w_{i,Q}``; the server adds each to a
buffer, weighted by a staleness function ``s(tau)`` of the update's staleness at arrival
(``tau`` = server steps since the client's download), and after ``K`` uploads (the buffer
size; [A] Section 5 uses ``Delta = 4``) takes the server step

    ``w <- w - eta_g * (1/K) sum_{k in buffer} s(tau_k) Delta_k``.

Weights: ``"none"`` (s = 1), ``"inverse_sqrt"`` (s = 1/sqrt(1 + tau), FedBuff's choice) and
``"polynomial"`` (s = (1 + tau)^(-a), FedAsync of Xie et al.).  With ``K = 1``, ``s = 1`` and
``eta_g = beta`` this is FedAsync exactly: ``0 + Delta`` and ``Delta / 1`` are exact, so the
iterates are bit-identical (tests/test_server_rules.py).
"""

from __future__ import annotations

import math

import numpy as np

from fedsim.errors import require
from fedsim.servers.base import Upload
from fedsim.servers.buffer import BufferedAverage

__all__ = ["FedBuffServer", "staleness_weight"]


def staleness_weight(kind: str, tau: int, exponent: float = 0.5) -> float:
    """The weight ``s(tau)`` of an update with staleness ``tau >= 0``."""
    if kind == "none":
        return 1.0
    if kind == "inverse_sqrt":
        return 1.0 / math.sqrt(1.0 + tau)
    if kind == "polynomial":
        return (1.0 + tau) ** (-exponent)
    require(False, "algorithm.staleness_weight", kind,
            "must be one of ['none', 'inverse_sqrt', 'polynomial']")
    return 1.0  # pragma: no cover


class FedBuffServer(BufferedAverage):
    """Buffer state (``acc``, ``fill``) and the aggregation step."""

    def __init__(self, dim: int, server_lr: float = 1.0, weight: str = "none",
                 exponent: float = 0.5) -> None:
        staleness_weight(weight, 0, exponent)
        super().__init__(dim)
        self.server_lr = float(server_lr)
        self.weight = weight
        self.exponent = float(exponent)

    def add(self, delta: np.ndarray, tau: int) -> None:
        """Buffer one upload ``delta`` of staleness ``tau`` (``delta`` may be overwritten)."""
        if self.weight != "none":
            np.multiply(delta, staleness_weight(self.weight, tau, self.exponent), out=delta)
        self.add_message(delta)

    def message(self, u: Upload) -> np.ndarray:
        """``s(tau) (w_read - w_new)``."""
        delta = self._msg
        np.subtract(u.read, u.new, out=delta)
        if self.weight != "none":
            np.multiply(delta, staleness_weight(self.weight, u.staleness, self.exponent),
                        out=delta)
        return delta

    def mix(self, w: np.ndarray, mean: np.ndarray) -> None:
        """``w -= server_lr * mean``."""
        if self.server_lr != 1.0:
            np.multiply(mean, self.server_lr, out=mean)
        np.subtract(w, mean, out=w)
