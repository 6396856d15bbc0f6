"""The compiled view of a :class:`~fedsim.problems.nonsmooth.NormProblem`'s oracles.

``f_i(x) = B ||x - c_i||`` ([A] Theorem 8's family, THEORY_SPEC 7.d).  As for the quadratic
(:mod:`fedsim.problems.quadratic_view`), a view is a plain tuple of arrays and the oracles
are compiled functions of it, so the rules of :mod:`fedsim.local` and the replay call them
without knowing the problem:

* ``data = (B, C)``, ``C`` the (n, d) centres; :func:`norm_sample_grad` has the signature
  of :func:`~fedsim.problems.quadratic_view.quadratic_sample_grad` and writes the fixed
  subgradient selection ``B (w - c_i)/||w - c_i||`` (0 at the kink ``w = c_i``) into ``g``;
  the oracle is deterministic, so a step takes no draws (``draws = 0``, ``z`` is empty; the
  view's ``draw`` is :func:`~fedsim.problems.quadratic_view.quadratic_draw`, which draws
  ``len(z)`` normals: none);
* :func:`norm_loss` is ``f_i(w) = B ||w - c_i||``, :func:`norm_f` ``f(w) = mean_i f_i(w)``;
* ``mdata = (B, C, dview, fstar, work)`` (:func:`norm_metric_view`); :func:`norm_metrics`
  writes the recorded metrics of the global objective ``f = mean_i f_i`` in the order of
  :data:`~fedsim.problems.quadratic_view.METRIC_CODES` (``grad_sq``: ``||mean_i g_i(w)||^2``
  of the subgradient selection; ``dist_sq``: ``||w - x*||^2``; ``f_gap``: ``f(w) - f*``),
  allocating nothing (``work`` is its scratch: a metric view serves one thread).

:func:`norm_compiled_view` bundles them as the problem's
:class:`~fedsim.problems.compiled.CompiledView` (``NormProblem.compiled_view``).

``||v||`` is ``sqrt(sum_k v_k^2)``, summed in coordinate order; means over clients sum in
client order, then divide by n.
"""

from __future__ import annotations

import numpy as np

from fedsim.jit import jit
from fedsim.problems.compiled import CompiledView
from fedsim.problems.quadratic_view import METRIC_CODES, quadratic_draw, quadratic_metrics

__all__ = ["norm_view", "norm_sample_grad", "norm_loss", "norm_f", "norm_metric_view",
           "norm_metrics", "norm_compiled_view"]


def norm_view(problem) -> tuple:
    """``(B, C)`` of ``problem`` (a float and the C-contiguous (n, d) centres)."""
    return (float(problem.B), np.ascontiguousarray(problem.centers, dtype=np.float64))


@jit(inline=True)
def norm_sample_grad(view, i, w, z, g):
    """``g = B (w - c_i)/||w - c_i||``, ``0`` at ``w = c_i`` ([A] Asm 1's fixed selection);
    ``z`` (the step's draws) is empty and unused."""
    B, C = view
    d = w.shape[0]
    s = 0.0
    for k in range(d):
        v = w[k] - C[i, k]
        s += v * v
    nv = np.sqrt(s)
    if nv == 0.0:
        for k in range(d):
            g[k] = 0.0
    else:
        coef = B / nv
        for k in range(d):
            g[k] = coef * (w[k] - C[i, k])
    return 0


@jit(inline=True)
def norm_loss(view, i, w):
    """``f_i(w) = B ||w - c_i||``."""
    B, C = view
    s = 0.0
    for k in range(w.shape[0]):
        v = w[k] - C[i, k]
        s += v * v
    return B * np.sqrt(s)


@jit(inline=True)
def norm_f(view, w):
    """``f(w) = (sum_i f_i(w)) / n``, summed in client order."""
    n = view[1].shape[0]
    tot = 0.0
    for i in range(n):
        tot += norm_loss(view, i, w)
    return tot / n


def norm_metric_view(problem) -> tuple:
    """``(B, C, dview, f_star, work)``: ``dview`` a quadratic metric view
    (:func:`~fedsim.problems.quadratic_view.quadratic_metric_view`'s layout) whose only
    used row is the minimiser, for ``dist_sq``; ``work`` (3, d) scratch rows (module
    docstring)."""
    B, C = norm_view(problem)
    d = C.shape[1]
    M = np.zeros((d + 4, d))
    M[d + 1] = np.asarray(problem.x_star, dtype=np.float64)
    return (B, C, (M,), float(problem.f_star), np.zeros((3, d)))


@jit(inline=True)
def norm_metrics(mview, codes, w, out):
    """``out[k]`` = metric ``METRIC_CODES[codes[k]]`` of ``f = mean_i f_i`` at ``w``:
    ``grad_sq`` from :func:`norm_sample_grad` (the mean of the clients' subgradients, summed
    in client order), ``dist_sq`` by :func:`~fedsim.problems.quadratic_view.quadratic_metrics`
    (its one home, on the minimiser alone), ``f_gap`` from :func:`norm_f`."""
    B, C, dview, fstar, work = mview
    n, d = C.shape
    gsum = work[0]
    g = work[1]
    z = work[2, :0]
    for k in range(codes.shape[0]):
        c = codes[k]
        if c == 0:
            for a in range(d):
                gsum[a] = 0.0
            for i in range(n):
                norm_sample_grad((B, C), i, w, z, g)
                for a in range(d):
                    gsum[a] += g[a]
            acc = 0.0
            for a in range(d):
                s = gsum[a] / n
                acc += s * s
            out[k] = acc
        elif c == 1:
            quadratic_metrics(dview, codes[k:k + 1], w, out[k:k + 1])
        else:
            out[k] = norm_f((B, C), w) - fstar
    return 0


def norm_compiled_view(problem, mdata: tuple) -> CompiledView:
    """The :class:`~fedsim.problems.compiled.CompiledView` of ``problem`` (any batch size:
    the oracle is exact) with the metric view ``mdata`` (:func:`norm_metric_view`)."""
    return CompiledView(data=norm_view(problem), draw=quadratic_draw, grad=norm_sample_grad,
                        draws=0, dtype=np.float64, metrics=norm_metrics, mdata=mdata,
                        metric_names=METRIC_CODES, normal_block=True)
