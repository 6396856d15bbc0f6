"""Row-sampled problems' compiled layout and draw (binary logistic and softmax regression).

A client of :class:`~fedsim.problems.logistic.LogisticProblem` or
:class:`~fedsim.problems.softmax.SoftmaxProblem` holds ``m_i`` rows; a minibatch ``D`` of
size ``b`` is ``b`` row indices drawn uniformly WITH replacement,
``sample_batch(i, b, rng) = rng.integers(0, m_i, size=b)`` (THEORY_SPEC 9.2, the scheme
``sigma_g2`` is stated for).  The compiled views of both problems
(:mod:`~fedsim.problems.logistic_view`, :mod:`~fedsim.problems.softmax_view`) keep every
client's rows in ONE array, client ``i`` at ``rows[start[i]:start[i + 1]]``, which numba
passes as one argument whatever ``n`` and the ``m_i``.

The draw.  ``Generator.integers(0, m_i, size=k)`` (int64, ``m_i <= 2**32``) fills its output
with one bounded 32-bit draw after the other from the bit generator (numpy
``random_bounded_uint64_fill``; PCG64 keeps the unused half of a 64-bit output in its own
state, between calls), so ONE call of size ``Q b`` returns exactly the indices of ``Q``
successive ``sample_batch(i, b, .)`` calls and leaves the generator in the same state
(``tests/problems/test_row_views.py``).  :func:`draw_rows` is one step's draw compiled
(``b`` scalar ``gen.integers(0, m_i)``: numba's ``Generator`` and the replay's streams give
NumPy's numbers and state, bit for bit); :meth:`RowsView.round_draws` draws a round's
``(Q, k)`` indices (step ``q`` in row ``q``) with the one NumPy call.

:class:`RowsView` is the :class:`~fedsim.problems.compiled.CompiledView` of both problems,
plus their compiled ``hvp(data, i, w, v, z, h)`` (``h = batch_hvp(i, w, v, z)``, for
[P] Option B) and ``m`` (the clients' row counts).  Both problems' data tuples start
with ``start``, which is all :func:`draw_rows` reads.

The compiled oracles allocate nothing (the replay compiles them into loops without
NumPy's reference counting, ``fedsim.jit.jit(nrt=False)``): their work arrays are part of
the data tuple, sized for the problem, never for a batch (the batch runs row by row).  A
data tuple is therefore not shared between threads.  :func:`dot4` is their inner product.

Sparse rows.  THEORY_SPEC 9.4's anchor rows ``s e_k`` have one nonzero (with 2d anchors a
client, 80% of the rows of the d = 64 logistic benchmark); :func:`sparse_rows` lists the
nonzeros of every row with at most a quarter of its entries nonzero, and
:func:`row_dot` / :func:`row_axpy` visit only those.  They return the numbers of the dense
:func:`dot4` / ``g += s x`` bit for bit: a zero entry adds ``0 * w_k = +-0`` to a partial
sum, which changes no value (a partial sum that starts at ``+0`` and adds nonzero terms is
never ``-0``), unless ``w_k`` is not finite (``0 * inf = NaN``) or ``s`` is not finite; then
(``finite`` false; ``s`` not finite) the dense loop runs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from fedsim.errors import check_integer, require
from fedsim.jit import jit
from fedsim.problems.compiled import CompiledView

__all__ = ["stack_rows", "row_indices", "draw_rows", "rows_per_client", "RowsView",
           "rows_view", "dot4", "squares_into", "sum_squares", "as_model",
           "RowOracles", "sparse_rows", "row_dot", "row_axpy", "all_finite"]

def stack_rows(blocks: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, start)``: the clients' arrays stacked along axis 0 (C-contiguous float64 or
    int64 as given), client ``i`` at ``rows[start[i]:start[i + 1]]``."""
    start = np.zeros(len(blocks) + 1, dtype=np.int64)
    start[1:] = np.cumsum([b.shape[0] for b in blocks])
    return np.ascontiguousarray(np.concatenate(blocks, axis=0)), start


def rows_per_client(start: np.ndarray) -> list[np.ndarray]:
    """``arange(m_i)`` per client: indexing one with a batch gives NumPy's own reading of
    the batch (lists, negative indices, masks; ``IndexError`` when out of range) as the
    int64 row indices the compiled oracles take."""
    return [np.arange(start[i + 1] - start[i], dtype=np.int64) for i in range(start.size - 1)]


def row_indices(ranges: list[np.ndarray], i: int, batch: object) -> tuple[int, np.ndarray]:
    """``(i, idx)``: client ``i`` normalised to ``0..n-1`` (``IndexError`` outside, as a list
    index) and ``batch`` as C-contiguous int64 row indices of that client
    (:func:`rows_per_client`)."""
    ar = ranges[i]
    i = int(i) % len(ranges)
    return i, np.ascontiguousarray(ar[batch], dtype=np.int64).reshape(-1)


@jit(inline=True)
def dot4(a, b, n):
    """``sum_k a[k] b[k]`` over ``k < n`` in a fixed order: four partial sums over ``k``
    modulo 4 (``(s0 + s1) + (s2 + s3)``), then the ``n mod 4`` last terms in order (the
    compiler may run the four sums as one vector; no fast-math, so the order is this one
    on every machine)."""
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    k = 0
    while k + 4 <= n:
        s0 += a[k] * b[k]
        s1 += a[k + 1] * b[k + 1]
        s2 += a[k + 2] * b[k + 2]
        s3 += a[k + 3] * b[k + 3]
        k += 4
    t = (s0 + s1) + (s2 + s3)
    while k < n:
        t += a[k] * b[k]
        k += 1
    return t


def sparse_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(off, cnt, idx, val)``: row ``j`` with ``4 nnz <= d`` nonzeros has them at columns
    ``idx[off[j]:off[j] + cnt[j]]`` (increasing), values ``val[...]`` there (contiguous: a
    sparse row then costs no cache line of ``rows``); a denser row has ``cnt[j] = -1``
    (module docstring)."""
    nz = rows != 0.0
    cnt = nz.sum(axis=1).astype(np.int64)
    sparse = 4 * cnt <= rows.shape[1]
    cnt = np.where(sparse, cnt, -1)
    off = np.zeros(rows.shape[0], dtype=np.int64)
    off[1:] = np.cumsum(np.maximum(cnt, 0))[:-1]
    at = np.nonzero(nz & sparse[:, None])
    return off, cnt, at[1].astype(np.int64), np.ascontiguousarray(rows[at], dtype=np.float64)


@jit(inline=True)
def all_finite(w):
    """Whether every entry of ``w`` is finite (:func:`row_dot`'s ``finite``)."""
    ok = True
    for k in range(w.shape[0]):
        ok = ok and math.isfinite(w[k])
    return ok


@jit(inline=True)
def row_dot(rows, j, sp, w, d, finite):
    """``dot4(rows[j], w, d)`` visiting only row ``j``'s listed nonzeros (``sp`` of
    :func:`sparse_rows`) when it is sparse and ``finite`` (``w`` all finite): the same
    four partial sums over ``k`` modulo 4, then the tail, so the same number.  Indexes
    ``rows[j, k]`` (no row view: inlined into loops compiled without reference counting,
    a view per row costs more than a sparse row's arithmetic)."""
    off, cnt, idx, val = sp
    c = cnt[j]
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    if c < 0 or not finite:
        k = 0
        while k + 4 <= d:
            s0 += rows[j, k] * w[k]
            s1 += rows[j, k + 1] * w[k + 1]
            s2 += rows[j, k + 2] * w[k + 2]
            s3 += rows[j, k + 3] * w[k + 3]
            k += 4
        t = (s0 + s1) + (s2 + s3)
        while k < d:
            t += rows[j, k] * w[k]
            k += 1
        return t
    tail = d - d % 4
    p, end = off[j], off[j] + c
    while p < end and idx[p] < tail:
        k = idx[p]
        v = val[p] * w[k]
        r = k % 4
        if r == 0:
            s0 += v
        elif r == 1:
            s1 += v
        elif r == 2:
            s2 += v
        else:
            s3 += v
        p += 1
    t = (s0 + s1) + (s2 + s3)
    while p < end:
        t += val[p] * w[idx[p]]
        p += 1
    return t


@jit(inline=True)
def row_axpy(rows, j, sp, s, g):
    """``g += s rows[j]``, over row ``j``'s listed nonzeros only when it is sparse and ``s``
    is finite (the dense loop's numbers: module docstring)."""
    off, cnt, idx, val = sp
    c = cnt[j]
    if c < 0 or not math.isfinite(s):
        for k in range(g.shape[0]):
            g[k] += rows[j, k] * s
        return 0
    for p in range(off[j], off[j] + c):
        g[idx[p]] += val[p] * s
    return 0


@jit
def sum_squares(g):
    """``sum_j g[j]^2``, summed in order: a squared-gradient metric."""
    acc = 0.0
    for j in range(g.shape[0]):
        acc += g[j] * g[j]
    return acc


@jit
def squares_into(g, codes, out):
    """``out[k] = sum_j g[j]^2`` (:func:`sum_squares`) for every ``k < len(codes)``: the
    ``grad_sq`` metric of a gradient ``g`` (for a view whose only metric code it is)."""
    acc = sum_squares(g)
    for k in range(codes.shape[0]):
        out[k] = acc
    return 0


def as_model(w: object, dim: int) -> np.ndarray:
    """``w`` as a float64 array of shape ``(dim,)`` (a ``FedsimError`` naming ``w.shape``
    otherwise: the compiled oracles read ``dim`` entries)."""
    w = np.asarray(w, dtype=np.float64)
    require(w.shape == (dim,), "w.shape", w.shape, f"must be ({dim},)")
    return w


@jit
def draw_rows(data, i, gen, z):
    """One step's batch: ``z[k] = gen.integers(0, m_i)`` for ``k < len(z)`` (int64), the
    numbers ``sample_batch(i, len(z), rng)`` draws; ``m_i = start[i + 1] - start[i]``,
    ``start = data[0]``."""
    start = data[0]
    m = start[i + 1] - start[i]
    for k in range(z.shape[0]):
        z[k] = gen.integers(0, m)
    return 0


@dataclass(frozen=True)
class RowsView(CompiledView):
    """The compiled view of a row-sampled problem (module docstring): ``draw`` is
    :func:`draw_rows`, ``dtype`` int64, ``draws`` the batch size; ``hvp`` its compiled
    ``batch_hvp`` and ``m`` its row counts."""

    hvp: Any = None
    m: np.ndarray | None = None

    def round_draws(self, rng: np.random.Generator, i: int, Q: int, k: int) -> np.ndarray:
        """``(Q, k)`` row indices of client ``i``: ``Q`` steps of ``k`` :func:`draw_rows`
        draws each, in ONE ``rng.integers(0, m_i, size=(Q, k))`` call (the same numbers and
        the same generator state after)."""
        return rng.integers(0, int(self.m[i]), size=(Q, k))


def rows_view(data: tuple, grad: Any, hvp: Any, batch: int, metrics: Any = None,
              mdata: tuple = (), metric_names: tuple[str, ...] = (),
              with_params: Any = None) -> RowsView:
    """A :class:`RowsView` on ``data`` (``data[0]`` is ``start``) for batches of ``batch``
    rows (``with_params``: :meth:`~fedsim.problems.compiled.CompiledView.metric_data`)."""
    start = data[0]
    return RowsView(data=data, draw=draw_rows, grad=grad, draws=int(batch), dtype=np.int64,
                    metrics=metrics, mdata=mdata, metric_names=metric_names,
                    normal_block=False, with_params=with_params, hvp=hvp, m=np.diff(start))


#: the code array of ``grad_sq``
_GRAD_SQ = np.zeros(1, dtype=np.int64)


class RowOracles:
    """The per-call oracles of a row-sampled problem, from its compiled view.

    A problem class sets ``dim`` and, in its constructor, ``self._cv``: its
    :class:`RowsView` (any batch size; :meth:`compiled_view` sets it) and
    ``self._ranges = rows_per_client(start)``, and ``compiled_view_base = True`` in its
    class body (the class whose oracles the view stands for: a subclass or an instance
    that replaces one gets no view, :func:`fedsim.problems.compiled.compiled_view`).
    ``batch_grad``/``batch_hvp`` read the batch as NumPy reads an index
    (:func:`row_indices`) and call the compiled oracles, so the per-call path and the
    compiled one are the same numbers; ``grad_f_sq`` is the compiled ``grad_sq`` metric.
    """

    dim: int
    _cv: RowsView
    _ranges: list[np.ndarray]

    def batch_grad(self, i: int, w: np.ndarray, batch: Any) -> np.ndarray:
        """Mean per-sample gradient over the batch rows, plus the ridge term (the view's
        compiled ``grad``)."""
        w = as_model(w, self.dim)
        i, idx = row_indices(self._ranges, i, batch)
        g = np.empty(self.dim)
        self._cv.grad(self._cv.data, i, w, idx, g)
        return g

    def batch_hvp(self, i: int, w: np.ndarray, v: np.ndarray, batch: Any) -> np.ndarray:
        """Mean per-sample Hessian over the batch rows times ``v``, plus the ridge term (the
        view's compiled ``hvp``)."""
        w, v = as_model(w, self.dim), as_model(v, self.dim)
        i, idx = row_indices(self._ranges, i, batch)
        h = np.empty(self.dim)
        self._cv.hvp(self._cv.data, i, w, v, idx, h)
        return h

    def grad_f_sq(self, w: np.ndarray) -> float:
        """``||grad f(w)||^2``, the recorded ``grad_sq`` (the view's compiled metric, which
        the replay records too)."""
        out = np.empty(1)
        self._cv.metrics(self._cv.mdata, _GRAD_SQ, as_model(w, self.dim), out)
        return float(out[0])

    def compiled_view(self, batch: int) -> RowsView:
        """The compiled oracles for batches of ``batch`` rows (``sample_batch`` then
        ``batch_grad``: the same numbers); callers go through
        :func:`fedsim.problems.compiled.compiled_view`."""
        return replace(self._cv, draws=check_integer("batch", batch, low=1))
