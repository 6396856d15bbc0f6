"""``fedsim.rng``'s PCG64 streams as plain state rows, drawn from inside compiled code.

The replay draws every client's randomness inside its compiled loop, bitwise as NumPy
draws it from ``fedsim.rng.Streams(seed, r).client(i, purpose)`` but without one Python
``Generator`` per stream (building those cost more than the replay's arithmetic).

*State.*  A stream is one row of a ``uint64`` array ``(N, 6)``: the PCG64 state (high and
low 64 bits), its increment (high, low), NumPy's ``has_uint32`` flag and buffered
``uinteger`` (``numpy/random/src/pcg64/pcg64.h``: ``pcg_setseq_128_xsl_rr_64``, the
multiplier ``PCG_DEFAULT_MULTIPLIER_128``).  :func:`seed_states` turns the seed words of
:func:`fedsim.rng.seeding.pcg64_seed_words` (``SeedSequence.generate_state(4,
uint64)``) into rows exactly as ``PCG64.__init__`` does (``pcg64_set_seed``: ``inc =
2 initseq + 1``, step, add the seed, step).  ``numpy_state(row)`` gives the row as
``PCG64.state`` (tests compare them).

*Draws.*  :func:`stream` makes a :class:`Stream` value (the states array and a row) in
compiled code; it has the scalar methods ``standard_normal()``, ``random()``,
``standard_exponential()`` and ``integers(low, high)`` (int64, ``high`` excluded) of a
NumPy ``Generator``.  They run numba's own ports of NumPy's ``distributions.c``
(``numba.np.random.distributions`` / ``random_methods``: ziggurats, Lemire's bounded
integers), fed by this module's ``next_uint64``/``next_uint32``/``next_double`` for a
state row -- NumPy's ``pcg64_next64``/``pcg64_next32`` and ``(x >> 11) / 2**53``.  So a
problem's compiled ``draw(data, i, gen, z)`` (:mod:`fedsim.problems.compiled`) runs the
same with a numba-typed NumPy ``Generator`` or with a :class:`Stream`, and gives the same
numbers; ``tests/engine/replay/test_replay_streams.py`` checks the numbers and the final
states against NumPy for every method.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import (
    intrinsic,
    make_attribute_wrapper,
    models,
    overload,
    overload_method,
    register_model,
)
from numba.np.random.distributions import (
    fe_double,
    fi_double,
    ke_double,
    ki_double,
    we_double,
    wi_double,
    ziggurat_exp_r,
    ziggurat_nor_inv_r,
    ziggurat_nor_r,
)
from numba.np.random.generator_core import next_double, next_uint32, next_uint64
from numba.np.random.random_methods import bounded_lemire_uint64, buffered_bounded_lemire_uint32

from fedsim.jit import jit
from fedsim.rng import SERVER
from fedsim.rng.seeding import grid_seed_words

__all__ = ["Stream", "stream", "seed_states", "client_states", "server_states", "numpy_state",
           "WIDTH"]

#: uint64 words per stream row: state hi, state lo, inc hi, inc lo, has_uint32, uinteger
WIDTH = 6
MULT_HI, MULT_LO = 2549297995355413924, 4865540595714422341  # PCG_DEFAULT_MULTIPLIER_128
_STATES = types.Array(types.uint64, 2, "C")


_PTR = types.CPointer(types.uint64)


class StreamType(types.Type):
    """numba type of :class:`Stream`: a pointer to a state row, passed by value (no
    reference count: the compiled function that made it holds the states array)."""

    def __init__(self) -> None:
        super().__init__(name="fedsim.Stream")


Stream = StreamType()


@register_model(StreamType)
class _StreamModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, [("p", _PTR)])


make_attribute_wrapper(StreamType, "p", "p")


@intrinsic
def stream(typingctx, states, row):
    """``stream(states, row)``: the :class:`Stream` of row ``row`` of ``states`` (compiled
    code only; ``states`` must outlive it)."""
    if states != _STATES or not isinstance(row, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        arr = cgutils.create_struct_proxy(_STATES)(context, builder, value=args[0])
        r = context.cast(builder, args[1], sig.args[1], types.intp)
        off = builder.mul(r, ir.Constant(r.type, WIDTH))
        st = cgutils.create_struct_proxy(Stream)(context, builder)
        st.p = builder.gep(arr.data, [off])
        return st._getvalue()

    return Stream(states, row), codegen


def _i128(builder, hi, lo):
    t = ir.IntType(128)
    return builder.or_(builder.shl(builder.zext(hi, t), ir.Constant(t, 64)), builder.zext(lo, t))


def _split(builder, x):
    t = ir.IntType(64)
    return (builder.trunc(builder.lshr(x, ir.Constant(x.type, 64)), t), builder.trunc(x, t))


@intrinsic
def _muladd128(typingctx, ahi, alo, bhi, blo, chi, clo):
    """``a b + c`` modulo 2**128 on (high, low) uint64 pairs."""
    u = types.uint64
    sig = types.UniTuple(u, 2)(u, u, u, u, u, u)

    def codegen(context, builder, sig, args):
        a = _i128(builder, args[0], args[1])
        b = _i128(builder, args[2], args[3])
        c = _i128(builder, args[4], args[5])
        hi, lo = _split(builder, builder.add(builder.mul(a, b), c))
        return context.make_tuple(builder, sig.return_type, (hi, lo))

    return sig, codegen


@intrinsic
def _pcg_step(typingctx, shi, slo, ihi, ilo):
    """One ``pcg_setseq_128_xsl_rr_64`` draw: ``s <- s M + inc``; returns (new hi, new lo,
    ``rotr64(hi ^ lo, hi >> 58)``)."""
    u = types.uint64
    sig = types.UniTuple(u, 3)(u, u, u, u)

    def codegen(context, builder, sig, args):
        t128 = ir.IntType(128)
        s = _i128(builder, args[0], args[1])
        inc = _i128(builder, args[2], args[3])
        mult = ir.Constant(t128, (MULT_HI << 64) | MULT_LO)
        hi, lo = _split(builder, builder.add(builder.mul(s, mult), inc))
        t64 = ir.IntType(64)
        x = builder.xor(hi, lo)
        r = builder.lshr(hi, ir.Constant(t64, 58))
        left = builder.and_(builder.sub(ir.Constant(t64, 0), r), ir.Constant(t64, 63))
        out = builder.or_(builder.lshr(x, r), builder.shl(x, left))
        return context.make_tuple(builder, sig.return_type, (hi, lo, out))

    return sig, codegen


@intrinsic
def _half(typingctx, x, upper):
    """``x >> 32`` (``upper``) or ``x & 0xffffffff`` as uint32."""
    sig = types.uint32(types.uint64, types.boolean)

    def codegen(context, builder, sig, args):
        t64 = ir.IntType(64)
        hi = builder.lshr(args[0], ir.Constant(t64, 32))
        v = builder.select(args[1], hi, args[0])
        return builder.trunc(v, ir.IntType(32))

    return sig, codegen


@intrinsic
def _unit(typingctx, x):
    """``(x >> 11) * 2**-53`` (NumPy's ``next_double`` of a 64-bit draw)."""
    sig = types.float64(types.uint64)

    def codegen(context, builder, sig, args):
        v = builder.lshr(args[0], ir.Constant(ir.IntType(64), 11))
        f = builder.uitofp(v, ir.DoubleType())
        return builder.fmul(f, ir.Constant(ir.DoubleType(), 1.0 / 9007199254740992.0))

    return sig, codegen


@jit(inline=True)
def _next64(p):
    hi, lo, out = _pcg_step(p[0], p[1], p[2], p[3])
    p[0] = hi
    p[1] = lo
    return out


@jit(inline=True)
def _next32(p):
    if p[4] != 0:
        p[4] = 0
        return _half(p[5], False)
    x = _next64(p)
    p[4] = 1
    p[5] = _half(x, True)
    return _half(x, False)


@overload(next_uint64)
def _ol_next_uint64(bitgen):
    if isinstance(bitgen, StreamType):
        return lambda bitgen: _next64(bitgen.p)
    return None


@overload(next_uint32)
def _ol_next_uint32(bitgen):
    if isinstance(bitgen, StreamType):
        return lambda bitgen: _next32(bitgen.p)
    return None


@overload(next_double)
def _ol_next_double(bitgen):
    if isinstance(bitgen, StreamType):
        return lambda bitgen: _unit(_next64(bitgen.p))
    return None


@jit
def _normal_rest(bitgen, r):
    """NumPy's ``random_standard_normal`` (``distributions.c``; numba's port,
    ``random_standard_normal``) from its first 64-bit draw ``r`` on: the wedge or tail
    test of ``r``'s layer, then new draws until one is accepted."""
    while 1:
        idx = r & 0xff
        r >>= 8
        sign = r & 0x1
        rabs = (r >> 1) & 0x000fffffffffffff
        x = rabs * wi_double[idx]
        if (sign & 0x1):
            x = -x
        if rabs < ki_double[idx]:
            return x
        if idx == 0:
            while 1:
                xx = -ziggurat_nor_inv_r * np.log1p(-next_double(bitgen))
                yy = -np.log1p(-next_double(bitgen))
                if (yy + yy > xx * xx):
                    if ((rabs >> 8) & 0x1):
                        return -(ziggurat_nor_r + xx)
                    else:
                        return ziggurat_nor_r + xx
        else:
            if (((fi_double[idx - 1] - fi_double[idx]) *
                    next_double(bitgen) + fi_double[idx]) <
                    np.exp(-0.5 * x * x)):
                return x
        r = next_uint64(bitgen)


@overload_method(StreamType, "standard_normal", inline="always")
def _ol_standard_normal(self):
    """The first (99.3 %) branch of the ziggurat inline, the rest in :func:`_normal_rest`."""
    def impl(self):
        r = next_uint64(self)
        idx = r & 0xff
        q = r >> 8
        rabs = (q >> 1) & 0x000fffffffffffff
        if rabs < ki_double[idx]:
            x = rabs * wi_double[idx]
            if (q & 0x1):
                x = -x
            return x
        return _normal_rest(self, r)

    return impl


@jit
def _exponential_rest(bitgen, r):
    """NumPy's ``random_standard_exponential`` (``distributions.c``; numba's port,
    ``random_standard_exponential``) from its first 64-bit draw ``r`` on: the layer test of
    ``r``, the tail or the wedge test, then new draws until one is accepted."""
    while 1:
        ri = r >> 3
        idx = ri & 0xFF
        ri >>= 8
        x = ri * we_double[idx]
        if (ri < ke_double[idx]):
            return x
        if idx == 0:
            return ziggurat_exp_r - np.log1p(-next_double(bitgen))
        if ((fe_double[idx - 1] - fe_double[idx]) * next_double(bitgen) +
                fe_double[idx] < np.exp(-x)):
            return x
        r = next_uint64(bitgen)


@overload_method(StreamType, "standard_exponential", inline="always")
def _ol_standard_exponential(self):
    """NumPy's ``random_standard_exponential``: its first (98.9 %) branch inline, the rest
    in :func:`_exponential_rest`."""
    def impl(self):
        r = next_uint64(self)
        ri = r >> 11
        idx = (r >> 3) & 0xFF
        if (ri < ke_double[idx]):
            return ri * we_double[idx]
        return _exponential_rest(self, r)

    return impl


@overload_method(StreamType, "random")
def _ol_random(self):
    return lambda self: next_double(self)


@overload_method(StreamType, "integers")
def _ol_integers(self, low, high):
    """``Generator.integers(low, high)`` (int64, ``high`` excluded; NumPy's
    ``random_bounded_uint64_fill`` for one number)."""
    if not (isinstance(low, types.Integer) and isinstance(high, types.Integer)):
        return None

    def impl(self, low, high):
        lo = np.int64(low)
        rng = np.uint64(np.int64(high) - np.int64(1) - lo)
        if rng == 0:
            return lo
        if rng <= 0xFFFFFFFF:
            if rng == 0xFFFFFFFF:
                return lo + np.int64(next_uint32(self))
            return lo + np.int64(buffered_bounded_lemire_uint32(self, rng))
        if rng == 0xFFFFFFFFFFFFFFFF:
            return lo + np.int64(next_uint64(self))
        return lo + np.int64(bounded_lemire_uint64(self, rng))

    return impl


@jit
def _seed_rows(words, out):
    """``pcg64_set_seed``: state 0, ``inc = 2 initseq + 1``, step, add the seed, step."""
    one = np.uint64(1)
    zero = np.uint64(0)
    two = np.uint64(2)
    for k in range(words.shape[0]):
        ihi, ilo = _muladd128(words[k, 2], words[k, 3], zero, two, zero, one)
        shi, slo = _muladd128(zero, zero, zero, zero, ihi, ilo)  # step from 0: inc
        shi, slo = _muladd128(shi, slo, zero, one, words[k, 0], words[k, 1])
        shi, slo = _muladd128(shi, slo, np.uint64(MULT_HI), np.uint64(MULT_LO), ihi, ilo)
        out[k, 0] = shi
        out[k, 1] = slo
        out[k, 2] = ihi
        out[k, 3] = ilo
        out[k, 4] = zero
        out[k, 5] = zero
    return 0


def seed_states(words: np.ndarray) -> np.ndarray:
    """Stream rows ``(N, WIDTH)`` of ``PCG64`` seeded with ``words`` ``(N, 4)`` (the
    ``SeedSequence.generate_state(4, uint64)`` words: seed high, low, initseq high, low)."""
    w = np.ascontiguousarray(words, dtype=np.uint64)
    out = np.empty((w.shape[0], WIDTH), dtype=np.uint64)
    _seed_rows(w, out)
    return out


def client_states(seed: int, replicates: Sequence[int], clients: int,
                  purpose: str) -> np.ndarray:
    """``(R, clients, WIDTH)``: row ``[k, i]`` is ``fedsim.rng.Streams(seed,
    replicates[k]).client(i, purpose)``'s PCG64 (see
    :func:`fedsim.rng.seeding.client_bitgens`, the same streams as objects)."""
    R, n = len(replicates), int(clients)
    words = grid_seed_words(seed, replicates, np.arange(n, dtype=np.int64), purpose)
    return seed_states(words).reshape(R, n, WIDTH)


def server_states(seed: int, replicates: Sequence[int], purpose: str) -> np.ndarray:
    """``(R, 1, WIDTH)``: row ``[k, 0]`` is ``fedsim.rng.Streams(seed,
    replicates[k]).server(purpose)``'s PCG64."""
    words = grid_seed_words(seed, replicates, [SERVER], purpose)
    return seed_states(words).reshape(len(replicates), 1, WIDTH)


def numpy_state(row: np.ndarray) -> dict[str, Any]:
    """The stream row as ``np.random.PCG64().state``."""
    r = [int(x) for x in row]
    return {"bit_generator": "PCG64",
            "state": {"state": (r[0] << 64) | r[1], "inc": (r[2] << 64) | r[3]},
            "has_uint32": r[4], "uinteger": r[5]}
