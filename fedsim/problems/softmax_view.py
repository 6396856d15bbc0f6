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
:func:`softmax_compiled_view` is the problem's :class:`~fedsim.problems.row_view.RowsView`
(``SoftmaxProblem.compiled_view``).
"""

from __future__ import annotations

import math

import numpy as np

from fedsim.jit import jit
from fedsim.problems.blas import gemm_block, matmul_into
from fedsim.problems.row_view import RowsView, rows_view, stack_rows

__all__ = ["softmax_view", "softmax_sample_grad", "softmax_sample_hvp", "softmax_rows",
           "softmax_compiled_view", "BLOCK_ROWS"]


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


def softmax_compiled_view(data: tuple, batch: int) -> RowsView:
    """The compiled view on ``data`` (:func:`softmax_view`) for batches of ``batch`` rows."""
    return rows_view(data, softmax_sample_grad, softmax_sample_hvp, batch)


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
def softmax_sample_grad(view, i, w, z, g):
    """``g = vec(X_D^T (softmax(X_D W) - Y_D)) / b + reg w`` on client ``i``'s rows ``z``,
    ``BLOCK_ROWS`` rows at a time."""
    start, X, y, C, reg, W, V, G, XD, Z, U, ab = view
    base = start[i]
    b = z.shape[0]
    _matrix(w, W)
    G[:, :] = 0.0
    r0 = 0
    while r0 < b:
        nr = min(XD.shape[0], b - r0)
        _gather(X, base, z, r0, nr, XD)
        matmul_into(XD[:nr], W, Z[:nr], False, 0.0, ab)     # X_D W
        softmax_rows(Z, nr)
        for r in range(nr):
            Z[r, y[base + z[r0 + r]]] -= 1.0                              # P - Y_D
        matmul_into(XD[:nr], Z[:nr], G, True, 1.0, ab)      # G += X_D^T R
        r0 += nr
    _finish(G, b, reg, w, g)
    return 0


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
