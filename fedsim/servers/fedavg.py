"""Synchronous FedAvg (McMahan et al.; [P] Section 2.1 steps (i)-(iv)).

Each round the server samples ``r n`` clients uniformly without replacement, sends them
``w^t``, waits for all of them, and sets ``w^{t+1}`` to the average of their local models:

    ``w^{t+1} = w^t + m (mean_i w_{i,Q} - w^t)``  (``m = 1``: the plain average).

``m`` is ``[algorithm] server_mix``.  With ``client_rule = "maml"`` this is Per-FedAvg
(Fallah et al. 2020, Algorithm 1: the server simply averages, m = 1; Per-FedAvg's beta is
the client's outer local step, the MAML rule's ``eta``), with ``"moreau"`` it is pFedMe
(Dinh et al. 2020, Algorithm 1, whose server mixing weight, also called beta there, is
``server_mix``).

The average is written once, :func:`fedavg_step`, in the replay's uniform server shape
(``apply(S, clients, reads, news, k, stale, kind, fp, cnt) -> fill``,
:mod:`fedsim.engine.replay.kernel`): one state row (the model), parameters
``fp = [m]``, no counters.  Per coordinate it sums the ``k`` models in arrival order from
``0.0``, divides by ``k``, then ``w + (acc - w) m`` (``m = 1``: ``w = acc``, the plain
average with no multiplication).  :meth:`FedAvgRule.apply` calls it on stacked uploads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from fedsim.jit import jit
from fedsim.local.forms import ServerForm
from fedsim.servers.base import Upload

__all__ = ["fedavg_step", "FedAvgRule"]


@jit(inline=True)
def fedavg_step(S, clients, reads, news, k, stale, kind, fp, cnt):
    """One synchronous round (module docstring): row 0 of ``S`` (``w^t`` on entry) becomes
    ``w^t + m (mean(news[:k]) - w^t)``, ``m = fp[0]``; returns the fill ``k``."""
    w = S[0]
    m = fp[0]
    kf = float(k)
    for c in range(w.shape[0]):
        acc = 0.0
        for j in range(k):
            acc = acc + news[j, c]
        acc = acc / kf
        if m == 1.0:
            w[c] = acc
        else:
            w[c] = w[c] + (acc - w[c]) * m
    return k


class FedAvgRule:
    """Synchronous FedAvg in the server-rule shape: the state is ``w``; one ``apply`` per
    round with the sampled clients' uploads (their models in ``Upload.new``):
    :func:`fedavg_step`.  ``beta`` is the mixing weight ``m`` (``server_mix``)."""

    s_rows = 1

    def __init__(self, beta: float = 1.0) -> None:
        self.beta = float(beta)

    def params(self) -> np.ndarray:
        """``fp = [m]`` of :func:`fedavg_step`."""
        return np.array([self.beta])

    def init(self, w0: np.ndarray) -> np.ndarray:
        return np.array(w0, dtype=np.float64)

    def replay_form(self) -> ServerForm:
        """This rule in the replay's uniform shape (:class:`~fedsim.local.forms.ServerForm`):
        :func:`fedavg_step`, one state row (the model), ``fp = [m]``."""
        return ServerForm(apply=fedavg_step, s_rows=1, fp=self.params())

    def apply(self, state: np.ndarray, uploads: Sequence[Upload]) -> tuple[np.ndarray,
                                                                            dict[str, Any]]:
        k = len(uploads)
        news = np.array([u.new for u in uploads], dtype=np.float64).reshape(k, state.shape[0])
        fill = fedavg_step(state[None, :], np.zeros(k, np.int32), news, news, k,
                           np.zeros(k, np.int64), 2, self.params(), np.zeros(1, np.int64))
        return state, {"fill": int(fill)}
