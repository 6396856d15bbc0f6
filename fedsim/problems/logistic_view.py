"""The compiled view of a :class:`~fedsim.problems.logistic.LogisticProblem`'s batch oracles.

``data = (start, rows, nu, sp)``: the signed rows ``y_j x_j`` of every client stacked
(:func:`~fedsim.problems.row_view.stack_rows`, client ``i`` at ``rows[start[i]:
start[i + 1]]``), the ridge ``nu`` and the rows' nonzeros
(:func:`~fedsim.problems.row_view.sparse_rows`) (THEORY_SPEC 9.2,
``f_i(w) = (1/m_i) sum_j log(1 + exp(-y_j x_j^T w)) + nu/2 ||w||^2``).  On a batch ``D`` of
``b`` row indices (drawn with :func:`~fedsim.problems.row_view.draw_rows`)::

    batch_grad = -(1/b) sum_{j in D} s(-z_j) r_j + nu w,               z_j = r_j^T w,
    batch_hvp  =  (1/b) sum_{j in D} s(z_j) s(-z_j) (r_j^T v) r_j + nu v,

``s(t) = 1/(1 + exp(-t))`` (``scipy.special.expit``'s formula; ``exp`` overflows to inf and
``s`` to 0, as there).  These functions ARE the problem's ``batch_grad``/``batch_hvp``
(the problem calls them), so the compiled rules, the interpreted ones and the problem give
the same numbers bit for bit.  Sums over the batch run in batch order; ``r_j^T w`` is
:func:`~fedsim.problems.row_view.dot4`, computed on a sparse row (the anchor rows ``s e_k``
of THEORY_SPEC 9.4) from its nonzeros only, and ``g += c r_j`` likewise
(:func:`~fedsim.problems.row_view.row_dot`, :func:`~fedsim.problems.row_view.row_axpy`:
the dense loops' numbers bit for bit).  :func:`logistic_metrics` evaluates ``grad_sq =
||grad f(w)||^2`` of the global objective ``f = (1/n) sum_i f_i`` with the same sums over
every row, weighted ``1/(n m_i)`` (``LogisticProblem.grad_f_sq`` calls it).
:func:`logistic_compiled_view` is the problem's :class:`~fedsim.problems.row_view.RowsView`
(``LogisticProblem.compiled_view``).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from fedsim.jit import jit
from fedsim.problems.row_view import (
    RowsView,
    all_finite,
    dot4,
    row_axpy,
    row_dot,
    rows_view,
    sparse_rows,
    stack_rows,
    sum_squares,
)

__all__ = ["logistic_view", "logistic_sample_grad", "logistic_sample_hvp",
           "logistic_compiled_view", "logistic_metric_view", "logistic_grad_f",
           "logistic_metrics", "METRIC_NAMES", "logistic_grad_maml", "logistic_metric_params",
           "logistic_dist_sq",
           "logistic_hess_diag", "logistic_f", "logistic_f_gap", "distinct_rows"]

#: the compiled metrics of the global objective, in code order
METRIC_NAMES = ("grad_sq", "grad_maml_sq", "f_gap", "dist_sq")


def logistic_view(rows: list, nu: float) -> tuple:
    """``(start, rows, nu, sp)`` from the per-client signed rows ``y_j x_j`` (``sp``:
    :func:`~fedsim.problems.row_view.sparse_rows`)."""
    stacked, start = stack_rows(rows)
    return start, stacked, float(nu), sparse_rows(stacked)


def logistic_metric_view(data: tuple, m: np.ndarray, alpha: float = math.nan) -> tuple:
    """``(rows, weights, all_rows, nu, g, data, alpha, local, work, uniq, rep, sv, fstar,
    xstar)`` for
    :func:`logistic_metrics`: every row with its weight ``1/(n m_i)`` in
    ``f = (1/n) sum_i f_i``, the indices of all rows, the ridge and a work vector; then for
    ``grad_maml_sq`` the view's ``data``, the MAML step ``alpha`` (NaN: not set, see
    :func:`logistic_metric_params`), the local row indices ``0..max m_i - 1`` and four work
    vectors; then the distinct rows (:func:`distinct_rows`) and a work vector per distinct
    row; then ``f*`` (one entry) and ``x*`` for ``f_gap``/``dist_sq``, NaN until
    :func:`logistic_metric_params` sets them."""
    start, rows, nu = data[:3]
    n, d = m.shape[0], rows.shape[1]
    wts = np.concatenate([np.full(int(mi), 1.0 / (n * int(mi))) for mi in m])
    local = np.arange(int(np.max(m)), dtype=np.int64)
    uniq, rep = distinct_rows(rows)
    return (rows, wts, np.arange(rows.shape[0], dtype=np.int64), nu, np.empty(d), data,
            float(alpha), local, np.empty((4, d)), uniq, rep, np.empty(uniq.shape[0]),
            np.full(1, math.nan), np.full(d, math.nan))


def distinct_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(uniq, rep)``: ``rows[uniq]`` are the distinct rows (each at its first index) and
    row ``j`` equals row ``uniq[rep[j]]`` (entries compared as numbers, so ``-0.0 == 0.0``:
    the products with ``w`` then differ at most in the sign of a zero, which no sum of
    :func:`~fedsim.problems.row_view.row_dot` sees).  Every client's anchor rows ``+-s
    e_k`` (THEORY_SPEC 9.4) are the same ``2d`` rows, so the full-data metrics compute a
    margin, a sigmoid and a log once per distinct row."""
    _, first, inv = np.unique(rows + 0.0, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return first[order].astype(np.int64), rank[inv.reshape(-1)].astype(np.int64)


def logistic_metric_params(mdata: tuple, maml_alpha: float | None, me_lam: float | None,
                           names: Any = (), optimum: Any = None) -> tuple:
    """``mdata`` (:func:`logistic_metric_view`) for a run's metric parameters, with its own
    work vectors: the MAML step ``maml_alpha`` (NaN when ``None``), and when ``names``
    holds ``f_gap`` / ``dist_sq``, ``f* = optimum("f_star")`` / ``x* =
    optimum("x_star")`` (the problem's Newton solution, solved only when asked for; its
    ``FedsimError`` when ``f`` has no minimiser).  The ``with_params`` of the logistic view
    (:meth:`fedsim.problems.compiled.CompiledView.metric_data`; ``me_lam`` is not read)."""
    alpha = math.nan if maml_alpha is None else float(maml_alpha)
    d = mdata[0].shape[1]
    fstar, xstar = mdata[12], mdata[13]
    if optimum is not None and "f_gap" in names:
        fstar = np.full(1, float(optimum("f_star")))
    if optimum is not None and "dist_sq" in names:
        xstar = np.array(optimum("x_star"), dtype=np.float64).reshape(d)
    return (*mdata[:4], np.empty(d), mdata[5], alpha, mdata[7], np.empty((4, d)), mdata[9],
            mdata[10], np.empty(mdata[9].shape[0]), fstar, xstar)


def logistic_compiled_view(data: tuple, mdata: tuple, batch: int,
                           optimum: Any = None) -> RowsView:
    """The compiled view on ``data`` (:func:`logistic_view`) and ``mdata``
    (:func:`logistic_metric_view`) for batches of ``batch`` rows; ``optimum(name)`` gives
    ``f_star`` / ``x_star`` (:func:`logistic_metric_params`)."""
    return rows_view(data, logistic_sample_grad, logistic_sample_hvp, batch,
                     metrics=logistic_metrics, mdata=mdata, metric_names=METRIC_NAMES,
                     with_params=functools.partial(logistic_metric_params, optimum=optimum))


@jit
def _margin_sum(rows, sp, base, z, w, g):
    """``g = sum_{j in z} s(-r_j^T w) r_j`` (rows ``base + z``, in order)."""
    d = w.shape[0]
    finite = all_finite(w)
    for k in range(d):
        g[k] = 0.0
    for r in range(z.shape[0]):
        j = base + z[r]
        s = 1.0 / (1.0 + math.exp(row_dot(rows, j, sp, w, d, finite)))  # s(-t), t = r_j^T w
        row_axpy(rows, j, sp, s, g)
    return 0


@jit
def logistic_sample_grad(view, i, w, z, g):
    """``g = -(1/b) sum_{j in z} s(-r_j^T w) r_j + nu w`` on client ``i``'s rows ``z``."""
    start, rows, nu, sp = view
    _margin_sum(rows, sp, start[i], z, w, g)
    b = z.shape[0]
    for k in range(w.shape[0]):
        g[k] = -g[k] / b + nu * w[k]
    return 0


@jit
def logistic_grad_f(mview, w, g):
    """``g = grad f(w) = -sum_j c_j s(-r_j^T w) r_j + nu w`` over all rows
    (``WeightedLogistic.grad`` of every row, ``c_j = 1/(n m_i)``)."""
    rows, wts, nu, sp = mview[0], mview[1], mview[3], mview[5][3]
    uniq, rep, sv = mview[9], mview[10], mview[11]
    d = w.shape[0]
    finite = all_finite(w)
    for u in range(uniq.shape[0]):  # s(-t) once per distinct row
        sv[u] = 1.0 / (1.0 + math.exp(row_dot(rows, uniq[u], sp, w, d, finite)))
    for k in range(d):
        g[k] = 0.0
    for j in range(rows.shape[0]):
        row_axpy(rows, j, sp, wts[j] * sv[rep[j]], g)
    for k in range(w.shape[0]):
        g[k] = -g[k] + nu * w[k]
    return 0


@jit
def logistic_grad_maml(mview, w, g):
    """``g = grad F^(b)(w) = (1/n) sum_i [I - alpha grad^2 f_i(w)] grad f_i(w - alpha grad
    f_i(w))`` ([P] eq. (4)-(5), the MAML objective; ``alpha = mview[6]``), each client's
    ``grad f_i`` and ``grad^2 f_i v`` being :func:`logistic_sample_grad` /
    :func:`logistic_sample_hvp` on ALL its rows (``z = 0..m_i-1``; anchors included, as in
    ``LogisticProblem.grad``/``hvp``), clients summed in order, no allocation (work rows of
    ``mview[8]``)."""
    data, alpha, local, work = mview[5], mview[6], mview[7], mview[8]
    start = data[0]
    n, d = start.shape[0] - 1, w.shape[0]
    g1, inner, g2, h = work[0], work[1], work[2], work[3]
    for k in range(d):
        g[k] = 0.0
    for i in range(n):
        z = local[:start[i + 1] - start[i]]
        logistic_sample_grad(data, i, w, z, g1)
        for k in range(d):
            inner[k] = w[k] - alpha * g1[k]
        logistic_sample_grad(data, i, inner, z, g2)
        logistic_sample_hvp(data, i, w, g2, z, h)
        for k in range(d):
            g[k] += g2[k] - alpha * h[k]
    for k in range(d):
        g[k] = g[k] / n
    return 0


@jit
def logistic_metrics(mview, codes, w, out):
    """``out[k]`` = metric ``METRIC_NAMES[codes[k]]`` of the global objective at ``w``:
    ``grad_sq = ||grad f(w)||^2`` (:func:`logistic_grad_f`) and ``grad_maml_sq =
    ||grad F^(b)(w)||^2`` (:func:`logistic_grad_maml`, NaN unless ``mview`` carries
    ``alpha``: :func:`logistic_metric_params`), squares summed in order; ``f_gap = f(w) -
    f*`` (:func:`logistic_f`) and ``dist_sq = ||w - x*||^2`` (squares summed in order; NaN
    unless ``mview`` carries ``f*`` / ``x*``); each gradient is computed once however often
    its code appears."""
    g = mview[4]
    done_f, done_b = False, False
    vf, vb = 0.0, 0.0
    for k in range(codes.shape[0]):
        if codes[k] == 0:
            if not done_f:
                logistic_grad_f(mview, w, g)
                vf = sum_squares(g)
                done_f = True
            out[k] = vf
        elif codes[k] == 2:
            out[k] = logistic_f(mview, w) - mview[12][0]
        elif codes[k] == 3:
            out[k] = logistic_dist_sq(mview[13], w)
        else:
            if not done_b:
                logistic_grad_maml(mview, w, g)
                vb = sum_squares(g)
                done_b = True
            out[k] = vb
    return 0


@jit
def logistic_sample_hvp(view, i, w, v, z, h):
    """``h = (1/b) sum_{j in z} s(t_j) s(-t_j) (r_j^T v) r_j + nu v``, ``t_j = r_j^T w``."""
    start, rows, nu, sp = view
    d = w.shape[0]
    b = z.shape[0]
    base = start[i]
    fw, fv = all_finite(w), all_finite(v)
    for k in range(d):
        h[k] = 0.0
    for r in range(b):
        j = base + z[r]
        t = row_dot(rows, j, sp, w, d, fw)
        c = ((1.0 / (1.0 + math.exp(-t))) * (1.0 / (1.0 + math.exp(t)))
             * row_dot(rows, j, sp, v, d, fv))
        row_axpy(rows, j, sp, c, h)
    for k in range(d):
        h[k] = h[k] / b + nu * v[k]
    return 0


@jit(inline=True)
def logistic_hess_diag(view, i, w, h):
    """``h = diag(grad^2 f_i(w)) = sum_j c_j x_jk^2 + nu`` over ALL of client ``i``'s rows
    (anchor rows included, as in ``LogisticProblem.hess``), ``c_j = (1/m_i) s(t_j) s(-t_j)``,
    ``t_j = r_j^T w`` (:func:`~fedsim.problems.row_view.dot4`), rows summed in order.  The
    diagonal of ``LogisticProblem.hess(i, w)`` up to rounding (its sums are BLAS's)."""
    start, rows, nu = view[:3]
    d = w.shape[0]
    base = start[i]
    m = start[i + 1] - base
    for k in range(d):
        h[k] = 0.0
    for r in range(m):
        x = rows[base + r]
        t = dot4(x, w, d)
        c = ((1.0 / m) * (1.0 / (1.0 + math.exp(-t)))) * (1.0 / (1.0 + math.exp(t)))
        for k in range(d):
            h[k] += (x[k] * c) * x[k]
    for k in range(d):
        h[k] = h[k] + nu
    return 0


@jit
def logistic_f(mview, w):
    """``f(w) = sum_j c_j log(1 + exp(-r_j^T w)) + nu/2 ||w||^2`` over all rows
    (THEORY_SPEC 9.2; ``c_j = 1/(n m_i)``, ``mview`` of :func:`logistic_metric_view`), with
    ``log(1 + exp(-t))`` as NumPy's ``logaddexp(0, -t)`` computes it (no overflow)."""
    rows, wts, nu, sp = mview[0], mview[1], mview[3], mview[5][3]
    uniq, rep, sv = mview[9], mview[10], mview[11]
    d = w.shape[0]
    finite = all_finite(w)
    for u in range(uniq.shape[0]):  # log(1 + exp(-t)) once per distinct row
        t = row_dot(rows, uniq[u], sp, w, d, finite)
        if t == 0.0:
            v = math.log(2.0)
        elif t > 0.0:
            v = math.log1p(math.exp(-t))
        else:
            v = -t + math.log1p(math.exp(t))
        sv[u] = v
    total = 0.0
    for j in range(rows.shape[0]):
        total += wts[j] * sv[rep[j]]
    sq = 0.0
    for k in range(d):
        sq += w[k] * w[k]
    return total + 0.5 * nu * sq


@jit
def logistic_dist_sq(xstar, w):
    """``||w - x*||^2``, the squares summed in order: the metric ``dist_sq``."""
    acc = 0.0
    for k in range(w.shape[0]):
        u = w[k] - xstar[k]
        acc += u * u
    return acc


@jit
def logistic_f_gap(mview, f_star, w):
    """``f_gap = f(w) - f*`` (:func:`logistic_f`; ``f_star`` is ``LogisticProblem.f_star``,
    found by Newton's method), the metric ``f_gap`` and, averaged over the iterates, the
    ``ergodic_f_gap`` of Theorem 8 ([A] eq. (8))."""
    return logistic_f(mview, w) - f_star
