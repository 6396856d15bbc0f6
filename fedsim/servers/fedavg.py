"""Synchronous FedAvg (McMahan et al.; [P] Section 2.1 steps (i)-(iv)).

Each round the server samples ``r n`` clients uniformly without replacement, sends them
``w^t``, waits for all of them, and sets ``w^{t+1}`` to the average of their local models:

    ``w^{t+1} = w^t + m (mean_i w_{i,Q} - w^t)``  (``m = 1``: the plain average).

``m`` is ``[algorithm] server_mix`` (stored here as ``beta`` for the function signature's
compatibility).  With ``client_rule = "maml"`` this is Per-FedAvg (Fallah et al. 2020,
Algorithm 1: the server simply averages, m = 1; Per-FedAvg's beta is the client's outer
local step, the MAML rule's ``eta``), with ``"moreau"`` it is pFedMe (Dinh et al. 2020,
whose server mixing weight, also called beta there, is ``server_mix``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from fedsim.servers.base import Upload

__all__ = ["fedavg_aggregate", "FedAvgRule"]


def fedavg_aggregate(w: np.ndarray, models: Sequence[np.ndarray], beta: float = 1.0) -> np.ndarray:
    """In place: ``w <- w + beta (mean(models) - w)``; returns ``w``."""
    acc = np.zeros_like(w)
    for m in models:
        np.add(acc, m, out=acc)
    np.divide(acc, float(len(models)), out=acc)
    if beta == 1.0:
        np.copyto(w, acc)
    else:
        np.subtract(acc, w, out=acc)
        np.multiply(acc, beta, out=acc)
        np.add(w, acc, out=w)
    return w


class FedAvgRule:
    """Synchronous FedAvg in the server-rule shape: the state is ``w``; one ``apply`` per
    round with the sampled clients' uploads (their models in ``Upload.new``)."""

    def __init__(self, beta: float = 1.0) -> None:
        self.beta = float(beta)

    def init(self, w0: np.ndarray) -> np.ndarray:
        return np.array(w0, dtype=np.float64)

    def apply(self, state: np.ndarray, uploads: Sequence[Upload]) -> tuple[np.ndarray,
                                                                            dict[str, Any]]:
        fedavg_aggregate(state, [u.new for u in uploads], self.beta)
        return state, {"fill": len(uploads)}
