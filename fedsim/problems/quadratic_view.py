"""The compiled view of a :class:`~fedsim.problems.quadratic.QuadraticProblem`'s oracles.

A view is a plain tuple of arrays (what numba passes to compiled code); the oracle is a
compiled function of the view, so the rules in :mod:`fedsim.local` and the replay in
:mod:`fedsim.engine.replay` call it without knowing the problem.

``view = (At, hix, b, mode, scale, F, zero)`` for batch size ``m``: ``At`` (k, d, d) the
``k`` distinct Hessians transposed (``At[hix[i], j]`` is column ``j`` of ``A_i``,
contiguous; ``hix`` (n,) each client's, so a Hessian all clients share is stored once, not
``n`` times) and ``b`` (n, d) the clients' optima (THEORY_SPEC 9.1, ``f_i(w) = (w - b_i)^T A_i
(w - b_i)/2 + c_i``); the gradient noise ``e ~ N(0, C_i / m)`` with ``C_i =
grad_noise_cov(i)`` is ``mode`` 0 (no noise, no draw), 1 (additive and isotropic, ``C_i =
s_i^2 I``: ``e = scale_i z``, ``scale_i = sqrt(s_i^2 / m)``) or 2 (``e = F_i z`` with the
factor ``sample_batch`` applies to the same normals: ``F_i = L_i / sqrt(m)`` additive,
``F_i = -A_i L_i / sqrt(m)`` sampling, ``L_i`` = ``QuadraticProblem.noise_factor[i]``,
``L_i L_i^T = S_i``), ``z`` the step's standard normals,
taken from the client's ``noise`` stream (:func:`draws_per_step`: ``d``, or 0 without
noise; the caller draws a round's ``Q d`` in one block, the numbers Q draws of ``d`` give).

:func:`quadratic_sample_grad` is ``batch_grad(i, w, sample_batch(i, m, rng))`` of the
additive model, written for numba ([P] Assumption 2: ``grad f_i(w) + e``), and of the
sampling model (``A_i (w - xibar_D) = grad f_i(w) + e``, ``e = A_i (b_i - xibar_D)`` with
covariance ``A_i S_i A_i / m = C_i / m``): the same numbers up to rounding, from the same
normals.  :func:`quadratic_metrics` evaluates the recorded metrics
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
           "METRIC_CODES", "quadratic_prox_data", "quadratic_batch_theta_hat",
           "quadratic_hess_diag"]

#: the quadratic's compiled metrics, in code order
METRIC_CODES = ("grad_sq", "dist_sq", "f_gap")


def quadratic_view(problem, batch: int) -> tuple:
    """``(At, hix, b, mode, scale, F, zero)`` of ``problem`` for batches of ``batch``
    samples (``At[hix[i], j, k] = A_i[k, j]``: the columns of ``A_i`` contiguous, one copy
    per distinct Hessian, ``QuadraticProblem.hessians_distinct``; ``zero`` the zero
    vector)."""
    n, d = problem.n, problem.dim
    # the distinct C_i and each client's: the checks read each value once
    C, index = problem.noise_distinct()
    diag = np.einsum("nii->ni", C)
    off = C - np.einsum("ni,ij->nij", diag, np.eye(d))
    iso = bool(np.all(off == 0.0)) and bool(np.all(diag == diag[:, :1]))
    zero = bool(np.all(C == 0.0))
    scale = np.zeros(n)
    F = np.zeros((0, d, d))  # read in mode 2 only
    if zero:
        mode = 0
    elif iso and problem.noise == "additive":
        mode = 1
        scale[:] = np.sqrt(diag[:, 0] / batch)[index]
    else:
        # the factor sample_batch applies to the same normals: e = L_i z / sqrt(m)
        # (additive), e = -A_i L_i z / sqrt(m) (sampling: A_i (w - xibar_D))
        mode = 2
        L = np.asarray(problem.noise_factor, dtype=np.float64)
        if problem.noise != "additive":
            L = -(np.asarray(problem.A_stack, dtype=np.float64) @ L)
        F = np.ascontiguousarray(L * (1.0 / math.sqrt(batch)))
    H, hix = problem.hessians_distinct()
    H = np.ascontiguousarray(H, dtype=np.float64)
    # A_i is symmetric bit for bit (QuadraticProblem symmetrises it): then H is its own At
    At = H if np.array_equal(H, H.transpose(0, 2, 1)) else np.ascontiguousarray(
        H.transpose(0, 2, 1))
    return (At, np.ascontiguousarray(hix, dtype=np.int64),
            np.ascontiguousarray(problem.b_stack, dtype=np.float64), mode, scale, F,
            np.zeros(d))


def draws_per_step(view: tuple) -> int:
    """Standard normals one local step takes from the client's ``noise`` stream."""
    return 0 if view[3] == 0 else view[0].shape[1]


@jit(inline=True)
def affine_rows(Mt, w, sh, init, out):
    """``out[a] = init[a] + sum_j M[a, j] (w[j] - sh[j])`` with ``Mt = M^T`` (columns
    contiguous), every sum over ``j`` in index order.  Rows are taken eight, then four at
    a time into separate accumulators, which the compiler packs into vectors; the sums
    are not reordered, so the result is that of the plain double loop, bit for bit."""
    d = w.shape[0]
    a = 0
    while a + 8 <= d:
        s0, s1, s2, s3 = init[a], init[a + 1], init[a + 2], init[a + 3]
        s4, s5, s6, s7 = init[a + 4], init[a + 5], init[a + 6], init[a + 7]
        for j in range(d):
            r = w[j] - sh[j]
            s0 += Mt[j, a] * r
            s1 += Mt[j, a + 1] * r
            s2 += Mt[j, a + 2] * r
            s3 += Mt[j, a + 3] * r
            s4 += Mt[j, a + 4] * r
            s5 += Mt[j, a + 5] * r
            s6 += Mt[j, a + 6] * r
            s7 += Mt[j, a + 7] * r
        out[a], out[a + 1], out[a + 2], out[a + 3] = s0, s1, s2, s3
        out[a + 4], out[a + 5], out[a + 6], out[a + 7] = s4, s5, s6, s7
        a += 8
    while a + 4 <= d:
        s0, s1, s2, s3 = init[a], init[a + 1], init[a + 2], init[a + 3]
        for j in range(d):
            r = w[j] - sh[j]
            s0 += Mt[j, a] * r
            s1 += Mt[j, a + 1] * r
            s2 += Mt[j, a + 2] * r
            s3 += Mt[j, a + 3] * r
        out[a], out[a + 1], out[a + 2], out[a + 3] = s0, s1, s2, s3
        a += 4
    while a < d:
        s0 = init[a]
        for j in range(d):
            s0 += Mt[j, a] * (w[j] - sh[j])
        out[a] = s0
        a += 1
    return 0


@jit(inline=True)
def quadratic_draw(view, i, gen, z):
    """One step's randomness: ``z[k] = gen.standard_normal()`` for ``k < len(z)`` (the
    numbers ``sample_batch`` draws with ``rng.standard_normal(d)``; none without noise)."""
    for k in range(z.shape[0]):
        z[k] = gen.standard_normal()
    return 0


@jit(inline=True)
def quadratic_sample_grad(view, i, w, z, g):
    """``g = A_i (w - b_i) + e``, ``e`` from the step's normals ``z`` (module docstring).

    ``(A_i r)_k = sum_j A_ikj r_j`` (``r = w - b_i``) is summed over ``j`` in order, from
    0.0, for every ``k`` (:func:`affine_rows`), then ``e_k`` is added.
    """
    At, hix, b, mode, scale, F, zero = view
    d = w.shape[0]
    affine_rows(At[hix[i]], w, b[i], zero, g)
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


@jit(inline=True)
def quadratic_hess_diag(view, i, w, h):
    """``h = diag(grad^2 f_i(w)) = diag(A_i)`` (independent of ``w``; ``At[hix[i], k, k] =
    A_i[k, k]`` exactly): the diagonal of ``QuadraticProblem.hess(i, w)``."""
    At, hix = view[0], view[1]
    j = hix[i]
    for k in range(h.shape[0]):
        h[k] = At[j, k, k]
    return 0


def quadratic_metric_view(problem) -> tuple:
    """``(M,)``, one ``(d + 4, d)`` array (one argument to unbox per call from Python):
    rows ``0..d-1`` hold ``Abar^T`` (row ``j`` is column ``j`` of ``Abar``), then ``-m``,
    ``x*``, the zero vector and a scratch row (a metric view serves one thread); ``grad
    f(w) = Abar w - m``, ``f(w) - f* = (w - x*)^T Abar (w - x*)/2``."""
    Abar = np.asarray(problem.Abar, dtype=np.float64)
    d = Abar.shape[0]
    M = np.zeros((d + 4, d))
    M[:d] = Abar.T
    M[d] = -np.asarray(problem.m, dtype=np.float64)
    M[d + 1] = np.asarray(problem.x_star, dtype=np.float64)
    return (M,)


@jit
def quadratic_metrics(mview, codes, w, out):
    """``out[k]`` = metric ``METRIC_CODES[codes[k]]`` of the global objective at ``w``.

    ``grad_sq = sum_a s_a^2``, ``s_a = -m_a + sum_j Abar_aj w_j``; ``f_gap = (sum_a (w_a -
    x*_a) t_a) / 2``, ``t_a = 0 + sum_j Abar_aj (w_j - x*_j)``: every sum in index order
    (``w_j - 0.0`` is ``w_j`` exactly; :func:`affine_rows`, into ``mview``'s scratch
    vector ``s``).
    """
    M = mview[0]
    d = w.shape[0]
    AbarT = M[:d]
    negm = M[d]
    xs = M[d + 1]
    zero = M[d + 2]
    s = M[d + 3]
    for k in range(codes.shape[0]):
        c = codes[k]
        acc = 0.0
        if c == 0:
            affine_rows(AbarT, w, zero, negm, s)
            for a in range(d):
                acc += s[a] * s[a]
        elif c == 1:
            for a in range(d):
                r = w[a] - xs[a]
                acc += r * r
        else:
            affine_rows(AbarT, w, xs, zero, s)
            for a in range(d):
                acc += (w[a] - xs[a]) * s[a]
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


def quadratic_prox_data(problem, lam: float) -> np.ndarray:
    """``K``, the clients' ``(A_i + lam I)^{-1}`` stacked and flattened (``n d d`` floats,
    ``K[(i d + a) d + j]`` is entry ``(a, j)`` of client ``i``'s), from the eigenpairs of
    ``A_i``: ``V diag(1/(ev + lam)) V^T``; the data of :func:`quadratic_batch_theta_hat`."""
    V = np.asarray(problem.eigvecs, dtype=np.float64)
    ev = np.asarray(problem.eigvals, dtype=np.float64)
    K = np.einsum("nij,nj,nkj->nik", V, 1.0 / (ev + float(lam)), V)
    return np.ascontiguousarray(K).reshape(-1)


@jit(inline=True)
def quadratic_batch_theta_hat(view, i, w, z, K, g, th):
    """``th = argmin_theta f_tilde_i(theta, D) + lam/2 ||theta - w||^2`` for the batch ``D``
    that ``z`` encodes ([P] eq. (10), Option C's inner problem solved exactly, THEORY_SPEC
    10.2; ``QuadraticProblem.batch_theta_hat``).

    The batch gradient is affine with Hessian ``A_i``, so ONE Newton step from ``w`` is
    the minimiser: ``th = w - (A_i + lam I)^{-1} g``, ``g = grad f_tilde_i(w, D)``
    (:func:`quadratic_sample_grad`, written into ``g``); ``K`` is
    :func:`quadratic_prox_data` for the ``lam`` of the rule, each sum over ``j`` in index
    order."""
    quadratic_sample_grad(view, i, w, z, g)
    d = w.shape[0]
    base = i * d * d
    for a in range(d):
        s = 0.0
        row = base + a * d
        for j in range(d):
            s += K[row + j] * g[j]
        th[a] = w[a] - s
    return 0
