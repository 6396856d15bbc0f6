"""FedAsync's regularised local step (Xie, Koyejo & Gupta 2019), as the authors' code runs it.

The worker approximately solves ``min_x f_i(x) + (rho/2) ||x - x_read||^2`` by ``Q`` SGD
steps from the model it read, ``x_read``.  The authors' code (``xcgoner/async_fl``,
``train_cifar10_mxnet_fedasync_singlethread_impl.py``, commit 4730eeb) does, per local
step: the gradient ``g`` at the current ``w`` (line 243, ``loss.backward()``), then
``w <- w (1 - c) + c x_read`` (line 250, ``weight[:] = weight * (1-rho) + param_prev`` with
``param_prev = rho * x_read`` from line 225), then the SGD step ``w <- w - eta g`` (line
251, ``trainer.step``).  Its ``--rho`` is ``c = eta * rho`` (line 31: "lr * regularization
weight ... equivalent to \\gamma \\times \\rho in the paper"); fedsim's ``rho`` is the
proximal weight itself, so the step is

``w_{q+1} = (w_q (1 - eta rho) + (eta rho) x_read) - eta g(w_q)``,

a gradient step of size ``eta`` on ``f_i + (rho/2) ||. - x_read||^2``, in the code's order
of operations.  What fedsim does not take from the code: its weight decay (``wd = 0.0001``
in the optimiser, line 146) and its model drawn from the last ``max_delay`` server models.

With ``eta rho == 0`` the round runs :func:`fedsim.local.sgd.sgd_round`'s arithmetic
exactly (``w - eta g``), so ``rho = 0`` gives local SGD's bits
(``tests/rules/test_xie_prox.py``).  One source, :func:`xie_prox_round`, runs compiled
(the problem's compiled view, as :mod:`fedsim.local.sgd`) or interpreted
(``xie_prox_round.py_func`` with :func:`fedsim.local.sgd.problem_sample_grad`).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from fedsim.errors import ConfigError, require
from fedsim.jit import Bound, cache_closure, jit
from fedsim.local.forms import ClientForm, RngSteps, rng_draw_round, tag_closure, view_draw_round
from fedsim.local.sgd import SGDRule, problem_sample_grad
from fedsim.problems.base import Problem

__all__ = ["XieProxRule", "xie_prox_round", "xie_prox_round_for", "xie_prox_update_for"]


@jit(cache=False, inline=True)
def xie_prox_round(grad, view, i, w_read, out, Z, eta, rho, Q, g):
    """``out = w_Q`` after ``Q`` regularised steps from ``w_read`` (module docstring).

    ``grad(view, i, w, Z[q], g)`` writes step q's stochastic gradient into ``g``.
    ``w_read`` is the anchor of the proximal term: it is only read and must not be ``out``.
    """
    d = out.shape[0]
    for k in range(d):
        out[k] = w_read[k]
    c = eta * rho
    for q in range(Q):
        grad(view, i, out, Z[q], g)
        if c == 0.0:
            for k in range(d):
                out[k] = out[k] - eta * g[k]
        else:
            for k in range(d):
                out[k] = (out[k] * (1.0 - c) + c * w_read[k]) - eta * g[k]
    return 0


@functools.cache
def xie_prox_round_for(grad: Any) -> Any:
    """:func:`xie_prox_round` with the oracle ``grad`` bound, compiled once per oracle and
    cached on disk (as :func:`fedsim.local.sgd.sgd_round_for`)."""
    @jit
    def bound_round(view, i, w_read, out, Z, eta, rho, Q, g):
        return xie_prox_round(grad, view, i, w_read, out, Z, eta, rho, Q, g)

    return cache_closure(bound_round)


def _update_src(round_fn: Any, grad: Any) -> Any:
    def xie_prox_update(vdata, i, cst, read, tread, Z, nsteps, fp, out, cnt):
        return round_fn(grad, vdata, i, read, out, Z, fp[0], fp[1], nsteps, cst[0])
    return xie_prox_update


@functools.cache
def xie_prox_update_for(grad: Any) -> Any:
    """:func:`xie_prox_round` in the replay's uniform client shape, the oracle bound,
    compiled inline.  ``fp = [eta, rho]``; ``cst`` is one row, the gradient scratch."""
    return jit(cache=False, inline=True)(tag_closure(_update_src(xie_prox_round, grad), grad))


class XieProxRule(SGDRule):
    """Local SGD on Xie's regularised local problem (:func:`xie_prox_round`); ``rho`` is the
    ``[algorithm]`` section's (``fedasync_xie``)."""

    name = "xie_prox"
    compiled_round = xie_prox_round

    @classmethod
    def from_config(cls, name: str, cfg: Any, problem: Problem) -> XieProxRule:
        """The rule of ``client_rule = "xie_prox"`` (keys Q, eta, batch; ``rho`` from the
        algorithm's section)."""
        g = cfg.get
        rho = g("rho")
        require(rho is not None, "algorithm.rho", rho,
                "is required by client_rule = 'xie_prox' (fedasync_xie's section key)")
        return cls(problem, g("eta"), g("Q"), g("batch"), rho=rho)

    def __init__(self, problem: Problem, eta: float, Q: int, batch: int = 1, *,
                 rho: float = 0.0) -> None:
        super().__init__(problem, eta, Q, batch)
        require(rho >= 0 and math.isfinite(rho), "algorithm.rho", rho,
                "must be finite and >= 0")
        self.rho = float(rho)
        cv = self.cv
        self._round = Bound(xie_prox_round_for(cv.grad), cv.data) if self.fast else None

    def round(self, i: int, w0: np.ndarray, out: np.ndarray, rng: np.random.Generator,
              eta: float | None = None, Q: int | None = None) -> np.ndarray:
        """Run the Q regularised steps from ``w0`` (the anchor, only read) into ``out``."""
        eta = self.eta if eta is None else float(eta)
        Q = self.Q if Q is None else int(Q)
        anchor = w0.copy() if out is w0 else w0
        if self.fast:
            self._round(i, anchor, out, self._block(rng, i, Q), eta, self.rho, Q, self._g)
        else:
            xie_prox_round.py_func(problem_sample_grad, self.view, i, anchor, out,
                                   RngSteps(rng), eta, self.rho, Q, self._g)
        return out

    def step(self, i: int, w: np.ndarray, rng: np.random.Generator,
             eta: float | None = None) -> np.ndarray:
        """Not defined: one step needs the round's anchor ``x_read``, which a lone step does
        not see (the per-step reference engine cannot run this rule; the engines' rounds
        and the replay can)."""
        raise ConfigError("client_rule = 'xie_prox' has no lone step: its proximal term "
                          "needs the model the round started from (run whole rounds)")

    def replay_form(self) -> Any:
        """This rule in the replay's uniform shape: :func:`xie_prox_update_for` with the
        view's ``grad``, or the same function interpreted (``fp = [eta, rho]``)."""
        fp = np.array([self.eta, self.rho])
        if self.fast:
            cv = self.cv
            return ClientForm(update=xie_prox_update_for(cv.grad),
                              draw_round=view_draw_round(cv.draw), vdata=cv.data, c_rows=1,
                              k=cv.draws, dtype=cv.dtype, fp=fp, compiled=True)
        return ClientForm(update=_update_src(xie_prox_round.py_func, problem_sample_grad),
                          draw_round=rng_draw_round, vdata=self.view, c_rows=1, k=0,
                          dtype=np.float64, fp=fp, compiled=False,
                          make_z=lambda nsteps: RngSteps(None))
