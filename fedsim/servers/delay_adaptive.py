"""Asynchronous SGD with delay-adaptive server steps.

The client uploads ``w_new = w_read - eta g`` (one local SGD step, ``Q = 1``: Koloskova,
Stich & Jaggi 2022, Algorithm 1 line 4; ``docs/theory/koloskova-2022.md``); the server
applies the displacement scaled by a factor of the upload's delay ``tau`` (server steps
between the read and the arrival, Koloskova §4.1's ``tau_t``):
``w <- w - beta f(tau) (w_read - w_new)``, i.e. the step ``eta_t = beta eta f(tau)``.

Rules (``fp = [beta, tau_C, code]``, codes of :data:`RULES`):

* ``"koloskova"`` -- Koloskova eq. (11) with §4.4's choice "in case of ``tau_t > tau_C`` set
  stepsize ``eta_t <= eta/tau_t``": ``f = 1`` if ``tau <= tau_C`` else ``1/tau``.  This
  satisfies (11) (``eta_t <= min{eta, 1/(4 L tau_t)}``) whenever ``beta eta <= 1/(4L)``,
  the hypothesis Theorem 8 states for ``eta``;
* ``"koloskova_drop"`` -- eq. (11) with ``eta_t = 0`` for ``tau > tau_C`` (the text after
  Theorem 8: "Setting the stepsize ``eta_t = 0`` is equivalent to dropping these
  gradients");
* ``"mishchenko"`` -- the rule of ``konstmish/asynchronous_sgd`` (``code.ipynb``, ``run``):
  ``lr * M / max(M, delay)`` with ``M = tau_C``: ``f = tau_C / max(tau_C, tau)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from fedsim.errors import require
from fedsim.jit import jit
from fedsim.local.forms import ServerForm
from fedsim.servers.base import Upload
from fedsim.servers.fedasync import fedasync_apply

__all__ = ["RULES", "delay_factor", "delay_adaptive_apply", "delay_adaptive_step",
           "DelayAdaptiveRule"]

#: the step rules, by their code in ``fp[2]``
RULES = ("koloskova", "koloskova_drop", "mishchenko")


@jit(inline=True)
def delay_factor(code, tau, tau_c):
    """``f(tau)`` of rule ``code`` (:data:`RULES`) with concurrency ``tau_c``."""
    if tau <= tau_c:
        return 1.0
    if code == 0:
        return 1.0 / tau
    if code == 1:
        return 0.0
    return tau_c / tau


@jit(inline=True)
def delay_adaptive_apply(w, read, new, tau, fp):
    """``w -= beta f(tau) (read - new)`` in place (:func:`fedsim.servers.fedasync.
    fedasync_apply` with the step ``beta f(tau)``); a zero factor leaves ``w`` untouched
    (the gradient is dropped)."""
    s = fp[0] * delay_factor(int(fp[2]), tau, fp[1])
    if s == 0.0:
        return 0
    return fedasync_apply(w, read, new, s)


@jit(inline=True)
def delay_adaptive_step(S, clients, reads, news, k, stale, kind, fp, cnt):
    """The rule in the replay's uniform server shape: :func:`delay_adaptive_apply` on
    row 0 of ``S`` for each of the step's ``k`` uploads (their delays ``stale``)."""
    for c in range(k):
        delay_adaptive_apply(S[0], reads[c], news[c], stale[c], fp)
    return k


class DelayAdaptiveRule:
    """Delay-adaptive asynchronous SGD server (:func:`delay_adaptive_apply` per upload);
    the state is the model ``w``."""

    def __init__(self, *, beta: float = 1.0, tau_c: int, rule: str = "koloskova") -> None:
        require(rule in RULES, "algorithm.step_rule", rule, f"must be one of {list(RULES)}")
        self.beta, self.tau_c, self.rule = float(beta), int(tau_c), rule
        self.fp = np.array([self.beta, float(self.tau_c), float(RULES.index(rule))])

    def init(self, w0: np.ndarray) -> np.ndarray:
        return np.array(w0, dtype=np.float64)

    def replay_form(self) -> Any:
        """:func:`delay_adaptive_step`, one state row (the model), ``fp = [beta, tau_C,
        code]``."""
        return ServerForm(apply=delay_adaptive_step, s_rows=1, fp=self.fp.copy())

    def apply(self, state: np.ndarray, uploads: Sequence[Upload]) -> tuple[np.ndarray,
                                                                            dict[str, Any]]:
        dropped = 0
        for u in uploads:
            dropped += delay_factor(RULES.index(self.rule), u.staleness, self.fp[1]) == 0.0
            delay_adaptive_apply(state, u.read, u.new, u.staleness, self.fp)
        return state, {"fill": len(uploads), "dropped": int(dropped)}
