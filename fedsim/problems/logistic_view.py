"""The compiled view of a :class:`~fedsim.problems.logistic.LogisticProblem`'s batch oracles.

``data = (start, rows, nu)``: the signed rows ``y_j x_j`` of every client stacked
(:func:`~fedsim.problems.row_view.stack_rows`, client ``i`` at ``rows[start[i]:
start[i + 1]]``) and the ridge ``nu`` (THEORY_SPEC 9.2,
``f_i(w) = (1/m_i) sum_j log(1 + exp(-y_j x_j^T w)) + nu/2 ||w||^2``).  On a batch ``D`` of
``b`` row indices (drawn with :func:`~fedsim.problems.row_view.draw_rows`)::

    batch_grad = -(1/b) sum_{j in D} s(-z_j) r_j + nu w,               z_j = r_j^T w,
    batch_hvp  =  (1/b) sum_{j in D} s(z_j) s(-z_j) (r_j^T v) r_j + nu v,

``s(t) = 1/(1 + exp(-t))`` (``scipy.special.expit``'s formula; ``exp`` overflows to inf and
``s`` to 0, as there).  These functions ARE the problem's ``batch_grad``/``batch_hvp``
(the problem calls them), so the compiled rules, the interpreted ones and the problem give
the same numbers bit for bit.  Sums over the batch run in batch order; ``r_j^T w`` is
:func:`~fedsim.problems.row_view.dot4`.  :func:`logistic_metrics` evaluates ``grad_sq =
||grad f(w)||^2`` of the global objective ``f = (1/n) sum_i f_i`` with the same sums over
every row, weighted ``1/(n m_i)`` (``LogisticProblem.grad_f_sq`` calls it).
:func:`logistic_compiled_view` is the problem's :class:`~fedsim.problems.row_view.RowsView`
(``LogisticProblem.compiled_view``).
"""

from __future__ import annotations

import math

import numpy as np

from fedsim.jit import jit
from fedsim.problems.row_view import RowsView, dot4, rows_view, stack_rows, sum_squares

__all__ = ["logistic_view", "logistic_sample_grad", "logistic_sample_hvp",
           "logistic_compiled_view", "logistic_metric_view", "logistic_grad_f",
           "logistic_metrics", "METRIC_NAMES", "logistic_grad_maml", "logistic_maml_data",
           "logistic_hess_diag", "logistic_f", "logistic_f_gap"]

#: the compiled metrics of the global objective, in code order
METRIC_NAMES = ("grad_sq", "grad_maml_sq")


def logistic_view(rows: list, nu: float) -> tuple:
    """``(start, rows, nu)`` from the per-client signed rows ``y_j x_j``."""
    stacked, start = stack_rows(rows)
    return start, stacked, float(nu)


def logistic_metric_view(data: tuple, m: np.ndarray, alpha: float = math.nan) -> tuple:
    """``(rows, weights, all_rows, nu, g, data, alpha, local, work)`` for
    :func:`logistic_metrics`: every row with its weight ``1/(n m_i)`` in
    ``f = (1/n) sum_i f_i``, the indices of all rows, the ridge and a work vector; then for
    ``grad_maml_sq`` the view's ``data``, the MAML step ``alpha`` (NaN: not set, see
    :func:`logistic_maml_data`), the local row indices ``0..max m_i - 1`` and four work
    vectors."""
    start, rows, nu = data
    n, d = m.shape[0], rows.shape[1]
    wts = np.concatenate([np.full(int(mi), 1.0 / (n * int(mi))) for mi in m])
    local = np.arange(int(np.max(m)), dtype=np.int64)
    return (rows, wts, np.arange(rows.shape[0], dtype=np.int64), nu, np.empty(d), data,
            float(alpha), local, np.empty((4, d)))


def logistic_maml_data(mdata: tuple, maml_alpha: float | None, me_lam: float | None) -> tuple:
    """``mdata`` (:func:`logistic_metric_view`) with the MAML step ``maml_alpha`` (NaN when
    ``None``) and its own work vectors: the ``with_params`` of the logistic view
    (:meth:`fedsim.problems.compiled.CompiledView.metric_data`; ``me_lam`` is not read)."""
    alpha = math.nan if maml_alpha is None else float(maml_alpha)
    d = mdata[0].shape[1]
    return (*mdata[:4], np.empty(d), mdata[5], alpha, mdata[7], np.empty((4, d)))


def logistic_compiled_view(data: tuple, mdata: tuple, batch: int) -> RowsView:
    """The compiled view on ``data`` (:func:`logistic_view`) and ``mdata``
    (:func:`logistic_metric_view`) for batches of ``batch`` rows."""
    return rows_view(data, logistic_sample_grad, logistic_sample_hvp, batch,
                     metrics=logistic_metrics, mdata=mdata, metric_names=METRIC_NAMES,
                     with_params=logistic_maml_data)


@jit
def _margin_sum(rows, base, z, wts, weighted, w, g):
    """``g = sum_{j in z} c_j s(-r_j^T w) r_j`` (rows ``base + z``, in order), ``c_j =
    wts[base + z_j]`` when ``weighted``, else 1."""
    d = w.shape[0]
    for k in range(d):
        g[k] = 0.0
    for r in range(z.shape[0]):
        j = base + z[r]
        x = rows[j]
        s = 1.0 / (1.0 + math.exp(dot4(x, w, d)))  # s(-t), t = r_j^T w
        if weighted:
            s = wts[j] * s
        for k in range(d):
            g[k] += x[k] * s
    return 0


@jit
def logistic_sample_grad(view, i, w, z, g):
    """``g = -(1/b) sum_{j in z} s(-r_j^T w) r_j + nu w`` on client ``i``'s rows ``z``."""
    start, rows, nu = view
    _margin_sum(rows, start[i], z, rows[0], False, w, g)  # (rows[0]: unused weights)
    b = z.shape[0]
    for k in range(w.shape[0]):
        g[k] = -g[k] / b + nu * w[k]
    return 0


@jit
def logistic_grad_f(mview, w, g):
    """``g = grad f(w) = -sum_j c_j s(-r_j^T w) r_j + nu w`` over all rows
    (``WeightedLogistic.grad`` of every row, ``c_j = 1/(n m_i)``)."""
    rows, wts, every, nu = mview[0], mview[1], mview[2], mview[3]
    _margin_sum(rows, 0, every, wts, True, w, g)
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
    ``alpha``: :func:`logistic_maml_data`), squares summed in order; each gradient is
    computed once however often its code appears."""
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
    start, rows, nu = view
    d = w.shape[0]
    b = z.shape[0]
    base = start[i]
    for k in range(d):
        h[k] = 0.0
    for r in range(b):
        x = rows[base + z[r]]
        t = dot4(x, w, d)
        c = (1.0 / (1.0 + math.exp(-t))) * (1.0 / (1.0 + math.exp(t))) * dot4(x, v, d)
        for k in range(d):
            h[k] += x[k] * c
    for k in range(d):
        h[k] = h[k] / b + nu * v[k]
    return 0


@jit(inline=True)
def logistic_hess_diag(view, i, w, h):
    """``h = diag(grad^2 f_i(w)) = sum_j c_j x_jk^2 + nu`` over ALL of client ``i``'s rows
    (anchor rows included, as in ``LogisticProblem.hess``), ``c_j = (1/m_i) s(t_j) s(-t_j)``,
    ``t_j = r_j^T w`` (:func:`~fedsim.problems.row_view.dot4`), rows summed in order.  The
    diagonal of ``LogisticProblem.hess(i, w)`` up to rounding (its sums are BLAS's)."""
    start, rows, nu = view
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
    rows, wts, every, nu = mview[0], mview[1], mview[2], mview[3]
    d = w.shape[0]
    total = 0.0
    for r in range(every.shape[0]):
        j = every[r]
        t = dot4(rows[j], w, d)
        if t == 0.0:
            v = math.log(2.0)
        elif t > 0.0:
            v = math.log1p(math.exp(-t))
        else:
            v = -t + math.log1p(math.exp(t))
        total += wts[j] * v
    sq = 0.0
    for k in range(d):
        sq += w[k] * w[k]
    return total + 0.5 * nu * sq


@jit
def logistic_f_gap(mview, f_star, w):
    """``f_gap = f(w) - f*`` (:func:`logistic_f`; ``f_star`` is ``LogisticProblem.f_star``,
    found by Newton's method), the metric ``f_gap`` and, averaged over the iterates, the
    ``ergodic_f_gap`` of Theorem 8 ([A] eq. (8))."""
    return logistic_f(mview, w) - f_star
