"""Option B of [P] Algorithm 2 (PersA-FL-MAML, lines 8-9; estimator [P] eq. (9)).

At each local step, three independent fresh batches D, D', D'' (drawn in that order from
the client's ``noise`` stream, THEORY_SPEC 2.1):

    ``g   = grad f_tilde_i(w - alpha grad f_tilde_i(w, D'), D)``
    ``dir = g - alpha grad^2 f_tilde_i(w, D'') g``                  (``"maml"``, exact HVP)
    ``dir = g``                                                     (``"fomaml"``, first order)
    ``dir = g - alpha [grad f_tilde_i(w + delta g, D'') - grad f_tilde_i(w - delta g, D'')]
            / (2 delta)``                                          (``"hfmaml"``)
    ``w  <- w - eta dir``

The Hessian-free difference follows Per-FedAvg (HF) (Fallah et al., eq. (119)), which
divides by ``2 delta``; [P]'s Appendix D (D1) prints ``/delta``, a typo (the quotient with
``delta`` is twice the Hessian-vector product).  FO-MAML draws only D and D'.

The three batch sizes may differ (Per-FedAvg, Fallah et al. 2020, Algorithm 1 and Sec. 5:
|D|, |D'|, |D''|): ``batch`` is |D|, ``batch_inner`` |D'| and ``batch_hess`` |D''|; both
default to ``batch``, which draws exactly as before.

The estimator is written once, :func:`maml_direction`, generic in the problem's batch
oracles ``grad(data, i, w, D, g)`` / ``hvp(data, i, w, v, D, h)``; the step ``w - eta dir``
is :func:`fedsim.local.sgd.sgd_round` with the estimator as its oracle:

* on a problem whose compiled view has a compiled ``hvp`` and draws a round in one call
  (binary logistic and softmax regression: :class:`~fedsim.problems.row_view.RowsView`),
  everything runs compiled: a step's ``z`` is D, D' and D'' one after the other
  (``|D| + |D'| + |D''|`` row indices; FO-MAML draws no D''), the numbers and the final
  generator state of the three ``sample_batch`` calls, a round's ``Q`` steps in ONE
  ``rng.integers`` call (``round_draws``);
* any other problem runs the same functions interpreted (``py_func``), with the problem's
  ``sample_batch``/``batch_grad``/``batch_hvp``.

A compiled view's oracles are the problem's ``batch_grad``/``batch_hvp`` (the problem calls
them), so both paths give the same numbers bit for bit;
``fedsim.local.sgd._COMPILED = False`` forces the interpreted path (tests, benchmarks).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from fedsim.errors import check_integer, check_number, require
from fedsim.jit import Bound, jit
from fedsim.local.base import StepRule
from fedsim.local.forms import (
    ClientForm,
    RngSteps,
    rng_draw_round,
    tag_closure,
    view_draw_round,
)
from fedsim.local.registry import ConfigRule
from fedsim.local.sgd import round_block, rule_view, sgd_round
from fedsim.problems.base import Problem

__all__ = ["MAMLRule", "maml_direction", "compiled_maml_grad", "problem_maml_grad", "VARIANTS",
           "maml_update_for", "interpreted_maml_update", "FP_LAYOUT"]

#: the estimators, in code order (``variant`` of :func:`maml_direction`)
VARIANTS = ("maml", "fomaml", "hfmaml")


@jit(cache=False, inline=True)
def maml_direction(grad, hvp, data, i, w, D, D1, D2, alpha, variant, delta, g, t, u, x):
    """``g`` = the MAML estimate at ``w`` ([P] eq. (9); module docstring) from the batches
    ``D``, ``D'`` (``D1``), ``D''`` (``D2``; unused by FO-MAML); ``variant`` indexes
    :data:`VARIANTS`; ``t``, ``u``, ``x`` are work vectors of ``w``'s length."""
    d = w.shape[0]
    grad(data, i, w, D1, t)
    for k in range(d):
        t[k] = w[k] - alpha * t[k]               # w - alpha grad f_tilde_i(w, D')
    grad(data, i, t, D, g)                       # g = grad f_tilde_i(., D) there
    if variant == 1:
        return 0
    if variant == 0:
        hvp(data, i, w, g, D2, t)
        for k in range(d):
            g[k] = g[k] - alpha * t[k]           # g - alpha grad^2 f_tilde_i(w, D'') g
        return 0
    for k in range(d):
        t[k] = w[k] + delta * g[k]
    grad(data, i, t, D2, u)
    for k in range(d):
        t[k] = w[k] - delta * g[k]
    grad(data, i, t, D2, x)
    for k in range(d):
        g[k] = g[k] - alpha * ((u[k] - x[k]) / (2.0 * delta))
    return 0


@functools.cache
def compiled_maml_grad(grad: Any, hvp: Any) -> Any:
    """The compiled ``sgd_round`` oracle ``(view, i, w, z, g)`` of MAML on the problem
    oracles ``grad``/``hvp``: ``view = (data, b, b1, b2, alpha, variant, delta, t, u, x)``
    and ``z`` a step's row indices, D = ``z[:b]``, D' = ``z[b:b + b1]``, D'' the rest."""

    def maml_grad(view, i, w, z, g):
        data, b, b1, b2, alpha, variant, delta, t, u, x = view
        return maml_direction(grad, hvp, data, i, w, z[:b], z[b:b + b1], z[b + b1:], alpha,
                              variant, delta, g, t, u, x)

    return jit(cache=False, inline=True)(maml_grad)


#: ``fp`` of :func:`maml_update_for`'s rule: the indices of its parameters
FP_LAYOUT = ("eta", "alpha", "variant", "delta", "batch", "batch_inner", "batch_hess")


def _maml_update_src(round_fn: Any, oracle: Any) -> Any:
    """The one source of the MAML client update in the replay's uniform shape, on the round
    ``round_fn`` (:func:`~fedsim.local.sgd.sgd_round` or its ``py_func``) and the MAML
    oracle ``oracle`` (:func:`compiled_maml_grad` or :func:`problem_maml_grad`)."""

    def maml_update(vdata, i, cst, read, tread, Z, nsteps, fp, out, cnt):
        view = (vdata, int(fp[4]), int(fp[5]), int(fp[6]), fp[1], int(fp[2]), fp[3],
                cst[1], cst[2], cst[3])
        return round_fn(oracle, view, i, read, out, Z, fp[0], nsteps, cst[0])

    return maml_update


@functools.cache
def maml_update_for(grad: Any, hvp: Any) -> Any:
    """[P] Option B's round (Per-FedAvg's local steps, Fallah et al. 2020, Algorithm 1
    lines 5-9) in the replay's uniform client shape
    ``update(vdata, i, cst, read, tread, Z, nsteps, fp, out, cnt) -> 0``
    (:mod:`fedsim.engine.replay.kernel`): ``nsteps`` steps ``w <- w - eta dir`` from
    ``read`` into ``out`` (:func:`~fedsim.local.sgd.sgd_round` with the MAML estimate of
    :func:`compiled_maml_grad` on the problem's compiled ``grad``/``hvp``), compiled inline.
    ``vdata`` is the compiled view's data; ``Z[q]`` step ``q``'s row indices D, D', D''
    (``batch + batch_inner + batch_hess`` of them, FO-MAML: no D''); ``cst`` four scratch
    rows (the gradient and the estimator's three work vectors), no state kept between
    rounds; ``fp`` as :data:`FP_LAYOUT` (``variant`` the index in :data:`VARIANTS`, the
    batch sizes as floats); no counters."""
    src = _maml_update_src(sgd_round, compiled_maml_grad(grad, hvp))
    return jit(cache=False, inline=True)(tag_closure(src, grad, hvp))


def interpreted_maml_update() -> Any:
    """The same update interpreted, for a problem without a compiled view: ``vdata`` is
    the problem, ``Z`` a :class:`~fedsim.local.forms.RngSteps` holding the client's stream
    (D, D', D'' drawn by ``sample_batch`` step by step), the oracle
    :func:`problem_maml_grad` (``sgd_round.py_func``, ``maml_direction.py_func``)."""
    return _maml_update_src(sgd_round.py_func, problem_maml_grad)


def _batch_grad(problem: Problem, i: int, w: np.ndarray, D: Any, g: np.ndarray) -> int:
    g[:] = problem.batch_grad(i, w, D)
    return 0


def _batch_hvp(problem: Problem, i: int, w: np.ndarray, v: np.ndarray, D: Any,
               h: np.ndarray) -> int:
    h[:] = problem.batch_hvp(i, w, v, D)
    return 0


def problem_maml_grad(view: tuple, i: int, w: np.ndarray, rng: np.random.Generator,
                      g: np.ndarray) -> int:
    """The interpreted oracle: ``view = (problem, b, b1, b2, alpha, variant, delta, t, u,
    x)``; D, D', D'' from ``sample_batch`` in that order (no D'' for FO-MAML), then
    :func:`maml_direction` interpreted on ``batch_grad``/``batch_hvp``."""
    p, b, b1, b2, alpha, variant, delta, t, u, x = view
    D = p.sample_batch(i, b, rng)
    D1 = p.sample_batch(i, b1, rng)
    D2 = None if variant == 1 else p.sample_batch(i, b2, rng)
    return maml_direction.py_func(_batch_grad, _batch_hvp, p, i, w, D, D1, D2, alpha,
                                  variant, delta, g, t, u, x)


class MAMLRule(ConfigRule, StepRule):
    """[P] Option B local steps; ``variant`` is ``"maml"``, ``"fomaml"`` or ``"hfmaml"``."""

    DEFAULTS = {**ConfigRule.DEFAULTS, "hf_delta": 1e-3}

    @classmethod
    def check_config(cls, name: str, cfg: Any) -> None:
        """Q, eta, batch; ``alpha`` (the MAML inner step, required, >= 0); ``hf_delta``."""
        super().check_config(name, cfg)
        require(cfg.alpha is not None, "algorithm.alpha", None,
                f"(the MAML inner step) is required for client_rule {name!r}")
        check_number("algorithm.alpha", cfg.alpha, low=0.0)
        if cfg.hf_delta is not None:
            check_number("algorithm.hf_delta", cfg.hf_delta, low=0.0, strict=True)
        for key in ("batch_inner", "batch_hess"):  # |D'| and |D''| (default: batch)
            if getattr(cfg, key, None) is not None:
                check_integer(f"algorithm.{key}", getattr(cfg, key), low=1)

    @classmethod
    def from_config(cls, name: str, cfg: Any, problem: Problem) -> MAMLRule:
        """The rule of ``client_rule = name`` (``"maml"``, ``"fomaml"``, ``"hfmaml"``)."""
        g = cfg.get
        return cls(problem, g("eta"), g("Q"), g("batch"), float(cfg.alpha), name,
                   g("hf_delta"), batch_inner=getattr(cfg, "batch_inner", None),
                   batch_hess=getattr(cfg, "batch_hess", None))

    def __init__(self, problem: Problem, eta: float, Q: int, batch: int, alpha: float,
                 variant: str = "maml", hf_delta: float = 1e-3, *,
                 batch_inner: int | None = None, batch_hess: int | None = None) -> None:
        require(variant in ("maml", "fomaml", "hfmaml"), "algorithm.client_rule", variant,
                "must be 'maml', 'fomaml' or 'hfmaml'")
        require(math.isfinite(alpha) and alpha >= 0, "algorithm.alpha", alpha,
                "must be finite and >= 0")
        require(hf_delta > 0, "algorithm.hf_delta", hf_delta, "must be > 0")
        require(int(Q) == Q and Q >= 1, "algorithm.Q", Q, "must be an integer >= 1")
        self.problem = problem
        self.eta, self.Q, self.batch = float(eta), int(Q), int(batch)
        self.alpha, self.variant, self.hf_delta = float(alpha), variant, float(hf_delta)
        self.name = variant
        self.batch_inner = self.batch if batch_inner is None else int(batch_inner)
        self.batch_hess = self.batch if batch_hess is None else int(batch_hess)
        require(self.batch_inner >= 1 and self.batch_hess >= 1, "algorithm.batch_inner",
                (self.batch_inner, self.batch_hess), "batch_inner and batch_hess must be >= 1")
        self.code = VARIANTS.index(variant)
        cv = rule_view(problem, self.batch)
        self.cv = cv if cv is not None and getattr(cv, "hvp", None) is not None else None
        if self.cv is not None:
            self.draws = self.batch + self.batch_inner + (
                0 if variant == "fomaml" else self.batch_hess)
            self._round = Bound(sgd_round, compiled_maml_grad(self.cv.grad, self.cv.hvp))
        else:
            self.draws = 0
        self._d = -1

    def _view(self, d: int) -> tuple:
        """The oracle's view for models of length ``d`` (work vectors allocated once)."""
        if d != self._d:
            self._d = d
            self._g = np.empty(d)
            work = (np.empty(d), np.empty(d), np.empty(d))
            data = self.problem if self.cv is None else self.cv.data
            self.view = (data, self.batch, self.batch_inner, self.batch_hess, self.alpha,
                         self.code, self.hf_delta, *work)
        return self.view

    def direction(self, i: int, w: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The stochastic MAML gradient estimate at ``w`` ([P] eq. (9) or its variants), as
        a new array (draws one step's batches from ``rng``)."""
        w = np.asarray(w, dtype=np.float64)
        view = self._view(w.shape[0])
        g = np.empty(w.shape[0])
        if self.cv is None:
            problem_maml_grad(view, i, w, rng, g)
        else:
            z = round_block(self.cv, rng, i, 1, self.draws, g)[0]
            compiled_maml_grad(self.cv.grad, self.cv.hvp)(view, i, w, z, g)
        return g

    def round(self, i: int, w0: np.ndarray, out: np.ndarray, rng: np.random.Generator,
              eta: float | None = None, Q: int | None = None) -> np.ndarray:
        """Q local steps ``w <- w - eta dir`` from ``w0`` into ``out`` (``w0`` is only read):
        :func:`~fedsim.local.sgd.sgd_round` with the MAML oracle."""
        eta = self.eta if eta is None else float(eta)
        Q = self.Q if Q is None else int(Q)
        view = self._view(out.shape[0])
        if self.cv is None:
            sgd_round.py_func(problem_maml_grad, view, i, w0, out, RngSteps(rng), eta, Q,
                              self._g)
        else:
            Z = round_block(self.cv, rng, i, Q, self.draws, self._g)
            self._round(view, i, w0, out, Z, eta, Q, self._g)
        return out

    def step(self, i: int, w: np.ndarray, rng: np.random.Generator,
             eta: float | None = None) -> np.ndarray:
        """One local step in place."""
        return self.round(i, w, w, rng, eta, 1)

    #: scratch rows of the uniform update (the gradient, the estimator's work vectors)
    c_rows = 4

    def params(self) -> np.ndarray:
        """``fp`` of :func:`maml_update_for` (:data:`FP_LAYOUT`)."""
        return np.array([self.eta, self.alpha, float(self.code), self.hf_delta,
                         float(self.batch), float(self.batch_inner), float(self.batch_hess)])

    def replay_form(self) -> ClientForm:
        """This rule in the replay's uniform shape (:class:`~fedsim.local.forms.ClientForm`):
        on a view with a compiled ``hvp``, :func:`maml_update_for` with the view's ``draw``
        per step (``k = |D| + |D'| + |D''|`` row indices a step: D, D', D'' in that order,
        the numbers of the engine's one ``integers`` call per round); else
        :func:`interpreted_maml_update` on the problem, ``Z`` the client's stream."""
        fp = self.params()
        cv = self.cv
        if cv is not None:
            return ClientForm(update=maml_update_for(cv.grad, cv.hvp),
                              draw_round=view_draw_round(cv.draw), vdata=cv.data,
                              c_rows=self.c_rows, k=self.draws, dtype=cv.dtype, fp=fp,
                              compiled=True)
        return ClientForm(update=interpreted_maml_update(), draw_round=rng_draw_round,
                          vdata=self.problem, c_rows=self.c_rows, k=0, dtype=np.float64,
                          fp=fp, compiled=False, make_z=lambda nsteps: RngSteps(None))
