"""Option A of [P] Algorithm 2 (lines 5-7): Q steps of local SGD from the downloaded model.

``w_{i,q+1} = w_{i,q} - eta * grad f_tilde_i(w_{i,q}, D_{i,q})`` with a fresh batch
``D_{i,q}`` of size ``b`` at every step (THEORY_SPEC 2.1, Option A).  The same rule runs
AREA's client steps ([A] Algorithm 2, ``x^m = x^{m-1} - alpha g_i(x^{m-1})``) and the local
steps of FedBuff, synchronous FedAvg and AS-FedAvg.

The rule is written once, :func:`sgd_round`, in the subset of Python numba compiles
(:mod:`fedsim.jit`).  It is generic in the problem: ``grad(view, i, w, z, g)`` is the
problem's stochastic-gradient oracle (``g = batch_grad(i, w, sample_batch(i, b, .))``)
and ``Z[q]`` the randomness of step ``q``:

* a problem with a compiled view (:func:`rule_view`, :mod:`fedsim.problems.compiled`)
  runs compiled with the view's ``grad``; ``Z`` holds the round's randomness, ``Q`` rows
  of the view's ``draws`` numbers drawn from the client's ``noise`` stream in one block
  (the numbers Q per-step draws give): standard normals for a ``normal_block`` view
  (:class:`~fedsim.problems.QuadraticProblem`: :mod:`fedsim.problems.quadratic_view`),
  row indices from ``round_draws`` for a row-sampled one (binary logistic and softmax
  regression: :mod:`fedsim.problems.row_view`);
* any other problem runs the same function interpreted (``sgd_round.py_func``) with the
  oracle :func:`problem_sample_grad` (``sample_batch`` then ``batch_grad``) and ``Z`` =
  :class:`RngSteps` (every step's randomness is the client's generator itself).  A
  problem's compiled ``grad`` IS its ``batch_grad`` (the problem calls it), so both paths
  give the same numbers bit for bit; ``_COMPILED = False`` (module switch, read when a
  rule is built; for tests and benchmarks only) forces the interpreted path.

:meth:`SGDRule.round` (all Q steps, used by the engines) and :meth:`SGDRule.step` (one
step, used by the per-step reference engine) give bit-identical results for the same
stream; ``tests/rules/test_local_rules.py`` checks it.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from fedsim.errors import require
from fedsim.jit import Bound, cache_closure, jit
from fedsim.local.base import StepRule
from fedsim.local.forms import ClientForm, RngSteps, rng_draw_round, tag_closure, view_draw_round
from fedsim.local.registry import ConfigRule
from fedsim.problems.base import Problem
from fedsim.problems.compiled import CompiledView, compiled_view

__all__ = ["SGDRule", "sgd_round", "sgd_round_for", "sgd_update_for", "problem_sample_grad",
           "RngSteps", "rule_view", "round_block"]

#: Run a problem's compiled view when it has one; ``False`` forces the interpreted
#: per-step ``sample_batch``/``batch_grad`` path (the same numbers).
_COMPILED: bool = True


def rule_view(problem: Problem, batch: int) -> CompiledView | None:
    """The compiled view the local rules run for batches of ``batch``: the problem's
    compiled view (:func:`fedsim.problems.compiled.compiled_view`: none for a wrapper or a
    subclass/instance that replaces an oracle) when its steps draw a normal block
    (``normal_block``) or it draws a round in one call (``round_draws``); ``None`` when
    ``_COMPILED`` is off or the problem has no such view."""
    cv = compiled_view(problem, batch) if _COMPILED else None
    if cv is None or not (cv.normal_block or hasattr(cv, "round_draws")):
        return None
    return cv


def round_block(cv: CompiledView, rng: np.random.Generator, i: int, Q: int, k: int,
                buf: np.ndarray) -> np.ndarray:
    """The randomness of ``Q`` steps of client ``i``, ``k`` numbers a step, as ``(Q, k)``
    (row ``q`` is step ``q``'s ``z``), drawn in one call: ``rng.standard_normal`` into
    ``buf`` (at least ``Q k`` floats) for a ``normal_block`` view, else the view's
    ``round_draws`` (the numbers ``Q`` calls of its ``draw`` give)."""
    if not cv.normal_block:
        return cv.round_draws(rng, i, Q, k)
    Z = buf[:Q * k].reshape(Q, k)
    if Q * k:
        rng.standard_normal(out=Z)
    return Z


@jit(cache=False, inline=True)
def sgd_round(grad, view, i, w_read, out, Z, eta, Q, g):
    """[P] Alg. 2 lines 5-7 (Option A): ``out = w_{i,Q}`` after Q steps from ``w_read``.

    ``grad(view, i, w, Z[q], g)`` writes step q's stochastic gradient into ``g``; the step
    is ``w - eta * g``, coordinate by coordinate.  ``w_read`` is only read (``out`` may be
    ``w_read`` itself: the steps then run in place).
    """
    d = out.shape[0]
    for k in range(d):
        out[k] = w_read[k]
    for q in range(Q):
        grad(view, i, out, Z[q], g)
        for k in range(d):
            out[k] = out[k] - eta * g[k]
    return 0


@functools.cache
def sgd_round_for(grad: Any) -> Any:
    """:func:`sgd_round` with the oracle ``grad`` bound:
    ``round(view, i, w_read, out, Z, eta, Q, g)``, compiled once per oracle (``grad``
    inlined) and cached on disk (:func:`fedsim.jit.cache_closure`), which a function
    taking a compiled function as an argument cannot be."""
    @jit
    def bound_round(view, i, w_read, out, Z, eta, Q, g):
        return sgd_round(grad, view, i, w_read, out, Z, eta, Q, g)

    return cache_closure(bound_round)


def _sgd_update_src(round_fn: Any, grad: Any) -> Any:
    def sgd_update(vdata, i, cst, read, tread, Z, nsteps, fp, out, cnt):
        return round_fn(grad, vdata, i, read, out, Z, fp[0], nsteps, cst[0])
    return sgd_update


@functools.cache
def sgd_update_for(grad: Any) -> Any:
    """:func:`sgd_round` in the replay's uniform client shape
    ``update(vdata, i, cst, read, tread, Z, nsteps, fp, out, cnt)``
    (:mod:`fedsim.engine.replay.kernel`), the oracle ``grad`` bound, compiled inline.
    ``fp = [eta]``; ``cst`` is one row, the gradient scratch; no counters."""
    return jit(cache=False, inline=True)(tag_closure(_sgd_update_src(sgd_round, grad), grad))


def _interpreted_update() -> Any:
    """The same update interpreted (``sgd_round.py_func`` with :func:`problem_sample_grad`;
    ``Z`` a :class:`RngSteps`)."""
    return _sgd_update_src(sgd_round.py_func, problem_sample_grad)


def problem_sample_grad(view: tuple, i: int, w: np.ndarray, rng: np.random.Generator,
                        g: np.ndarray) -> int:
    """The interpreted oracle of any problem: ``view = (problem, batch)``; ``g =
    batch_grad(i, w, sample_batch(i, batch, rng))``."""
    problem, batch = view
    g[:] = problem.batch_grad(i, w, problem.sample_batch(i, batch, rng))
    return 0


class SGDRule(ConfigRule, StepRule):
    """Option A local SGD ([P] Alg. 2 line 7; [A] Alg. 2 inner loop): :func:`sgd_round`.

    ``round(i, w0, out, rng, eta=None, Q=None)`` writes ``w_{i,Q}`` into ``out``;
    ``step(i, w, rng, eta=None)`` applies one step in place.  ``eta`` defaults to the
    rule's own step; AREA passes the alpha it last received.
    """

    name = "sgd"
    #: the compiled round the replay runs for this rule (:func:`sgd_round`)
    compiled_round = sgd_round

    @classmethod
    def from_config(cls, name: str, cfg: Any, problem: Problem) -> SGDRule:
        """The rule of ``client_rule = "sgd"`` / ``"upload"`` (keys Q, eta, batch)."""
        g = cfg.get
        return cls(problem, g("eta"), g("Q"), g("batch"))

    def __init__(self, problem: Problem, eta: float, Q: int, batch: int = 1) -> None:
        require(eta >= 0 and math.isfinite(eta), "algorithm.eta", eta, "must be finite and >= 0")
        require(int(Q) == Q and Q >= 1, "algorithm.Q", Q, "must be an integer >= 1")
        require(int(batch) == batch and batch >= 1, "algorithm.batch", batch,
                "must be an integer >= 1")
        self.problem = problem
        self.eta = float(eta)
        self.Q = int(Q)
        self.batch = int(batch)
        self.d = problem.dim
        self.n = problem.n
        cv = rule_view(problem, self.batch)
        self.cv = cv
        self.fast = cv is not None
        self.view = cv.data if self.fast else (problem, self.batch)
        self.draws = cv.draws if self.fast else 0
        self._round = Bound(sgd_round_for(cv.grad), cv.data) if self.fast else None
        self._g = np.empty(self.d)
        self._blk = np.empty(self.Q * self.draws)

    def _block(self, rng: np.random.Generator, i: int, Q: int) -> np.ndarray:
        """The round's randomness, ``(Q, draws)``, in one call (:func:`round_block`)."""
        if Q * self.draws > self._blk.size:
            self._blk = np.empty(Q * self.draws)
        return round_block(self.cv, rng, i, Q, self.draws, self._blk)

    def round(self, i: int, w0: np.ndarray, out: np.ndarray, rng: np.random.Generator,
              eta: float | None = None, Q: int | None = None) -> np.ndarray:
        """Run the Q local steps from ``w0``; the result ``w_{i,Q}`` is written into ``out``
        (``w0`` is only read)."""
        eta = self.eta if eta is None else float(eta)
        Q = self.Q if Q is None else int(Q)
        if self.fast:
            self._round(i, w0, out, self._block(rng, i, Q), eta, Q, self._g)
        else:
            sgd_round.py_func(problem_sample_grad, self.view, i, w0, out, RngSteps(rng), eta,
                              Q, self._g)
        return out

    def step(self, i: int, w: np.ndarray, rng: np.random.Generator,
             eta: float | None = None) -> np.ndarray:
        """One local step in place (draws one step's randomness from ``rng``)."""
        return self.round(i, w, w, rng, eta, 1)

    def replay_form(self) -> Any:
        """This rule in the replay's uniform shape (:class:`~fedsim.engine.replay.kernel.
        ClientForm`): :func:`sgd_update_for` with the view's ``grad`` and ``draw`` per step,
        or the same function interpreted (``fp = [eta]``, one scratch row)."""
        fp = np.array([self.eta])
        if self.fast:
            cv = self.cv
            return ClientForm(update=sgd_update_for(cv.grad), draw_round=view_draw_round(cv.draw),
                              vdata=cv.data, c_rows=1, k=cv.draws, dtype=cv.dtype, fp=fp,
                              compiled=True)
        return ClientForm(update=_interpreted_update(), draw_round=rng_draw_round,
                          vdata=self.view, c_rows=1, k=0, dtype=np.float64, fp=fp,
                          compiled=False, make_z=lambda nsteps: RngSteps(None))
