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

The client-rule shape (:mod:`fedsim.local.base`, optax style): ``init(x0) -> state`` (the
memories ``y`` and local models ``x``, :class:`AreaState`) and ``update(i, x_s, out, rng,
state, alpha, model)`` -> ``(m_i, state)``, one client event of either model; the engine's
hot path calls its two halves :meth:`AreaClients.compute` and :meth:`AreaClients.message`.
The registered rule ``"area"`` (key ``batch``; M from the AREA section) builds the SGD
kernel (:meth:`AreaClients.from_config`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fedsim.errors import check_integer, require
from fedsim.local.registry import ConfigRule
from fedsim.local.sgd import SGDRule

__all__ = ["AreaClients", "AreaState"]


class AreaState:
    """Memories ``y`` (n x d) and local models ``x`` (n x d) of the n AREA clients."""

    def __init__(self, x0: np.ndarray, n: int) -> None:
        self.y = np.tile(np.asarray(x0, dtype=np.float64), (n, 1))
        self.x = self.y.copy()


class AreaClients(ConfigRule):
    """The n AREA clients: kernel ``sgd`` (M steps) and their :class:`AreaState`."""

    DEFAULTS = {"batch": 1}

    @classmethod
    def check_config(cls, name: str, cfg: Any) -> None:
        if cfg.batch is not None:
            check_integer("algorithm.batch", cfg.batch, low=1)

    @classmethod
    def from_config(cls, name: str, cfg: Any, problem: Any) -> SGDRule:
        """The M-step SGD kernel (its step is the alpha the client last received)."""
        return SGDRule(problem, 0.0, cfg.get("M"), cfg.get("batch"))

    def __init__(self, x0: np.ndarray, n: int, sgd) -> None:
        self.sgd = sgd
        self.n = n
        self.state = self.init(x0)
        self.msg = np.empty(self.state.y.shape[1])

    @property
    def y(self) -> np.ndarray:
        return self.state.y

    @property
    def x(self) -> np.ndarray:
        return self.state.x

    def init(self, x0: np.ndarray) -> AreaState:
        """``y_i = x_i = x_{s,0}`` for every client."""
        return AreaState(x0, self.n)

    def update(self, i: int, x_s: np.ndarray, out: np.ndarray, rng: np.random.Generator,
               state: AreaState, alpha: float, model: str = "algorithm"
               ) -> tuple[np.ndarray, AreaState]:
        """One event of client i: Algorithm 2 (``model="algorithm"``: compute, then send)
        or the Appendix A model (``"iterate_model"``: send, then compute); ``m_i`` is
        written into ``out``."""
        require(model in ("algorithm", "iterate_model"), "algorithm.model", model,
                "must be 'algorithm' or 'iterate_model' for AREA clients")
        if model == "algorithm":
            self.sgd.round(i, x_s, state.x[i], rng, eta=alpha)
        np.subtract(state.x[i], state.y[i], out=out)
        state.y[i] = state.x[i]
        if model == "iterate_model":
            self.sgd.round(i, x_s, state.x[i], rng, eta=alpha)
        return out, state

    def compute(self, i: int, x_s: np.ndarray, alpha: float, rng: np.random.Generator) -> None:
        """``x_i <- G^M_{i,alpha}[x_s]`` (M local SGD steps with step alpha)."""
        self.sgd.round(i, x_s, self.state.x[i], rng, eta=alpha)

    def message(self, i: int) -> np.ndarray:
        """``m_i = x_i - y_i``, then ``y_i <- x_i``; returns ``m_i`` (a reused buffer)."""
        np.subtract(self.state.x[i], self.state.y[i], out=self.msg)
        self.state.y[i] = self.state.x[i]
        return self.msg

    def ybar(self) -> np.ndarray:
        """mean_i y_i."""
        return self.state.y.mean(axis=0)
