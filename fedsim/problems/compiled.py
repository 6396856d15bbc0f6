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
  :class:`fedsim.engine.replay.streams.Stream` (``fedsim.rng``'s PCG64 streams without
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
changes.  Example: :mod:`fedsim.problems.quadratic_view`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["CompiledView", "compiled_view", "has_compiled_view"]


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

    def codes(self, names: Any) -> np.ndarray:
        """The ``codes`` array of ``metrics`` for the metric ``names`` (all must be in
        :attr:`metric_names`: :meth:`has_metrics`)."""
        return np.array([self.metric_names.index(m) for m in names], dtype=np.int64)

    def has_metrics(self, names: Any) -> bool:
        """Whether every metric in ``names`` is one of the view's compiled metrics."""
        return all(m in self.metric_names for m in names)


def has_compiled_view(problem: Any) -> bool:
    """Whether ``problem`` offers ``compiled_view(batch)``."""
    return callable(getattr(problem, "compiled_view", None))


def compiled_view(problem: Any, batch: int) -> CompiledView | None:
    """``problem.compiled_view(batch)``, or ``None`` when the problem has no compiled view
    (or its method returns ``None`` for this batch size)."""
    make = getattr(problem, "compiled_view", None)
    return make(int(batch)) if callable(make) else None
