"""Asynchronous FedAvg (AS-FedAvg) as run in [A]'s experiments (Section 5).

"For S-FedAvg and AS-FedAvg, clients share their local model estimates ... All
asynchronous methods use the buffered aggregation policy of [24]: global updates are
triggered by the reception of Delta = 4 client updates."  So a client downloads the server
model, runs its local SGD steps, and uploads the resulting *model*; the server buffers the
models and, when the trigger fires, replaces its model by their average:

    ``x_s <- x_s + beta (mean(buffer) - x_s)``   (``beta = 1``: ``x_s <- mean(buffer)``).

[A] does not state a server mixing weight; ``beta`` (default 1, the plain average) is this
package's extension and is documented as such.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ASFedAvgServer"]


class ASFedAvgServer:
    """Buffer of uploaded models and the averaging step."""

    def __init__(self, dim: int, beta: float = 1.0) -> None:
        self.acc = np.zeros(dim)
        self.fill = 0
        self.beta = float(beta)
        self._tmp = np.empty(dim)

    def add(self, model: np.ndarray) -> None:
        """Buffer one uploaded model."""
        np.add(self.acc, model, out=self.acc)
        self.fill += 1

    def apply(self, w: np.ndarray) -> int:
        """In place: ``w <- w + beta (acc/fill - w)``; empties the buffer; returns the fill."""
        k = self.fill
        if k == 0:
            return 0
        np.divide(self.acc, float(k), out=self._tmp)
        if self.beta == 1.0:
            np.copyto(w, self._tmp)
        else:
            np.subtract(self._tmp, w, out=self._tmp)
            np.multiply(self._tmp, self.beta, out=self._tmp)
            np.add(w, self._tmp, out=w)
        self.acc.fill(0.0)
        self.fill = 0
        return k
