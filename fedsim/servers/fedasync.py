"""FedAsync / PersA-FL server ([P] Algorithm 1, line 4): ``w^{t+1} = w^t - beta Delta_{i_t}``.

One server step consumes exactly one client upload (THEORY_SPEC 2.1).
"""

from __future__ import annotations

import numpy as np

__all__ = ["fedasync_apply"]


def fedasync_apply(w: np.ndarray, delta: np.ndarray, beta: float) -> np.ndarray:
    """In place: ``w -= beta * delta`` (``delta`` is overwritten by ``beta * delta``).

    ``beta == 1`` skips the (exact) multiplication, so the result is bit-identical
    either way.
    """
    if beta != 1.0:
        np.multiply(delta, beta, out=delta)
    np.subtract(w, delta, out=w)
    return w
