"""What a problem's *compiled view* is: the data and compiled oracles the replay runs on.

A problem that can run compiled (numba, :mod:`fedsim.jit`) has a method
``compiled_view(batch) -> CompiledView`` (``batch``: the minibatch size of the client rule).
The replay (:mod:`fedsim.engine.replay`) and the compiled rules (:mod:`fedsim.local.sgd`)
use only this interface, never the problem's name: a problem has a compiled view or it
has none (:func:`compiled_view` returns ``None``; the engines then run the interpreted
path).

The view (:class:`CompiledView`) holds

* ``data`` -- a tuple of arrays and scalars, the only thing the compiled oracles read
  (numba passes tuples to compiled code);
* ``draw(data, i, gen, z) -> 0`` -- compiled: fills ``z`` (``draws`` numbers of dtype
  ``dtype``) with the randomness of ONE local step of client ``i``, drawn from ``gen``,
  the client's stream, in exactly the order and with exactly the NumPy calls by which the
  interpreted ``sample_batch(i, batch, rng)`` draws them (so the numbers are bitwise the
  same).  ``gen`` is a NumPy ``Generator`` as numba types it, or any object numba types
  with the same methods -- the replay passes
  :class:`fedsim.rng.streams.Stream` (``fedsim.rng``'s PCG64 streams without
  Python objects), which offers ``standard_normal()``, ``random()``,
  ``standard_exponential()`` and ``integers(low, high)`` (scalars, bitwise NumPy's); a
  ``draw`` that needs another method must say so and the stream must grow it;
* ``grad(data, i, w, z, g) -> 0`` -- compiled: ``g = batch_grad(i, w, batch)`` for the
  batch that ``z`` encodes (the stochastic gradient of [P] Alg. 2 line 7), computed with
  one fixed order of operations (both engines call this same function, so they agree bit
  for bit);
* ``draws`` (int, may be 0: a step without randomness) and ``dtype`` (``np.float64`` for
  normals/uniforms, ``np.int64`` for sample indices) of ``z``;
* ``metrics(mdata, codes, w, out) -> 0`` -- compiled: ``out[k]`` = metric
  ``metric_names[codes[k]]`` of the global objective at ``w``; ``mdata`` its data tuple;
  a metric with a parameter (:data:`METRIC_PARAMS`: ``grad_maml_sq`` reads ``maml_alpha``,
  ``grad_me_sq`` ``me_lam``) reads it from the ``mdata`` that
  :meth:`CompiledView.metric_data` returns for the run's parameters and recorded metric
  names (``with_params(mdata, maml_alpha, me_lam, names)``, the view's Python function,
  which may also fill in what only some metrics need, e.g. the logistic view's ``f*`` and
  ``x*`` for ``f_gap``/``dist_sq``; without it ``mdata`` as is);
* ``normal_block`` -- ``True`` when every step's ``z`` is ``draws`` standard normals
  (``z[k] = gen.standard_normal()``), so that a round's ``Q`` steps are one NumPy
  ``standard_normal(out=Z)`` call with ``Z`` of shape ``(Q, draws)`` (the SimPy engine's
  fast path; the numbers are the same as ``Q`` calls of ``draw``).

An oracle pair is written once, as plain functions of ``data`` decorated with
``fedsim.jit.jit(inline=True)`` (the replay inlines them into its loop; a call would cost
more than a small step); ``fn.py_func`` runs it interpreted for step-by-step tests.
``draw``, ``grad`` and ``metrics`` must not allocate arrays: the replay loop is compiled
without reference counting (``jit(nrt=False)``); scratch space belongs in ``data`` /
``mdata`` (a view serves one thread: build one per thread or per replay group).
Adding a compiled problem: write ``draw``/``grad``/``metrics`` in its ``*_view`` module,
return a :class:`CompiledView` from its ``compiled_view(batch)``; nothing in the replay
changes.  Examples: :mod:`fedsim.problems.quadratic_view`, :mod:`fedsim.problems.norm_view`
(no draws), :mod:`fedsim.problems.logistic_view` (row indices).

A view stands for the per-call oracles of one class (:data:`VIEW_ORACLES`), so
:func:`compiled_view` -- the one way in for the rules, the engines and the replay -- gives
``None`` when they are not that class's own: a subclass or an instance that replaces one of
them (to count, perturb or log the calls) runs interpreted, through its own methods.  The
class is the first of the MRO that sets ``compiled_view_base = True`` in its own body, else
the first that defines ``compiled_view``.  ``compiled_view`` is looked up on the class, so a
wrapper that forwards attributes to a problem gets the interpreted path it wraps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["CompiledView", "compiled_view", "has_compiled_view", "view_base", "VIEW_ORACLES",
           "METRIC_PARAMS"]

#: the per-call oracles a compiled view stands for
VIEW_ORACLES = ("grad", "loss", "sample_batch", "batch_grad", "batch_hvp")

#: the metrics with a parameter, and its name (``fedsim.engine.setup.metric_params``)
METRIC_PARAMS = {"grad_maml_sq": "maml_alpha", "grad_me_sq": "me_lam"}


@dataclass(frozen=True)
class CompiledView:
    """A problem's compiled oracles and their data (module docstring)."""

    data: tuple
    draw: Any
    grad: Any
    draws: int
    dtype: Any
    metrics: Any
    mdata: tuple
    metric_names: tuple[str, ...]
    normal_block: bool = False
    with_params: Any = None

    def codes(self, names: Any) -> np.ndarray:
        """The ``codes`` array of ``metrics`` for the metric ``names`` (all must be in
        :attr:`metric_names`: :meth:`has_metrics`)."""
        return np.array([self.metric_names.index(m) for m in names], dtype=np.int64)

    def has_metrics(self, names: Any, *, maml_alpha: float | None = None,
                    me_lam: float | None = None) -> bool:
        """Whether every metric in ``names`` is one of the view's compiled metrics, each
        with its parameter (:data:`METRIC_PARAMS`) given (not ``None``)."""
        given = {"maml_alpha": maml_alpha, "me_lam": me_lam}
        return all(m in self.metric_names
                   and (m not in METRIC_PARAMS or given[METRIC_PARAMS[m]] is not None)
                   for m in names)

    def metric_data(self, *, maml_alpha: float | None = None,
                    me_lam: float | None = None, names: Any = ()) -> tuple:
        """The ``mdata`` of :attr:`metrics` for these metric parameters and the metric
        ``names`` to be computed (module docstring): ``with_params(mdata, maml_alpha,
        me_lam, names)``, or :attr:`mdata` for a view without parameterised metrics."""
        if self.with_params is None:
            return self.mdata
        return self.with_params(self.mdata, maml_alpha, me_lam, tuple(names))


def view_base(cls: type) -> type | None:
    """The class whose oracles ``cls``'s compiled view stands for (module docstring), or
    ``None`` when ``cls`` has no ``compiled_view``."""
    mro = cls.__mro__
    if not callable(getattr(cls, "compiled_view", None)):
        return None
    marked = [c for c in mro if vars(c).get("compiled_view_base")]
    if marked:
        return marked[0]
    return next((c for c in mro if "compiled_view" in vars(c)), None)


def has_compiled_view(problem: Any) -> bool:
    """Whether ``problem``'s class offers ``compiled_view(batch)`` and ``problem`` keeps the
    oracles that view stands for (:func:`compiled_view` may still return ``None`` for a
    batch size)."""
    base = view_base(type(problem))
    if base is None:
        return False
    cls, own = type(problem), vars(problem) if hasattr(problem, "__dict__") else {}
    return not any(getattr(cls, m, None) is not getattr(base, m, None) or m in own
                   for m in VIEW_ORACLES)


def compiled_view(problem: Any, batch: int) -> CompiledView | None:
    """``problem.compiled_view(batch)``, or ``None`` when the problem has no compiled view,
    replaces an oracle the view stands for (module docstring), or its method returns
    ``None`` for this batch size."""
    if not has_compiled_view(problem):
        return None
    return type(problem).compiled_view(problem, int(batch))
