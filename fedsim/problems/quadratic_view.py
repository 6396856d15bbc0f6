"""The compiled view of a :class:`~fedsim.problems.quadratic.QuadraticProblem`'s oracles.

A view is a plain tuple of arrays (what numba passes to compiled code); the oracle is a
compiled function of the view, so the rules in :mod:`fedsim.local` and the replay in
:mod:`fedsim.engine.replay` call it without knowing the problem.

``view = (A, b, mode, scale, F)`` for batch size ``m``: ``A`` (n, d, d) and ``b``
(n, d) the clients' Hessians and optima (THEORY_SPEC 9.1, ``f_i(w) = (w - b_i)^T A_i
(w - b_i)/2 + c_i``); the gradient noise ``e ~ N(0, C_i / m)`` with ``C_i =
grad_noise_cov(i)`` is ``mode`` 0 (no noise, no draw), 1 (isotropic, ``C_i = s_i^2 I``:
``e = scale_i z``, ``scale_i = sqrt(s_i^2 / m)``) or 2 (``e = F_i z``, ``F_i = V sqrt(max(ev,
0)) V^T / sqrt(m)`` from ``eigh((C_i + C_i^T)/2)``), ``z`` the step's standard normals,
taken from the client's ``noise`` stream (:func:`draws_per_step`: ``d``, or 0 without
noise; the caller draws a round's ``Q d`` in one block, the numbers Q draws of ``d`` give).

:func:`quadratic_sample_grad` is ``batch_grad(i, w, sample_batch(i, m, rng))`` of the
additive model, written for numba ([P] Assumption 2: ``grad f_i(w) + e``; for the sampling
model ``A_i (w - xibar_D)`` has the same law, ``e = A_i (b_i - xibar_D)`` with covariance
``A_i S_i A_i / m = C_i / m``).  :func:`quadratic_metrics` evaluates the recorded metrics
of the global objective (closed forms of ``QuadraticProblem.grad_f_sq``, ``dist_sq``,
``f_gap``) on one model.  :func:`quadratic_compiled_view` bundles them as the problem's
:class:`~fedsim.problems.compiled.CompiledView` (``QuadraticProblem.compiled_view``).
"""

from __future__ import annotations

import math

import numpy as np

from fedsim.jit import jit
from fedsim.problems.compiled import CompiledView

__all__ = ["quadratic_view", "draws_per_step", "quadratic_draw", "quadratic_sample_grad",
           "quadratic_metric_view", "quadratic_metrics", "quadratic_compiled_view",
           "METRIC_CODES"]

#: the quadratic's compiled metrics, in code order
METRIC_CODES = ("grad_sq", "dist_sq", "f_gap")


def quadratic_view(problem, batch: int) -> tuple:
    """``(A, b, mode, scale, F)`` of ``problem`` for batches of ``batch`` samples."""
    n, d = problem.n, problem.dim
    C = np.asarray(problem.C_stack)
    diag = np.einsum("nii->ni", C)
    off = C - np.einsum("ni,ij->nij", diag, np.eye(d))
    iso = bool(np.all(off == 0.0)) and bool(np.all(diag == diag[:, :1]))
    zero = bool(np.all(C == 0.0))
    scale = np.zeros(n)
    F = np.zeros((n, d, d))
    if zero:
        mode = 0
    elif iso:
        mode = 1
        scale[:] = [math.sqrt(float(diag[i, 0]) / batch) for i in range(n)]
    else:
        mode = 2
        for i in range(n):
            ev, vec = np.linalg.eigh(0.5 * (C[i] + C[i].T))
            F[i] = (vec * np.sqrt(np.clip(ev, 0.0, None))) @ vec.T / math.sqrt(batch)
    return (np.ascontiguousarray(problem.A_stack, dtype=np.float64),
            np.ascontiguousarray(problem.b_stack, dtype=np.float64), mode, scale, F)


def draws_per_step(view: tuple) -> int:
    """Standard normals one local step takes from the client's ``noise`` stream."""
    return 0 if view[2] == 0 else view[0].shape[1]


@jit
def quadratic_draw(view, i, gen, z):
    """One step's randomness: ``z[k] = gen.standard_normal()`` for ``k < len(z)`` (the
    numbers ``sample_batch`` draws with ``rng.standard_normal(d)``; none without noise)."""
    for k in range(z.shape[0]):
        z[k] = gen.standard_normal()
    return 0


@jit
def quadratic_sample_grad(view, i, w, z, g):
    """``g = A_i (w - b_i) + e``, ``e`` from the step's normals ``z`` (module docstring).

    ``(A_i r)_k = sum_j A_ikj r_j`` is summed over ``j`` in order for every ``k`` (the
    columns are added one after the other, which lets the ``k`` loop vectorise), then
    ``e_k`` is added.
    """
    A, b, mode, scale, F = view
    d = w.shape[0]
    for k in range(d):
        g[k] = 0.0
    for j in range(d):
        r = w[j] - b[i, j]
        for k in range(d):
            g[k] += A[i, k, j] * r
    if mode == 1:
        s = scale[i]
        for k in range(d):
            g[k] = g[k] + s * z[k]
    elif mode == 2:
        for k in range(d):
            e = 0.0
            for j in range(d):
                e += F[i, k, j] * z[j]
            g[k] = g[k] + e
    return 0


def quadratic_metric_view(problem) -> tuple:
    """``(Abar, m, x_star)``: ``grad f(w) = Abar w - m``, ``f(w) - f* = (w - x*)^T Abar
    (w - x*)/2``."""
    return (np.ascontiguousarray(problem.Abar, dtype=np.float64),
            np.ascontiguousarray(problem.m, dtype=np.float64),
            np.ascontiguousarray(problem.x_star, dtype=np.float64))


@jit
def quadratic_metrics(mview, codes, w, out):
    """``out[k]`` = metric ``METRIC_CODES[codes[k]]`` of the global objective at ``w``."""
    Abar, m, xs = mview
    d = w.shape[0]
    for k in range(codes.shape[0]):
        c = codes[k]
        acc = 0.0
        if c == 0:
            for a in range(d):
                s = -m[a]
                for j in range(d):
                    s += Abar[a, j] * w[j]
                acc += s * s
        elif c == 1:
            for a in range(d):
                r = w[a] - xs[a]
                acc += r * r
        else:
            for a in range(d):
                s = 0.0
                for j in range(d):
                    s += Abar[a, j] * (w[j] - xs[j])
                acc += (w[a] - xs[a]) * s
            acc = 0.5 * acc
        out[k] = acc
    return 0


def quadratic_compiled_view(problem, batch: int) -> CompiledView:
    """The :class:`~fedsim.problems.compiled.CompiledView` of ``problem`` for batches of
    ``batch`` samples: :func:`quadratic_draw`, :func:`quadratic_sample_grad` and
    :func:`quadratic_metrics` (``METRIC_CODES``)."""
    view = quadratic_view(problem, batch)
    return CompiledView(data=view, draw=quadratic_draw, grad=quadratic_sample_grad,
                        draws=draws_per_step(view), dtype=np.float64,
                        metrics=quadratic_metrics, mdata=quadratic_metric_view(problem),
                        metric_names=METRIC_CODES, normal_block=True)
