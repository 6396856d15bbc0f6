"""A matrix product for compiled oracles: BLAS ``dgemm`` called from numba, allocating nothing.

numba's own ``np.dot`` allocates its result (NumPy's reference-counted memory), which the
replay's loops, compiled without it (``fedsim.jit.jit(nrt=False)``), cannot call.
:func:`matmul_into` calls the routine behind it, numba's helper ``numba_xxgemm`` (which
runs SciPy's BLAS ``dgemm``, ``scipy.linalg.cython_blas``), on caller-owned arrays; the
two scalars ``alpha`` and ``beta`` travel by address, in a caller-owned block
(:func:`gemm_block`).  The call is a named external symbol, so the compiled code is cached
like any other.

Row-major arrays are column-major transposes, so ``C = A @ B`` (row-major, ``A`` (m, k),
``B`` (k, n)) is the column-major ``C^T = B^T A^T``: ``dgemm("N", "N", n, m, k, 1, B, n, A,
k, beta, C, n)``; ``A`` may also be given transposed (``trans_a``: the row-major ``A^T``
(k, m) is passed, ``dgemm(.., "T", ..)``).  The summation order is the BLAS's (fixed for a
given library, machine and size; single-threaded at the sizes used here).
"""

from __future__ import annotations

import numba.np.linalg  # noqa: F401  (registers numba's BLAS helpers)
import numpy as np
from numba import types

from fedsim.jit import jit

__all__ = ["gemm_block", "matmul_into"]

#: ``numba_xxgemm(kind, transa, transb, m, n, k, *alpha, a, lda, b, ldb, *beta, c, ldc)``
_xxgemm = types.ExternalFunction("numba_xxgemm", types.intc(
    types.char, types.char, types.char, types.intp, types.intp, types.intp, types.voidptr,
    types.voidptr, types.intp, types.voidptr, types.intp, types.voidptr, types.voidptr,
    types.intp))


def gemm_block() -> np.ndarray:
    """The scalar block of :func:`matmul_into`: ``alpha``, ``beta`` (float64)."""
    return np.zeros(2)


@jit
def matmul_into(A, B, C, trans_a, beta, ab):
    """``C = op(A) @ B + beta C`` for C-contiguous float64 matrices, ``op(A) = A`` (``A``
    (m, k)) or, with ``trans_a``, ``A.T`` (``A`` given as (k, m)); ``B`` (k, n), ``C``
    (m, n); ``ab``: :func:`gemm_block`.  Returns BLAS's status (0)."""
    m, n = C.shape
    k = B.shape[0]
    ab[0] = 1.0
    ab[1] = beta
    return _xxgemm(100, 78, 84 if trans_a else 78, n, m, k, ab.ctypes, B.ctypes, n,
                   A.ctypes, m if trans_a else k, ab[1:].ctypes, C.ctypes, n)
