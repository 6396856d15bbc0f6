"""Asynchronous FedAvg (AS-FedAvg) as run in [A]'s experiments (Section 5).

"For S-FedAvg and AS-FedAvg, clients share their local model estimates ... All
asynchronous methods use the buffered aggregation policy of [24]: global updates are
triggered by the reception of Delta = 4 client updates."  So a client downloads the server
model, runs its local SGD steps, and uploads the resulting *model*; the server buffers the
models and, when the trigger fires, replaces its model by their average:

    ``x_s <- x_s + beta (mean(buffer) - x_s)``   (``beta = 1``: ``x_s <- mean(buffer)``).

[A] does not state a server mixing weight; ``beta`` (default 1, the plain average) is this
package's extension and is documented as such.

Written once, compiled: :func:`asfedavg_message` and :func:`asfedavg_mix`, bound into the
buffered step by :func:`fedsim.servers.buffer.buffered_apply_for` (:data:`asfedavg_step`);
``fp = [beta]``.
"""

from __future__ import annotations

import numpy as np

from fedsim.jit import jit
from fedsim.servers.buffer import BufferedAverage, buffered_apply_for

__all__ = ["ASFedAvgServer", "asfedavg_message", "asfedavg_mix", "asfedavg_step"]


@jit(inline=True)
def asfedavg_message(out, read, new, tau, fp):
    """The uploaded model itself."""
    for m in range(out.shape[0]):
        out[m] = new[m]
    return 0


@jit(inline=True)
def asfedavg_mix(w, mean, fp):
    """``w <- w + beta (mean - w)`` (``beta = 1``: ``w <- mean``)."""
    beta = fp[0]
    for m in range(w.shape[0]):
        if beta == 1.0:
            w[m] = mean[m]
        else:
            w[m] = w[m] + (mean[m] - w[m]) * beta
    return 0


#: the AS-FedAvg server step in the replay's uniform shape
asfedavg_step = buffered_apply_for(asfedavg_message, asfedavg_mix)


class ASFedAvgServer(BufferedAverage):
    """AS-FedAvg's parameter and the server-rule shape (:data:`asfedavg_step`)."""

    step = staticmethod(asfedavg_step)
    message = staticmethod(asfedavg_message)

    def __init__(self, dim: int, beta: float = 1.0) -> None:
        super().__init__(dim)
        self.beta = float(beta)

    def add(self, model: np.ndarray) -> None:
        """Buffer one uploaded model."""
        self.add_upload(model, model)

    def params(self) -> np.ndarray:
        """``fp = [beta]``."""
        return np.array([self.beta])
