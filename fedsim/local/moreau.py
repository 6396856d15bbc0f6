"""Option C of [P] Algorithm 2 (PersA-FL-ME, lines 10-12; estimator [P] eq. (10)).

At each local step one fresh batch D is drawn, the stochastic function
``h_tilde(theta) = f_tilde_i(theta, D) + lam/2 ||theta - w||^2`` is held fixed, and an
approximate minimiser ``theta_tilde`` with ``||grad h_tilde(theta_tilde)|| <= nu`` is found
(the inner solve, :mod:`fedsim.local.moreau_inner`: solvers ``"gd"`` and ``"exact"``, the
``fp`` layout, the counters); then ``w <- w - eta lam (w - theta_tilde)``.  Run under
synchronous FedAvg the same rule is pFedMe's local step (Dinh et al. 2020;
:mod:`fedsim.servers.fedavg`).

The rule is written once, in the subset numba compiles (:mod:`fedsim.jit`):
:func:`fedsim.local.moreau_inner.moreau_solve` (the inner solve) and :func:`moreau_round`
(the ``nsteps`` local steps), generic in the problem's batch oracle ``grad(vdata, i, w, z,
g)`` and the exact oracle ``theta(vdata, i, w, z, pd, g, th)``:

* on a problem with a compiled view (:func:`fedsim.local.sgd.rule_view`: quadratic,
  binary logistic, softmax) the round runs compiled, :func:`moreau_update_for` (the
  uniform client signature of the replay, ``update(vdata, i, cst, read, tread, Z, nsteps,
  fp, out, cnt)``, no client state); ``Z[q]`` is step ``q``'s ``z``, the round drawn in
  one call (:func:`fedsim.local.sgd.round_block`), and every inner iteration of step
  ``q`` reads the same ``Z[q]``;
* any other problem runs the same two functions interpreted (``py_func``) with
  ``sample_batch``/``batch_grad``/``batch_theta_hat``
  (:class:`~fedsim.local.moreau_inner.BatchSteps`: ``Z[q]`` draws step ``q``'s batch once;
  :func:`interpreted_update`).

:meth:`MoreauRule.round`/``step`` (the per-step oracle, ``fedsim.engine.models.physical.reference``)
and
:meth:`MoreauRule.replay_form` (the table replay, :mod:`fedsim.engine.replay.kernel`) call
these same functions.

On softmax and logistic the view's ``grad`` IS the problem's ``batch_grad``; on the
quadratic the compiled gradient noise is the view's (``e = scale_i z`` or ``F_i z``), the
law of ``sample_batch`` (the same numbers up to rounding for isotropic additive noise).

**Counters.**  A Trace's ``inner_iters``, ``inner_solves`` and ``inner_failures`` count the
inner solves of the rounds the server consumed: one solve per local step of every
contribution a server step applied (the table replay runs the rule only there).  An
upload still in the buffer when the run stops (a time horizon ending with a partly full
FedBuff/AS-FedAvg buffer), or a round in flight, is not counted: it enters no iterate
``w^t`` of the trace, and [P] Theorem 3 bounds ``(1/T) sum_{t<T} E||grad F(w^t)||^2``
through the bias and variance of the updates that form those iterates (Lemma 6, eqs.
(26)-(27), ``||grad h_tilde|| <= nu`` for each of them) -- which is what the suites'
"inner accuracy" check (``inner_failures == 0``) settles.  ``client_updates`` counts every
upload, consumed or not.  (The per-step oracle :mod:`fedsim.engine.models.physical.reference` also
solves for rounds it never finishes; only its iterates are compared.)
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from fedsim.errors import check_integer, check_number, require
from fedsim.jit import Bound, cache_closure, jit
from fedsim.local.base import StepRule
from fedsim.local.forms import ClientForm, tag_closure, view_draw_round
from fedsim.local.moreau_inner import (
    COUNTERS,
    EXACT_ORACLES,
    SCALARS,
    BatchSteps,
    moreau_solve,
    no_theta,
    problem_batch_grad,
    problem_theta_hat,
)
from fedsim.local.registry import ConfigRule
from fedsim.local.sgd import round_block, rule_view
from fedsim.problems.base import Problem

__all__ = ["MoreauRule", "moreau_round", "moreau_update_for", "batch_draw_round",
           "interpreted_update"]


@jit(cache=False, inline=True)
def moreau_round(solve, grad, theta, exact, vdata, i, read, Z, nsteps, fp, out, cnt):
    """[P] Alg. 2 lines 10-12 (Option C): ``out`` = the local model after ``nsteps`` steps
    ``w <- w - eta lam (w - theta_tilde)`` from ``read`` (only read; ``out`` may be
    ``read``), step ``q``'s inner problem on the batch ``Z[q]``; ``solve`` is
    :func:`~fedsim.local.moreau_inner.moreau_solve` (compiled or its ``py_func``), the work
    vectors are in ``fp``."""
    d = out.shape[0]
    el = fp[0] * fp[1]
    th = fp[SCALARS:SCALARS + d]
    g = fp[SCALARS + d:SCALARS + 2 * d]
    pd = fp[SCALARS + 2 * d:]
    for k in range(d):
        out[k] = read[k]
    for q in range(nsteps):
        solve(grad, theta, exact, vdata, i, out, Z[q], fp, pd, th, g, cnt)
        for k in range(d):
            out[k] = out[k] - el * (out[k] - th[k])
    return 0


@functools.cache
def moreau_update_for(grad: Any, theta: Any = None) -> Any:
    """The compiled client rule ``update(vdata, i, cst, read, tread, Z, nsteps, fp, out,
    cnt) -> 0`` (REPLAY_SPEC 2: ``cst`` has no rows, ``tread`` is unused) of a view whose
    batch oracle is ``grad``: :func:`moreau_round` with the "gd" solver, or with the exact
    oracle ``theta`` when given; ``jit(inline=True)`` (the replay inlines it), compiled
    once per pair and cached on disk (:func:`fedsim.jit.cache_closure`).  The two solvers
    are two function bodies, so that a cache keyed on a closure's code (and its argument
    types) never takes one for the other."""
    if theta is None:
        def update(vdata, i, cst, read, tread, Z, nsteps, fp, out, cnt):
            return moreau_round(moreau_solve, grad, no_theta, 0, vdata, i, read, Z, nsteps,
                                fp, out, cnt)
    else:
        def update(vdata, i, cst, read, tread, Z, nsteps, fp, out, cnt):
            return moreau_round(moreau_solve, grad, theta, 1, vdata, i, read, Z, nsteps, fp,
                                out, cnt)

    leaves = (grad,) if theta is None else (grad, theta)
    return cache_closure(jit(inline=True)(tag_closure(update, *leaves)))


@functools.cache
def interpreted_update(exact: int) -> Any:
    """:func:`moreau_round` interpreted in the uniform client signature, for a problem
    without a compiled view: ``vdata = (problem, lam)``, ``Z`` a :class:`BatchSteps`
    (:func:`batch_draw_round` points it at the client's stream)."""
    def update(vdata, i, cst, read, tread, Z, nsteps, fp, out, cnt):
        return moreau_round.py_func(moreau_solve.py_func, problem_batch_grad, problem_theta_hat,
                                    exact, vdata, i, read, Z, nsteps, fp, out, cnt)

    return update


def batch_draw_round(vdata, i, gen, nsteps, Z) -> int:
    """The interpreted ``draw_round``: ``Z`` (a :class:`BatchSteps`) draws client ``i``'s
    batches from ``gen`` as the round runs."""
    Z.i, Z.rng = i, gen
    return 0


class MoreauRule(ConfigRule, StepRule):
    """[P] Option C local steps (:func:`moreau_round`); counters ``inner_iters``,
    ``inner_solves``, ``inner_failures`` (``cnt``, module docstring).

    For the replay (REPLAY_SPEC 2): :attr:`compiled_update` (or ``None`` without a
    compiled view), ``c_rows = 0``, :attr:`draws` numbers of dtype :attr:`dtype` a step,
    :meth:`init_state`, :meth:`params`.
    """

    name = "moreau"
    c_rows = 0
    DEFAULTS = {**ConfigRule.DEFAULTS, "inner_max_iter": 1000, "inner_solver": "gd"}

    @classmethod
    def check_config(cls, name: str, cfg: Any) -> None:
        """Q, eta, batch; ``lam`` (> 0, required); ``inner_solver`` ("gd" | "exact"); ``nu``
        (> 0 with "gd", 0 with "exact"); ``inner_max_iter`` (integer >= 1)."""
        super().check_config(name, cfg)
        f = "algorithm"
        require(cfg.lam is not None, f"{f}.lam", None, "is required for client_rule moreau")
        check_number(f"{f}.lam", cfg.lam, low=0.0, strict=True)
        solver = cfg.inner_solver or "gd"
        require(solver in ("gd", "exact"), f"{f}.inner_solver", solver,
                "must be 'gd' or 'exact'")
        if cfg.nu is not None:
            check_number(f"{f}.nu", cfg.nu, low=0.0)
        if solver == "gd":
            require(cfg.nu is None or cfg.nu > 0, f"{f}.nu", cfg.nu,
                    "must be > 0 with inner_solver='gd' (use inner_solver='exact' for nu=0)")
        else:
            require(cfg.nu is None or cfg.nu == 0, f"{f}.nu", cfg.nu,
                    "must be 0 (or omitted) with inner_solver='exact'")
        if cfg.inner_max_iter is not None:
            check_integer(f"{f}.inner_max_iter", cfg.inner_max_iter, low=1)

    @classmethod
    def default(cls, name: str, key: str, cfg: Any) -> Any:
        if key == "nu":
            return 1e-8 if (cfg.inner_solver or "gd") == "gd" else 0.0
        return cls.DEFAULTS.get(key)

    @classmethod
    def from_config(cls, name: str, cfg: Any, problem: Problem) -> MoreauRule:
        """The rule of ``client_rule = "moreau"`` (L from the problem for the gd solver)."""
        g = cfg.get
        L = None
        if g("inner_solver") == "gd":
            L = float(problem.constants["L"].value)
        return cls(problem, g("eta"), g("Q"), g("batch"), g("lam"), g("nu"),
                   g("inner_max_iter"), g("inner_solver"), L)

    def __init__(self, problem: Problem, eta: float, Q: int, batch: int, lam: float,
                 nu: float = 1e-8, inner_max_iter: int = 1000, solver: str = "gd",
                 L: float | None = None) -> None:
        require(solver in ("gd", "exact"), "algorithm.inner_solver", solver,
                "must be 'gd' or 'exact'")
        require(math.isfinite(lam) and lam > 0, "algorithm.lam", lam, "must be finite and > 0")
        if solver == "exact":
            require(hasattr(problem, "batch_theta_hat"), "algorithm.inner_solver", solver,
                    f"needs a closed-form inner solution, which {type(problem).__name__} "
                    "lacks (use 'gd')")
        else:
            require(nu > 0, "algorithm.nu", nu, "must be > 0 for inner_solver='gd'")
            require(L is not None and math.isfinite(L) and L >= 0, "problem.L", L,
                    "must be a finite smoothness constant for the 'gd' inner solver")
            require(lam > L, "algorithm.lam", lam,
                    f"must be > L = {L:g} (h_tilde strongly convex, [P] Section 3)")
        self.problem = problem
        self.eta, self.Q, self.batch = float(eta), int(Q), int(batch)
        self.lam, self.nu, self.max_iter, self.solver = float(lam), float(nu), int(
            inner_max_iter), solver
        self.step_in = 1.0 / (L + lam) if L is not None else None
        self.d = getattr(problem, "dim", None)
        self.cnt = np.zeros(len(COUNTERS), dtype=np.int64)
        cv = rule_view(problem, self.batch)
        exact = EXACT_ORACLES.get(cv.grad) if cv is not None else None
        if cv is not None and solver == "exact" and exact is None:
            cv = None  # a compiled view without a compiled exact solution: interpreted
        self.cv = cv
        self.exact = 1 if solver == "exact" else 0
        if cv is not None:
            theta = exact[0] if self.exact else None
            self.pd = exact[1](problem, self.lam) if self.exact else np.zeros(0)
            self.compiled_update = moreau_update_for(cv.grad, theta)
            self._round = Bound(self.compiled_update, cv.data)
            self.draws, self.dtype = int(cv.draws), cv.dtype
        else:
            self.pd = np.zeros(0)
            self.compiled_update = None
            self.view = (problem, self.lam)
            self.draws, self.dtype = 0, np.float64
        self._fp = np.zeros(0)
        self._blk = np.empty(self.Q * self.draws)
        self._cst = np.empty((0, 0))

    @property
    def inner_iters(self) -> int:
        """Inner GD iterations so far."""
        return int(self.cnt[0])

    @property
    def inner_solves(self) -> int:
        """Inner problems solved so far (one per local step)."""
        return int(self.cnt[1])

    @property
    def inner_failures(self) -> int:
        """Inner solves that stopped at ``inner_max_iter`` without meeting ``nu``."""
        return int(self.cnt[2])

    def params(self, d: int | None = None) -> np.ndarray:
        """A new ``fp`` for models of length ``d`` (default: the problem's ``dim``; module
        docstring: scalars, work vectors, exact data)."""
        d = int(self.d if d is None else d)
        fp = np.zeros(SCALARS + 2 * d + self.pd.size)
        fp[:SCALARS] = (self.eta, self.lam, self.nu, self.max_iter,
                        self.step_in if self.step_in is not None else 0.0, d)
        fp[SCALARS + 2 * d:] = self.pd
        return fp

    def _params(self, d: int) -> np.ndarray:
        """The rule's own ``fp`` for models of length ``d`` (made once)."""
        if self._fp.size == 0 or int(self._fp[5]) != d:
            self._fp = self.params(d)
            self._cst = np.empty((0, d))
        return self._fp

    def init_state(self, cst: np.ndarray, w0: np.ndarray) -> None:
        """No client state (``c_rows = 0``)."""

    def replay_form(self) -> ClientForm:
        """This rule in the replay's uniform shape (:class:`~fedsim.local.forms.ClientForm`):
        :attr:`compiled_update` with the view's ``draw`` per step, or the same functions
        interpreted (:func:`interpreted_update`); ``fp`` a new :meth:`params`, the counters
        ``COUNTERS``."""
        fp = self.params()
        common = {"c_rows": 0, "fp": fp, "ncnt": len(COUNTERS), "counters": COUNTERS}
        if self.compiled_update is not None:
            cv = self.cv
            return ClientForm(update=self.compiled_update, draw_round=view_draw_round(cv.draw),
                              vdata=cv.data, k=self.draws, dtype=self.dtype, compiled=True,
                              **common)
        problem, batch = self.problem, self.batch
        return ClientForm(update=interpreted_update(self.exact), draw_round=batch_draw_round,
                          vdata=self.view, k=0, dtype=np.float64, compiled=False,
                          make_z=lambda nsteps: BatchSteps(problem, 0, batch, None), **common)

    def _block(self, rng: np.random.Generator, i: int, Q: int) -> np.ndarray:
        if Q * self.draws > self._blk.size:
            self._blk = np.empty(Q * self.draws)
        return round_block(self.cv, rng, i, Q, self.draws, self._blk)

    def theta_tilde(self, i: int, w: np.ndarray, batch: Any) -> np.ndarray:
        """The inner solution for a batch of ``sample_batch`` (:func:`moreau_solve`,
        interpreted), as a new array."""
        w = np.asarray(w, dtype=np.float64)
        d = w.shape[0]
        fp = self._params(d)
        th, g = np.empty(d), np.empty(d)
        moreau_solve.py_func(problem_batch_grad, problem_theta_hat, self.exact,
                             (self.problem, self.lam), i, w, batch, fp, fp[SCALARS + 2 * d:],
                             th, g, self.cnt)
        return th

    def round(self, i: int, w0: np.ndarray, out: np.ndarray, rng: np.random.Generator,
              eta: float | None = None, Q: int | None = None) -> np.ndarray:
        """Q local steps from ``w0`` into ``out`` (``w0`` is only read):
        :func:`moreau_round`."""
        fp = self._params(out.shape[0])
        fp[0] = self.eta if eta is None else float(eta)
        Q = self.Q if Q is None else int(Q)
        if self.compiled_update is not None:
            self._round(i, self._cst, w0, 0, self._block(rng, i, Q), Q, fp, out, self.cnt)
        else:
            moreau_round.py_func(moreau_solve.py_func, problem_batch_grad, problem_theta_hat,
                                 self.exact, self.view, i, w0,
                                 BatchSteps(self.problem, i, self.batch, rng), Q, fp, out,
                                 self.cnt)
        return out

    def step(self, i: int, w: np.ndarray, rng: np.random.Generator,
             eta: float | None = None) -> np.ndarray:
        """One local step in place: ``w <- w - eta lam (w - theta_tilde)``."""
        return self.round(i, w, w, rng, eta, 1)
