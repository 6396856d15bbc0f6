"""Option A of [P] Algorithm 2 (lines 5-7): Q steps of local SGD from the downloaded model.

``w_{i,q+1} = w_{i,q} - eta * grad f_tilde_i(w_{i,q}, D_{i,q})`` with a fresh batch
``D_{i,q}`` of size ``b`` at every step (THEORY_SPEC 2.1, Option A).  The same rule runs
AREA's client steps ([A] Algorithm 2, ``x^m = x^{m-1} - alpha g_i(x^{m-1})``) and the local
steps of FedBuff, synchronous FedAvg and AS-FedAvg.

The rule is written once, :func:`sgd_round`, in the subset of Python numba compiles
(:mod:`fedsim.jit`).  It is generic in the problem: ``grad(view, i, w, z, g)`` is the
problem's stochastic-gradient oracle (``g = batch_grad(i, w, sample_batch(i, b, .))``)
and ``Z[q]`` the randomness of step ``q``:

* a problem with a compiled view whose steps draw standard normals (``normal_block``,
  :mod:`fedsim.problems.compiled`; :class:`~fedsim.problems.QuadraticProblem`:
  :mod:`fedsim.problems.quadratic_view`) runs compiled with the view's ``grad``; ``Z``
  holds the round's normals, ``Q`` rows of the view's ``draws`` numbers drawn from the
  client's ``noise`` stream in one block (the numbers Q per-step draws give);
* any other problem runs the same function interpreted (``sgd_round.py_func``) with the
  oracle :func:`problem_sample_grad` (``sample_batch`` then ``batch_grad``) and ``Z`` =
  :class:`RngSteps` (every step's randomness is the client's generator itself);
* a problem with a ``fused_sgd(batch)`` kernel (softmax, binary logistic regression;
  :mod:`fedsim.problems.fused_sgd`) runs it: the same draws and the same floating-point
  operations as the per-call path, bit for bit (tested); ``_FUSED = False`` (module
  switch, read when a rule is built; for tests and benchmarks only) forces the per-call
  path.

:meth:`SGDRule.round` (all Q steps, used by the engines) and :meth:`SGDRule.step` (one
step, used by the per-step reference engine) give bit-identical results for the same
stream; ``tests/rules/test_local_rules.py`` checks it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fedsim.errors import require
from fedsim.jit import Bound, cache_closure, jit
from fedsim.local.base import StepRule
from fedsim.local.registry import ConfigRule
from fedsim.problems.base import Problem
from fedsim.problems.compiled import compiled_view

__all__ = ["SGDRule", "sgd_round", "sgd_round_for", "problem_sample_grad", "RngSteps",
           "fused_kernel"]

#: Use a problem's fused local-SGD kernel when it has one (``fused_sgd``); ``False``
#: forces the generic per-step ``sample_batch``/``batch_grad`` path (same numbers).
_FUSED: bool = True


def fused_kernel(problem: Problem, batch: int) -> Any:
    """``problem.fused_sgd(batch)`` (:mod:`fedsim.problems.fused_sgd`), or ``None`` when
    ``_FUSED`` is off or the problem's CLASS has no such method -- looked up on the class,
    so a wrapper that forwards attributes (and may count or change the batches) gets the
    per-call path it wraps."""
    make = getattr(type(problem), "fused_sgd", None) if _FUSED else None
    return None if make is None else make(problem, batch)


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


_ROUNDS: dict[Any, Any] = {}


def sgd_round_for(grad: Any) -> Any:
    """:func:`sgd_round` with the oracle ``grad`` bound:
    ``round(view, i, w_read, out, Z, eta, Q, g)``, compiled once per oracle (``grad``
    inlined) and cached on disk (:func:`fedsim.jit.cache_closure`), which a function
    taking a compiled function as an argument cannot be."""
    fn = _ROUNDS.get(grad)
    if fn is None:
        fn = _ROUNDS[grad] = _bind(grad)
    return fn


def _bind(grad: Any) -> Any:
    @jit
    def bound_round(view, i, w_read, out, Z, eta, Q, g):
        return sgd_round(grad, view, i, w_read, out, Z, eta, Q, g)

    return cache_closure(bound_round)


def problem_sample_grad(view: tuple, i: int, w: np.ndarray, rng: np.random.Generator,
                        g: np.ndarray) -> int:
    """The interpreted oracle of any problem: ``view = (problem, batch)``; ``g =
    batch_grad(i, w, sample_batch(i, batch, rng))``."""
    problem, batch = view
    g[:] = problem.batch_grad(i, w, problem.sample_batch(i, batch, rng))
    return 0


class RngSteps:
    """``Z`` of the interpreted path: step q's randomness is the generator itself."""

    __slots__ = ("rng",)

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def __getitem__(self, q: int) -> np.random.Generator:
        return self.rng


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
        cv = compiled_view(problem, self.batch)
        self.fast = cv is not None and cv.normal_block
        self.view = cv.data if self.fast else (problem, self.batch)
        self.draws = cv.draws if self.fast else 0
        self.fused = None if self.fast else fused_kernel(problem, self.batch)
        self._round = Bound(sgd_round_for(cv.grad), cv.data) if self.fast else None
        self._g = np.empty(self.d)
        self._blk = np.empty(self.Q * self.draws)

    def _block(self, rng: np.random.Generator, Q: int) -> np.ndarray:
        """The round's normals, ``(Q, draws)``, in one ``standard_normal`` call."""
        k = Q * self.draws
        if k > self._blk.size:
            self._blk = np.empty(k)
        Z = self._blk[:k].reshape(Q, self.draws)
        if k:
            rng.standard_normal(out=Z)
        return Z

    def round(self, i: int, w0: np.ndarray, out: np.ndarray, rng: np.random.Generator,
              eta: float | None = None, Q: int | None = None) -> np.ndarray:
        """Run the Q local steps from ``w0``; the result ``w_{i,Q}`` is written into ``out``
        (``w0`` is only read)."""
        eta = self.eta if eta is None else float(eta)
        Q = self.Q if Q is None else int(Q)
        if self.fast:
            self._round(i, w0, out, self._block(rng, Q), eta, Q, self._g)
        elif self.fused is not None:
            if out is not w0:
                np.copyto(out, w0)
            self.fused.run(i, out, rng, eta, Q)
        else:
            sgd_round.py_func(problem_sample_grad, self.view, i, w0, out, RngSteps(rng), eta,
                              Q, self._g)
        return out

    def step(self, i: int, w: np.ndarray, rng: np.random.Generator,
             eta: float | None = None) -> np.ndarray:
        """One local step in place (draws one step's randomness from ``rng``)."""
        return self.round(i, w, w, rng, eta, 1)
