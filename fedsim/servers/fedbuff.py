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

The rule is written once, compiled: :func:`fedbuff_message` and :func:`fedbuff_mix`, bound
into the buffered step by :func:`fedsim.servers.buffer.buffered_apply_for`
(:data:`fedbuff_step`).  ``fp = [server_lr, weight code (0 none, 1 inverse_sqrt,
2 polynomial), exponent]``.
"""

from __future__ import annotations

import math

import numpy as np

from fedsim.errors import require
from fedsim.jit import jit
from fedsim.servers.buffer import BufferedAverage, buffered_apply_for

__all__ = ["FedBuffServer", "staleness_weight", "fedbuff_message", "fedbuff_mix",
           "fedbuff_step", "WEIGHTS"]

#: staleness weight kinds, by their code in ``fp[1]``
WEIGHTS = ("none", "inverse_sqrt", "polynomial")


@jit(inline=True)
def _weight(code, tau, exponent):
    """``s(tau)`` of weight kind ``code`` (:data:`WEIGHTS`)."""
    if code == 1:
        return 1.0 / math.sqrt(1.0 + tau)
    if code == 2:
        return (1.0 + tau) ** (-exponent)
    return 1.0


def staleness_weight(kind: str, tau: int, exponent: float = 0.5) -> float:
    """The weight ``s(tau)`` of an update with staleness ``tau >= 0``."""
    require(kind in WEIGHTS, "algorithm.staleness_weight", kind, f"must be one of {list(WEIGHTS)}")
    return float(_weight.py_func(WEIGHTS.index(kind), tau, exponent))


@jit(inline=True)
def fedbuff_message(out, read, new, tau, fp):
    """``out = s(tau) (read - new)`` (no multiplication for ``s = 1``)."""
    code = int(fp[1])
    for m in range(out.shape[0]):
        out[m] = read[m] - new[m]
    if code != 0:
        s = _weight(code, tau, fp[2])
        for m in range(out.shape[0]):
            out[m] = out[m] * s
    return 0


@jit(inline=True)
def fedbuff_mix(w, mean, fp):
    """``w -= server_lr * mean`` (no multiplication for ``server_lr = 1``)."""
    lr = fp[0]
    for m in range(w.shape[0]):
        v = mean[m]
        if lr != 1.0:
            v = v * lr
        w[m] = w[m] - v
    return 0


#: the FedBuff server step in the replay's uniform shape
fedbuff_step = buffered_apply_for(fedbuff_message, fedbuff_mix)


class FedBuffServer(BufferedAverage):
    """FedBuff's parameters and the server-rule shape (:data:`fedbuff_step`)."""

    step = staticmethod(fedbuff_step)
    message = staticmethod(fedbuff_message)

    def __init__(self, dim: int, server_lr: float = 1.0, weight: str = "none",
                 exponent: float = 0.5) -> None:
        staleness_weight(weight, 0, exponent)
        super().__init__(dim)
        self.server_lr = float(server_lr)
        self.weight = weight
        self.exponent = float(exponent)

    def add(self, delta: np.ndarray, tau: int) -> None:
        """Buffer one pseudo-gradient ``delta`` of staleness ``tau`` (as the upload
        ``read = delta``, ``new = 0``: ``delta - 0`` is exact)."""
        self.add_upload(delta, np.zeros_like(delta), tau)

    def params(self) -> np.ndarray:
        """``fp = [server_lr, weight code, exponent]``."""
        return np.array([self.server_lr, float(WEIGHTS.index(self.weight)), self.exponent])
