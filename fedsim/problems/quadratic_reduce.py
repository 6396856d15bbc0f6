"""The quadratic problem's set-up reductions over clients without the ``(n, d, d)`` stack.

:class:`~fedsim.problems.quadratic.QuadraticProblem` needs, over its ``n`` client
Hessians ``H_i`` (:class:`~fedsim.problems.quadratic_linalg.DistinctMatrices`):
``Abar = mean_i H_i``, ``m = mean_i H_i b_i``, ``g_i = H_i (x - b_i)`` and ``q_i = (x -
b_i)^T H_i (x - b_i)``.  Laying the stack out costs ``n d^2`` floats of fresh memory (at
n = 10^6, d = 10: 800 MB, most of the set-up in page faults).  :func:`client_reductions`
lays it out a slab of clients at a time in one reused buffer and gives the bits of NumPy's
whole-stack expressions::

    Abar = stack.mean(axis=0)
    m    = np.einsum("nij,nj->i", stack, b) / n
    g    = np.einsum("nij,nj->ni", stack, x - b)
    q    = np.einsum("ni,nij,nj->n", x - b, stack, x - b)

because, for a C-contiguous stack with ``d >= 2``, NumPy reduces over the client axis
sequentially (the client axis is the iterator's outer loop: ``out += row`` for ``add``
along axis 0, ``out[i] += sum_j H_nij b_nj`` in client order for the einsum, each
``sum_j`` the same inner kernel on the same contiguous row), and ``g`` and ``q`` are per
client.  A slab's partial sum is carried into the next slab as its first row, so the
additions are those of the whole stack, in its order.  With ``d = 1`` the client axis
becomes NumPy's inner (pairwise) loop, so :func:`client_reductions` lays the stack out
whole there (as it does when ``n`` fits in one slab).
``tests/problems/test_quadratic_reduce.py`` checks the bits against the whole stack.
"""

from __future__ import annotations

import numpy as np

from fedsim.problems.quadratic_linalg import DistinctMatrices, materialize

__all__ = ["client_reductions", "SLAB_BYTES"]

#: bytes of one slab of the laid-out stack (its rows are reused slab after slab)
SLAB_BYTES = 4 << 20


def _whole(dm: DistinctMatrices, b: np.ndarray, x_of: object) -> tuple:
    stack = materialize(dm)
    abar = stack.mean(axis=0)
    m = np.einsum("nij,nj->i", stack, b) / dm.n
    x = x_of(abar, m)
    r = x - b
    g = np.einsum("nij,nj->ni", stack, r)
    q = np.einsum("ni,nij,nj->n", r, stack, r)
    return abar, m, x, g, q


def client_reductions(dm: DistinctMatrices, b: np.ndarray, x_of: object,
                      slab: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                         np.ndarray, np.ndarray]:
    """``(Abar, m, x, g, q)`` (module docstring) of the Hessians ``dm`` and the centres
    ``b`` ``(n, d)``, with ``x = x_of(Abar, m)``; ``slab`` clients a slab (default: about
    :data:`SLAB_BYTES`), the same bits whatever the slab."""
    n, d = dm.n, int(dm.values.shape[1])
    if slab is None:
        slab = max(2, SLAB_BYTES // (8 * d * d))
    slab = max(2, int(slab))
    if d < 2 or n <= slab:
        return _whole(dm, b, x_of)
    vals, index, single = dm.values, dm.index, dm.values.shape[0] == 1
    # row 0 of each buffer carries the partial sum of the slabs before
    buf = np.empty((slab + 1, d, d))
    rows = np.empty((slab + 1, d))
    if single:
        buf[1:] = vals[0]
    bounds = list(range(0, n, slab)) + [n]
    if n - bounds[-2] == 1:  # no one-client slab (NumPy drops a length-1 axis)
        del bounds[-2]
    abar_sum = np.empty((d, d))
    m_sum = np.empty(d)
    for k, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
        w = hi - lo
        if w + 1 > buf.shape[0]:
            buf = np.empty((w + 1, d, d))
            rows = np.empty((w + 1, d))
            if single:
                buf[1:] = vals[0]
        if not single:
            np.take(vals, index[lo:hi], axis=0, out=buf[1:w + 1])
        part = buf[1:w + 1]
        rows[1:w + 1] = np.einsum("nij,nj->ni", part, b[lo:hi])
        if k == 0:
            abar_sum[...] = np.add.reduce(part, axis=0)
            m_sum[...] = np.add.reduce(rows[1:w + 1], axis=0)
        else:
            buf[0] = abar_sum
            rows[0] = m_sum
            abar_sum[...] = np.add.reduce(buf[:w + 1], axis=0)
            m_sum[...] = np.add.reduce(rows[:w + 1], axis=0)
    abar = np.true_divide(abar_sum, n)
    m = m_sum / n
    x = x_of(abar, m)
    g = np.empty((n, d))
    q = np.empty(n)
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        w = hi - lo
        part = buf[1:w + 1]
        if not single:
            np.take(vals, index[lo:hi], axis=0, out=part)
        r = x - b[lo:hi]
        g[lo:hi] = np.einsum("nij,nj->ni", part, r)
        q[lo:hi] = np.einsum("ni,nij,nj->n", r, part, r)
    return abar, m, x, g, q
