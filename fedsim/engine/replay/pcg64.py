"""NumPy's ``PCG64`` and its ``standard_exponential``, compiled, bit for bit.

Building a ``numpy.random.PCG64`` object costs ~4 us; a replay of the Theorem 8 norm family
at n = 30 needs 31 streams per replicate for ~120 events, so the objects alone would cost
more than the events.  This module runs the same generator on plain ``uint64`` arrays
inside compiled code, from the seed words of :func:`fedsim.engine.replay.seeding.pcg64_seed_words`
(``SeedSequence(...).generate_state(4, uint64)``, the words ``PCG64`` itself is seeded with):

* a stream's state is 4 words ``(state_hi, state_lo, inc_hi, inc_lo)`` of the 128-bit
  permuted congruential generator (NumPy ``pcg64.h``: ``pcg64_set_seed`` with ``seed =
  (w0, w1)``, ``inc = (w2, w3)``; ``srandom_r``: ``state = 0``, ``inc = 2 initseq + 1``, a
  step, ``state += initstate``, a step; a draw steps ``state = state * MULT + inc`` then
  outputs XSL-RR);
* :func:`standard_exponential` is NumPy's ``random_standard_exponential``
  (``distributions.c``: the 256-layer ziggurat, its tables those numba ships for its own
  ``Generator`` support, ``numba.np.random._constants``).

Tests compare every draw and the state against ``Generator(PCG64(...))`` over many seeds.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic
from numba.np.random import _constants as _zig

from fedsim.jit import jit

__all__ = ["pcg64_init", "standard_exponential", "next_uint64", "next_double"]

_KE = np.ascontiguousarray(_zig.ke_double, dtype=np.uint64)
_WE = np.ascontiguousarray(_zig.we_double, dtype=np.float64)
_FE = np.ascontiguousarray(_zig.fe_double, dtype=np.float64)
_EXP_R = float(_zig.ziggurat_exp_r)
_MULT_HI = np.uint64(2549297995355413924)
_MULT_LO = np.uint64(4865540595714422341)
_U1 = np.uint64(1)
_U3 = np.uint64(3)
_U8 = np.uint64(8)
_U11 = np.uint64(11)
_U58 = np.uint64(58)
_U63 = np.uint64(63)
_U64 = np.uint64(64)
_UFF = np.uint64(0xFF)
_TWO53 = 1.0 / 9007199254740992.0


@intrinsic
def _mulhi(typingctx, a, b):
    """The high 64 bits of the 128-bit product of two ``uint64`` (one LLVM ``i128`` mul)."""
    sig = types.uint64(types.uint64, types.uint64)

    def codegen(context, builder, signature, args):
        i128 = ir.IntType(128)
        p = builder.mul(builder.zext(args[0], i128), builder.zext(args[1], i128))
        return builder.trunc(builder.lshr(p, ir.Constant(i128, 64)), ir.IntType(64))

    return sig, codegen


@jit
def _step(s):
    """``state = state * MULT + inc`` (mod 2^128) on ``s = (sh, sl, ih, il)``."""
    sh, sl = s[0], s[1]
    lo = sl * _MULT_LO
    hi = _mulhi(sl, _MULT_LO) + sl * _MULT_HI + sh * _MULT_LO
    nlo = lo + s[3]
    carry = _U1 if nlo < lo else np.uint64(0)
    s[0] = hi + s[2] + carry
    s[1] = nlo


@jit
def pcg64_init(words, s):
    """The state of ``PCG64`` seeded with ``words`` (``generate_state(4, uint64)``) into ``s``."""
    s[0] = np.uint64(0)
    s[1] = np.uint64(0)
    s[2] = (words[2] << _U1) | (words[3] >> _U63)
    s[3] = (words[3] << _U1) | _U1
    _step(s)
    lo = s[1] + words[1]
    carry = _U1 if lo < s[1] else np.uint64(0)
    s[0] = s[0] + words[0] + carry
    s[1] = lo
    _step(s)
    return 0


@jit
def next_uint64(s):
    """One 64-bit output (step, then XSL-RR of the new state)."""
    _step(s)
    x = s[0] ^ s[1]
    rot = s[0] >> _U58
    return (x >> rot) | (x << ((_U64 - rot) & _U63))


@jit
def next_double(s):
    """A double in [0, 1): ``(next_uint64 >> 11) 2^-53``."""
    return np.float64(next_uint64(s) >> _U11) * _TWO53


@jit
def standard_exponential(s):
    """NumPy's ``random_standard_exponential`` (module docstring)."""
    while True:
        ri = next_uint64(s)
        ri = ri >> _U3
        idx = np.intp(ri & _UFF)
        ri = ri >> _U8
        x = np.float64(ri) * _WE[idx]
        if ri < _KE[idx]:
            return x
        if idx == 0:
            return _EXP_R - np.log1p(-next_double(s))
        if (_FE[idx - 1] - _FE[idx]) * next_double(s) + _FE[idx] < np.exp(-x):
            return x
