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

from fedsim.servers.base import Upload
from fedsim.servers.buffer import BufferedAverage

__all__ = ["ASFedAvgServer"]


class ASFedAvgServer(BufferedAverage):
    """Buffer of uploaded models and the averaging step."""

    def __init__(self, dim: int, beta: float = 1.0) -> None:
        super().__init__(dim)
        self.beta = float(beta)

    def add(self, model: np.ndarray) -> None:
        """Buffer one uploaded model."""
        self.add_message(model)

    def message(self, u: Upload) -> np.ndarray:
        """The uploaded model itself."""
        return u.new

    def mix(self, w: np.ndarray, mean: np.ndarray) -> None:
        """``w <- w + beta (mean - w)`` (``beta = 1``: ``w <- mean``)."""
        if self.beta == 1.0:
            np.copyto(w, mean)
        else:
            np.subtract(mean, w, out=mean)
            np.multiply(mean, self.beta, out=mean)
            np.add(w, mean, out=w)
