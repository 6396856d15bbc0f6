"""AREA client ([A] Algorithm 2) and its Appendix A iterate model.

Client i keeps a memory ``y_i`` (initially ``x_{s,0}``).  In **Algorithm 2**, each cycle it
receives ``x_s`` and the step ``alpha`` it was last sent, runs M local SGD steps
``x^m = x^{m-1} - alpha g_i(x^{m-1})`` (the :class:`~fedsim.local.sgd.SGDRule` kernel with
``eta = alpha``), sends ``m_i = x^M - y_i`` and sets ``y_i <- x^M``.

In the **Appendix A model** (eqs. (5)-(6), superscript M restored, THEORY_SPEC 2.2) the
client also holds its latest local model ``x_i`` (``x_{i,0} = x_{s,0}``).  At its event
k+1 it sends ``m_i = x_{i,k} - y_{i,k}``, sets ``y_i <- x_{i,k}`` and computes the next
local model ``x_i <- G^M_{i,alpha_k}[x_{s,k}]`` from the *current* server model with
``alpha_k`` (index k).  The two differ: the first message of Algorithm 2 carries a real
update while the model's is a no-op, and Algorithm 1 sends ``alpha_k`` at iteration k
(one index later than the model), E-A11 of THEORY_SPEC 8.
"""

from __future__ import annotations

import numpy as np

__all__ = ["AreaClients"]


class AreaClients:
    """Memories ``y`` (n x d) and local models ``x`` (n x d) of the n AREA clients."""

    def __init__(self, x0: np.ndarray, n: int, sgd) -> None:
        self.y = np.tile(np.asarray(x0, dtype=np.float64), (n, 1))
        self.x = self.y.copy()
        self.sgd = sgd
        self.msg = np.empty(self.y.shape[1])

    def compute(self, i: int, x_s: np.ndarray, alpha: float, rng: np.random.Generator) -> None:
        """``x_i <- G^M_{i,alpha}[x_s]`` (M local SGD steps with step alpha)."""
        self.sgd.round(i, x_s, self.x[i], rng, eta=alpha)

    def message(self, i: int) -> np.ndarray:
        """``m_i = x_i - y_i``, then ``y_i <- x_i``; returns ``m_i`` (a reused buffer)."""
        np.subtract(self.x[i], self.y[i], out=self.msg)
        self.y[i] = self.x[i]
        return self.msg

    def ybar(self) -> np.ndarray:
        """mean_i y_i."""
        return self.y.mean(axis=0)
