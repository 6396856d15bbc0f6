"""FedAsync's server mixing (Xie, Koyejo & Gupta 2019): ``x <- (1 - alpha_t) x + alpha_t
x_new`` with ``alpha_t = alpha s(t - tau)``, ``t - tau`` the upload's staleness (server
steps between the client's read and the arrival).

Staleness functions (``docs/theory/xie-2019.md``; read from the authors' code,
``xcgoner/async_fl`` ``train_cifar10_mxnet_fedasync_singlethread_impl.py``, options
``none``/``power``/``hinge``, and the Plato framework's FedAsync server, which attributes
them to Xie et al. §5.2 -- the paper text itself could not be read), by their code in
``fp[1]`` (:data:`STALENESS`):

* ``constant``: ``s = 1``;
* ``polynomial``: ``s_a(t - tau) = (t - tau + 1)^(-a)``;
* ``hinge``: ``s_{a,b}(t - tau) = 1`` if ``t - tau <= b`` else ``1 / (a (t - tau - b) + 1)``.

``fp = [alpha, code, a, b]``.  Unlike fedsim's ``fedasync`` (PersA-FL Option A,
``w <- w - beta (w_read - w_new)``), this rule pulls the current model towards the stale
``w_new``; the two agree when the staleness is zero and ``beta = alpha``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from fedsim.errors import check_number, require
from fedsim.jit import jit
from fedsim.local.forms import ServerForm
from fedsim.servers.base import Upload

__all__ = ["STALENESS", "xie_staleness", "xie_mix", "xie_step", "XieMixRule"]

#: staleness functions, by their code in ``fp[1]``
STALENESS = ("constant", "polynomial", "hinge")


@jit(inline=True)
def xie_staleness(code, lag, a, b):
    """``s(t - tau)`` of staleness function ``code`` (:data:`STALENESS`) at ``lag = t - tau``."""
    if code == 1:
        return (lag + 1.0) ** (-a)
    if code == 2:
        if lag <= b:
            return 1.0
        return 1.0 / (a * (lag - b) + 1.0)
    return 1.0


@jit(inline=True)
def xie_mix(w, new, lag, fp):
    """``w = (1 - alpha_t) w + alpha_t new`` in place, ``alpha_t = alpha s(lag)``; written
    ``w - alpha_t (w - new)``."""
    at = fp[0] * xie_staleness(int(fp[1]), lag, fp[2], fp[3])
    for k in range(w.shape[0]):
        w[k] = w[k] - at * (w[k] - new[k])
    return 0


@jit(inline=True)
def xie_step(S, clients, reads, news, k, stale, kind, fp, cnt):
    """The rule in the replay's uniform server shape: :func:`xie_mix` on row 0 of ``S``
    for each of the step's ``k`` uploads; fill ``k``."""
    for c in range(k):
        xie_mix(S[0], news[c], stale[c], fp)
    return k


class XieMixRule:
    """FedAsync mixing (:func:`xie_mix` per upload); the state is the model."""

    def __init__(self, *, alpha: float, staleness: str = "constant", a: float = 0.5,
                 b: float = 4.0) -> None:
        check_number("algorithm.alpha", alpha, low=0.0, high=1.0)
        require(staleness in STALENESS, "algorithm.staleness", staleness,
                f"must be one of {list(STALENESS)}")
        check_number("algorithm.a", a, low=0.0)
        check_number("algorithm.b", b, low=0.0)
        self.fp = np.array([float(alpha), float(STALENESS.index(staleness)), float(a), float(b)])

    def init(self, w0: np.ndarray) -> np.ndarray:
        return np.array(w0, dtype=np.float64)

    def replay_form(self) -> Any:
        """:func:`xie_step`, one state row, ``fp = [alpha, code, a, b]``."""
        return ServerForm(apply=xie_step, s_rows=1, fp=self.fp.copy())

    def apply(self, state: np.ndarray, uploads: Sequence[Upload]) -> tuple[np.ndarray,
                                                                            dict[str, Any]]:
        for u in uploads:
            xie_mix(state, u.new, u.staleness, self.fp)
        return state, {"fill": len(uploads)}
