"""The compiled view of a :class:`~fedsim.problems.softmax.SoftmaxProblem`'s batch oracles.

``data = (start, X, y, C, reg, W, V, G, XD, Z, U, ab)``: every client's
feature rows and labels stacked (:func:`~fedsim.problems.row_view.stack_rows`, client
``i`` at ``X[start[i]:start[i + 1]]``), the class count, the ridge, then work arrays (the
oracles allocate nothing, :mod:`fedsim.problems.row_view`) and the scalar block of
:func:`~fedsim.problems.blas.matmul_into`.  The model is ``w = W.ravel()``, ``W`` of shape
``(d, C)`` (``w[k C + c] = W[k, c]``).  On a batch ``D`` of ``b`` row indices (drawn with
:func:`~fedsim.problems.row_view.draw_rows`), with ``X_D`` its rows, ``P = softmax(X_D W)``
row by row (``exp(z - max z) / sum exp(z - max z)``, as ``scipy.special.softmax``: no
logit overflows), ``Y_D`` the one-hot labels and ``U = X_D V``::

    batch_grad = vec(X_D^T (P - Y_D)) / b + reg w,
    batch_hvp  = vec(X_D^T (P*U - P*sum_c(P*U))) / b + reg v,

the module docstring of :mod:`fedsim.problems.softmax`.  The batch runs in blocks of
``BLOCK_ROWS`` rows; the products with ``X_D`` are BLAS ``dgemm``
(:func:`~fedsim.problems.blas.matmul_into`), the blocks' ``X_D^T R`` added in block order; a
row's softmax sums its classes in order.  These functions ARE the problem's
``batch_grad`` / ``batch_hvp`` (the problem calls them), so the compiled rules, the
interpreted ones and the problem give the same numbers bit for bit.
:func:`softmax_metrics` evaluates ``grad_sq = ||grad f(w)||^2`` of the global objective
``f = (1/n) sum_i f_i`` with the same blocks over every row, weighted ``1/(n m_i)``
(``SoftmaxProblem.grad_f_sq`` calls it).  :func:`softmax_compiled_view` is the problem's
:class:`~fedsim.problems.row_view.RowsView` (``SoftmaxProblem.compiled_view``).
"""

from __future__ import annotations

import math

import numpy as np

from fedsim.jit import jit
from fedsim.problems.blas import gemm_block, matmul_into
from fedsim.problems.row_view import RowsView, rows_view, squares_into, stack_rows

__all__ = ["softmax_view", "softmax_sample_grad", "softmax_sample_hvp", "softmax_rows",
           "softmax_compiled_view", "softmax_metric_view", "softmax_grad_f", "softmax_metrics",
           "BLOCK_ROWS", "METRIC_NAMES", "softmax_hess_diag"]

#: the compiled metrics of the global objective, in code order
METRIC_NAMES = ("grad_sq",)


#: batch rows per block of the matrix products (the work arrays hold one block)
BLOCK_ROWS = 64


def softmax_view(X: list, y: list, n_classes: int, reg: float) -> tuple:
    """``(start, X, y, C, reg, W, V, G, XD, Z, U, gemm_block())`` from the per-client rows
    and labels (``W``, ``V``, ``G``: (d, C); ``XD``: (BLOCK_ROWS, d); ``Z``, ``U``:
    (BLOCK_ROWS, C))."""
    Xs, start = stack_rows(X)
    ys, _ = stack_rows([np.asarray(yi, dtype=np.int64) for yi in y])
    C, d = int(n_classes), Xs.shape[1]
    return (start, Xs, ys, C, float(reg), np.empty((d, C)), np.empty((d, C)),
            np.empty((d, C)), np.empty((BLOCK_ROWS, d)), np.empty((BLOCK_ROWS, C)),
            np.empty((BLOCK_ROWS, C)), gemm_block())


def softmax_compiled_view(data: tuple, mdata: tuple, batch: int) -> RowsView:
    """The compiled view on ``data`` (:func:`softmax_view`) and ``mdata``
    (:func:`softmax_metric_view`) for batches of ``batch`` rows."""
    return rows_view(data, softmax_sample_grad, softmax_sample_hvp, batch,
                     metrics=softmax_metrics, mdata=mdata, metric_names=METRIC_NAMES)


@jit
def _matrix(w, W):
    """``W = w.reshape(d, C)``, copied (``w`` may be strided)."""
    d, C = W.shape
    for k in range(d):
        for c in range(C):
            W[k, c] = w[k * C + c]
    return 0


@jit
def _gather(X, base, z, r0, nr, XD):
    """``XD[:nr]`` = the rows ``base + z[r0:r0 + nr]`` of ``X``."""
    d = X.shape[1]
    for r in range(nr):
        j = base + z[r0 + r]
        for k in range(d):
            XD[r, k] = X[j, k]
    return 0


@jit
def softmax_rows(Z, nr):
    """``Z[:nr] = softmax(Z[:nr])`` row by row, in place (shifted by each row's largest
    logit; the classes summed in order)."""
    C = Z.shape[1]
    for r in range(nr):
        mx = Z[r, 0]
        for c in range(1, C):
            if Z[r, c] > mx:
                mx = Z[r, c]
        s = 0.0
        for c in range(C):
            e = math.exp(Z[r, c] - mx)
            Z[r, c] = e
            s += e
        for c in range(C):
            Z[r, c] = Z[r, c] / s
    return 0


@jit
def _finish(G, b, reg, w, g):
    """``g = G.ravel() / b + reg w`` (``G`` is zero for an empty batch: ``0/0``, NaN)."""
    d, C = G.shape
    for k in range(d):
        for c in range(C):
            g[k * C + c] = G[k, c] / b + reg * w[k * C + c]
    return 0


@jit
def _residual_products(X, y, base, z, wts, weighted, W, G, XD, Z, ab):
    """``G += sum over blocks of X_D^T R_D``, ``R_D = softmax(X_D W) - Y_D`` on the rows
    ``base + z`` (``BLOCK_ROWS`` at a time, blocks in order), each row of ``R_D`` times
    ``wts[base + z_j]`` when ``weighted``."""
    b = z.shape[0]
    r0 = 0
    while r0 < b:
        nr = min(XD.shape[0], b - r0)
        _gather(X, base, z, r0, nr, XD)
        matmul_into(XD[:nr], W, Z[:nr], False, 0.0, ab)     # X_D W
        softmax_rows(Z, nr)
        for r in range(nr):
            j = base + z[r0 + r]
            Z[r, y[j]] -= 1.0                               # P - Y_D
            if weighted:
                for c in range(Z.shape[1]):
                    Z[r, c] = wts[j] * Z[r, c]
        matmul_into(XD[:nr], Z[:nr], G, True, 1.0, ab)      # G += X_D^T R
        r0 += nr
    return 0


@jit
def softmax_sample_grad(view, i, w, z, g):
    """``g = vec(X_D^T (softmax(X_D W) - Y_D)) / b + reg w`` on client ``i``'s rows ``z``."""
    start, X, y, C, reg, W, V, G, XD, Z, U, ab = view
    _matrix(w, W)
    G[:, :] = 0.0
    _residual_products(X, y, start[i], z, X[0], False, W, G, XD, Z, ab)  # (X[0]: unused)
    _finish(G, z.shape[0], reg, w, g)
    return 0


def softmax_metric_view(data: tuple, m: np.ndarray) -> tuple:
    """``(data, weights, all_rows, g)`` for :func:`softmax_metrics`: the view's data (its
    work arrays too), every row's weight ``1/(n m_i)`` in ``f = (1/n) sum_i f_i``, the
    indices of all rows and a work vector."""
    n = m.shape[0]
    wts = np.concatenate([np.full(int(mi), 1.0 / (n * int(mi))) for mi in m])
    X = data[1]
    return (data, wts, np.arange(X.shape[0], dtype=np.int64),
            np.empty(X.shape[1] * int(data[3])))


@jit
def softmax_grad_f(mview, w, g):
    """``g = grad f(w) = vec(X^T (c * (P - Y))) + reg w`` over all rows, ``c_j = 1/(n m_i)``
    (``SoftmaxData.grad`` of every row)."""
    data, wts, every, _ = mview
    start, X, y, C, reg, W, V, G, XD, Z, U, ab = data
    _matrix(w, W)
    G[:, :] = 0.0
    _residual_products(X, y, 0, every, wts, True, W, G, XD, Z, ab)
    _finish(G, 1.0, reg, w, g)
    return 0


@jit
def softmax_metrics(mview, codes, w, out):
    """``out[k]`` = metric ``METRIC_NAMES[codes[k]]`` of the global objective at ``w``:
    ``grad_sq = ||grad f(w)||^2`` (:func:`softmax_grad_f`, squares summed in order)."""
    softmax_grad_f(mview, w, mview[3])
    return squares_into(mview[3], codes, out)


@jit
def softmax_sample_hvp(view, i, w, v, z, h):
    """``h = vec(X_D^T (P*U - P*sum_c(P*U))) / b + reg v``, ``P = softmax(X_D W)``,
    ``U = X_D V``, on client ``i``'s rows ``z``, ``BLOCK_ROWS`` rows at a time."""
    start, X, y, C, reg, W, V, G, XD, Z, U, ab = view
    base = start[i]
    b = z.shape[0]
    _matrix(w, W)
    _matrix(v, V)
    G[:, :] = 0.0
    r0 = 0
    while r0 < b:
        nr = min(XD.shape[0], b - r0)
        _gather(X, base, z, r0, nr, XD)
        matmul_into(XD[:nr], W, Z[:nr], False, 0.0, ab)     # X_D W
        softmax_rows(Z, nr)                                               # P
        matmul_into(XD[:nr], V, U[:nr], False, 0.0, ab)     # U = X_D V
        for r in range(nr):
            s = 0.0
            for c in range(C):
                U[r, c] = Z[r, c] * U[r, c]
                s += U[r, c]
            for c in range(C):
                U[r, c] = U[r, c] - Z[r, c] * s
        matmul_into(XD[:nr], U[:nr], G, True, 1.0, ab)      # G += X_D^T A U
        r0 += nr
    _finish(G, b, reg, v, h)
    return 0


@jit(inline=True)
def softmax_hess_diag(view, i, w, h):
    """``h = diag(grad^2 f_i(w))``: ``h[k C + c] = (1/m_i) sum_r x_rk^2 p_rc (1 - p_rc) +
    reg`` over ALL of client ``i``'s rows (``SoftmaxProblem.hess_diag``; the diagonal of
    ``(x x^T) kron (diag(p) - p p^T)`` at ``(k, c)`` is ``x_k^2 p_c (1 - p_c)``), ``BLOCK_ROWS``
    rows at a time: ``Z = softmax(X_B W)``, ``Z <- Z (1 - Z)``, ``XD <- XD * XD``, ``G +=
    XD^T Z`` (BLAS, blocks in order).  Equal to ``SoftmaxProblem.hess_diag`` up to rounding."""
    start, X, y, C, reg, W, V, G, XD, Z, U, ab = view
    base = start[i]
    m = start[i + 1] - base
    d = X.shape[1]
    _matrix(w, W)
    G[:, :] = 0.0
    r0 = 0
    while r0 < m:
        nr = min(XD.shape[0], m - r0)
        for r in range(nr):
            for k in range(d):
                XD[r, k] = X[base + r0 + r, k]
        matmul_into(XD[:nr], W, Z[:nr], False, 0.0, ab)     # X_B W
        softmax_rows(Z, nr)                                  # P
        for r in range(nr):
            for c in range(C):
                Z[r, c] = Z[r, c] * (1.0 - Z[r, c])         # P (1 - P)
            for k in range(d):
                XD[r, k] = XD[r, k] * XD[r, k]              # X_B^2
        matmul_into(XD[:nr], Z[:nr], G, True, 1.0, ab)      # G += (X_B^2)^T P(1 - P)
        r0 += nr
    for k in range(d):
        for c in range(C):
            h[k * C + c] = G[k, c] / m + reg
    return 0
