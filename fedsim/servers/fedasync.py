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

from fedsim.servers.base import Upload

__all__ = ["fedasync_apply", "FedAsyncRule"]


def fedasync_apply(w: np.ndarray, delta: np.ndarray, beta: float) -> np.ndarray:
    """In place: ``w -= beta * delta`` (``delta`` is overwritten by ``beta * delta``).

    ``beta == 1`` skips the (exact) multiplication, so the result is bit-identical
    either way.
    """
    if beta != 1.0:
        np.multiply(delta, beta, out=delta)
    np.subtract(w, delta, out=w)
    return w


class FedAsyncRule:
    """[P] Alg. 1 line 4 in the server-rule shape; the state is the model ``w``.

    The physical engine's hot path (:mod:`fedsim.engine.fedasync_fast`) performs exactly
    this arithmetic inline; ``tests/engine/test_engine_reference.py`` checks both agree.
    """

    def __init__(self, dim: int, beta: float = 1.0) -> None:
        self.beta = float(beta)
        self._delta = np.empty(dim)

    def init(self, w0: np.ndarray) -> np.ndarray:
        return np.array(w0, dtype=np.float64)

    def apply(self, state: np.ndarray, uploads: Sequence[Upload]) -> tuple[np.ndarray,
                                                                            dict[str, Any]]:
        for u in uploads:
            np.subtract(u.read, u.new, out=self._delta)
            fedasync_apply(state, self._delta, self.beta)
        return state, {"fill": len(uploads)}
