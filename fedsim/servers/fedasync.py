"""FedAsync / PersA-FL server ([P] Algorithm 1, line 4): ``w^{t+1} = w^t - beta Delta_{i_t}``.

One server step consumes exactly one client upload (THEORY_SPEC 2.1), with
``Delta = w_read - w_new`` the client's pseudo-gradient.

This is PersA-FL's rule, not Xie, Koyejo and Gupta's original FedAsync mixing
``w <- (1 - beta) w + beta w_new``.  The two differ whenever the server moved between the
client's read and its upload: PersA-FL's rule applies the client's *displacement*
``beta (w_new - w_read)`` to the current model, Xie's pulls the current model towards the
stale ``w_new`` (``w - beta (w - w_new)``).  They coincide only when ``w = w_read`` (no
staleness).  PersA-FL's Theorems 1-3 are proved for this rule, so fedsim implements it;
the name ``fedasync`` follows PersA-FL, which calls its Algorithms 1-2 with Option A
(local SGD) "FedAsync" ([P] Sec. 3, Theorem 1).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from fedsim.jit import jit
from fedsim.local.forms import ServerForm
from fedsim.servers.base import Upload

__all__ = ["fedasync_apply", "fedasync_step", "FedAsyncRule"]


@jit(inline=True)
def fedasync_apply(w, read, new, beta):
    """[P] Alg. 1 line 4 in place: ``w -= beta * (read - new)``, coordinate by coordinate.

    ``beta == 1`` skips the (exact) multiplication, so the result is bit-identical
    either way.  The one home of the FedAsync server step: the SimPy engine and the
    replay both call it (compiled).
    """
    for k in range(w.shape[0]):
        dk = read[k] - new[k]
        if beta != 1.0:
            dk = dk * beta
        w[k] = w[k] - dk
    return 0


@jit(inline=True)
def fedasync_step(S, clients, reads, news, k, stale, kind, fp, cnt):
    """[P] Alg. 1 line 4 in the replay's uniform server shape
    (:mod:`fedsim.engine.replay.kernel`): :func:`fedasync_apply` on row 0 of ``S`` for each
    of the step's ``k`` uploads; ``fp = [beta]``; returns the fill ``k``."""
    for c in range(k):
        fedasync_apply(S[0], reads[c], news[c], fp[0])
    return k


class FedAsyncRule:
    """[P] Alg. 1 line 4 in the server-rule shape; the state is the model ``w``
    (:func:`fedasync_apply` per upload)."""

    def __init__(self, dim: int, beta: float = 1.0) -> None:
        self.beta = float(beta)

    def init(self, w0: np.ndarray) -> np.ndarray:
        return np.array(w0, dtype=np.float64)

    def replay_form(self) -> Any:
        """This rule in the replay's uniform shape: :func:`fedasync_step`, one state row
        (the model), ``fp = [beta]``."""
        return ServerForm(apply=fedasync_step, s_rows=1, fp=np.array([self.beta]))

    def apply(self, state: np.ndarray, uploads: Sequence[Upload]) -> tuple[np.ndarray,
                                                                            dict[str, Any]]:
        for u in uploads:
            fedasync_apply(state, u.read, u.new, self.beta)
        return state, {"fill": len(uploads)}
