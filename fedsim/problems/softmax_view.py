"""The compiled view of a :class:`~fedsim.problems.softmax.SoftmaxProblem`'s batch oracles.

``data = (start, X, y, C, reg)``: every client's feature rows and labels stacked
(:func:`~fedsim.problems.row_view.stack_rows`, client ``i`` at ``X[start[i]:start[i + 1]]``),
the class count and the ridge.  The model is ``w = W.ravel()``, ``W`` of shape ``(d, C)``
(``w[k C + c] = W[k, c]``).  On a batch ``D`` of ``b`` row indices (drawn with
:func:`~fedsim.problems.row_view.draw_rows`), with ``X_D`` the batch rows, ``P =
softmax(X_D W)`` row by row (``exp(z - max z) / sum exp(z - max z)``, as
``scipy.special.softmax``: no logit overflows) and ``Y_D`` the one-hot labels::

    batch_grad = vec(X_D^T (P - Y_D)) / b + reg w,
    batch_hvp  = vec(X_D^T (P*U - P*sum_c(P*U))) / b + reg v,        U = X_D V,

the module docstring of :mod:`fedsim.problems.softmax`.  The two products with ``X_D`` are
``np.dot`` (numba calls the BLAS ``dgemm``), the rest is written out; a row's softmax sums
its classes in order.  These functions ARE the problem's ``batch_grad`` / ``batch_hvp``
(the problem calls them), so the compiled rules, the interpreted ones and the problem give
the same numbers bit for bit.  :func:`softmax_compiled_view` is the problem's
:class:`~fedsim.problems.row_view.RowsView` (``SoftmaxProblem.compiled_view``).
"""

from __future__ import annotations

import math

import numpy as np

from fedsim.jit import jit
from fedsim.problems.row_view import RowsView, rows_view, stack_rows

__all__ = ["softmax_view", "softmax_sample_grad", "softmax_sample_hvp", "softmax_rows",
           "softmax_compiled_view"]


def softmax_view(X: list, y: list, n_classes: int, reg: float) -> tuple:
    """``(start, X, y, C, reg)`` from the per-client rows and labels."""
    Xs, start = stack_rows(X)
    ys, _ = stack_rows([np.asarray(yi, dtype=np.int64) for yi in y])
    return start, Xs, ys, int(n_classes), float(reg)


def softmax_compiled_view(data: tuple, batch: int) -> RowsView:
    """The compiled view on ``data`` (:func:`softmax_view`) for batches of ``batch`` rows."""
    return rows_view(data, softmax_sample_grad, softmax_sample_hvp, batch)


@jit
def softmax_rows(Z):
    """``Z = softmax(Z)`` row by row, in place (shifted by each row's largest logit)."""
    b, C = Z.shape
    for r in range(b):
        zr = Z[r]
        mx = zr[0]
        for c in range(1, C):
            if zr[c] > mx:
                mx = zr[c]
        s = 0.0
        for c in range(C):
            e = math.exp(zr[c] - mx)
            zr[c] = e
            s += e
        for c in range(C):
            zr[c] = zr[c] / s
    return 0


@jit
def _batch_rows(X, base, z):
    """``X_D``: the rows ``base + z`` of ``X``, gathered (C-contiguous)."""
    XD = np.empty((z.shape[0], X.shape[1]))
    for r in range(z.shape[0]):
        XD[r] = X[base + z[r]]
    return XD


@jit
def softmax_sample_grad(view, i, w, z, g):
    """``g = vec(X_D^T (softmax(X_D W) - Y_D)) / b + reg w`` on client ``i``'s rows ``z``."""
    start, X, y, C, reg = view
    d = X.shape[1]
    b = z.shape[0]
    base = start[i]
    XD = _batch_rows(X, base, z)
    W = np.ascontiguousarray(w).reshape((d, C))
    R = np.dot(XD, W)
    softmax_rows(R)
    for r in range(b):
        R[r, y[base + z[r]]] -= 1.0
    G = np.dot(XD.T, R).reshape(d * C)
    for k in range(d * C):
        g[k] = G[k] / b + reg * w[k]
    return 0


@jit
def softmax_sample_hvp(view, i, w, v, z, h):
    """``h = vec(X_D^T (P*U - P*sum_c(P*U))) / b + reg v``, ``P = softmax(X_D W)``,
    ``U = X_D V``, on client ``i``'s rows ``z``."""
    start, X, y, C, reg = view
    d = X.shape[1]
    b = z.shape[0]
    XD = _batch_rows(X, start[i], z)
    P = np.dot(XD, np.ascontiguousarray(w).reshape((d, C)))
    softmax_rows(P)
    U = np.dot(XD, np.ascontiguousarray(v).reshape((d, C)))
    for r in range(b):
        s = 0.0
        for c in range(C):
            U[r, c] = P[r, c] * U[r, c]
            s += U[r, c]
        for c in range(C):
            U[r, c] = U[r, c] - P[r, c] * s
    H = np.dot(XD.T, U).reshape(d * C)
    for k in range(d * C):
        h[k] = H[k] / b + reg * v[k]
    return 0
