"""Many ``fedsim.rng`` client streams at once: NumPy's ``SeedSequence`` hash, vectorised.

``fedsim.rng.stream(seed, r, i, purpose)`` is ``Generator(PCG64(SeedSequence(seed,
spawn_key=(r, i, PURPOSES[purpose]))))``.  Building one costs ~30-80 us, almost all of it
the ``SeedSequence`` hash done word by word in Python-level Cython; a batched replay needs
``2 n R`` of them (20,000 for n=100, R=100).  The hash is a fixed sequence of 32-bit
multiply/xor/shift operations whose constants do not depend on the data (NumPy,
``numpy/random/bit_generator.pyx``: ``hashmix``, ``mix``, ``mix_entropy``,
``generate_state``), so it vectorises over any number of spawn keys.  This module computes
the ``PCG64`` seed words of every ``(replicate, client)`` pair in one pass and hands them
to ``PCG64`` through a one-shot seed object: the very bits of ``fedsim.rng`` (tested
against it, stream by stream), at ~5 us a stream.

Contract (NumPy >= 1.17, unchanged through 2.x): ``entropy`` is the seed's little-endian
32-bit words, padded with zeros to the pool size 4 when a spawn key is present; the spawn
key contributes one word per element below ``2**32``; ``PCG64`` takes
``generate_state(4, uint64)`` (8 words, paired little-endian).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.random.bit_generator import ISeedSequence

from fedsim.rng import PURPOSES, SERVER, Streams, replicate_seedseq
from fedsim.rng.seed_kernel import seed_words_grid

__all__ = ["pcg64_seed_words", "stream_keys", "client_bitgens", "server_bitgens", "lean_bitgen",
           "grid_seed_words", "GRID_COMPILED_MIN"]

#: from this many streams on, :func:`grid_seed_words` hashes in compiled code
GRID_COMPILED_MIN = 1 << 16

_M32 = 0xFFFFFFFF
INIT_A, MULT_A = 0x43B0D7E5, 0x931E8875
INIT_B, MULT_B = 0x8B51F9DD, 0x58F38DED
MIX_MULT_L, MIX_MULT_R = 0xCA01F9DD, 0x4973F715
POOL = 4


def _u32(x: int) -> np.uint32:
    return np.uint32(x & _M32)


class _Hash:
    """The data-independent multiplier sequence of ``hashmix`` (``hash_const``)."""

    def __init__(self, init: int, mult: int) -> None:
        self.h, self.mult = init, mult

    def mix(self, value: np.ndarray) -> np.ndarray:
        value = value ^ _u32(self.h)
        self.h = (self.h * self.mult) & _M32
        value = value * _u32(self.h)
        return value ^ (value >> np.uint32(16))


def _mix(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    r = _u32(MIX_MULT_L) * x - _u32(MIX_MULT_R) * y
    return r ^ (r >> np.uint32(16))


def _words(v: int) -> list[int]:
    v = int(v)
    if v < 0:
        raise ValueError("entropy must be non-negative")
    if v == 0:
        return [0]
    out = []
    while v > 0:
        out.append(v & _M32)
        v >>= 32
    return out


def pcg64_seed_words(seed: int, keys: np.ndarray) -> np.ndarray:
    """``SeedSequence(seed, spawn_key=k).generate_state(4, uint64)`` for every row ``k`` of
    ``keys`` (N, m) (non-negative, below ``2**32``); returns (N, 4) uint64."""
    keys = np.asarray(keys, dtype=np.int64)
    if keys.ndim != 2 or keys.shape[1] == 0:
        raise ValueError("keys must be (N, m) with m >= 1")
    if keys.size and (keys.min() < 0 or keys.max() > _M32):
        raise ValueError("spawn key elements must lie in [0, 2**32)")
    N = keys.shape[0]
    sw = _words(seed)
    if len(sw) < POOL:
        sw += [0] * (POOL - len(sw))
    ent = [np.full(N, w, dtype=np.uint32) for w in sw]
    ent += [keys[:, j].astype(np.uint32) for j in range(keys.shape[1])]
    with np.errstate(over="ignore"):
        ha = _Hash(INIT_A, MULT_A)
        mixer = [ha.mix(ent[i]) for i in range(POOL)]
        for s in range(POOL):
            for dst in range(POOL):
                if s != dst:
                    mixer[dst] = _mix(mixer[dst], ha.mix(mixer[s]))
        for s in range(POOL, len(ent)):
            for dst in range(POOL):
                mixer[dst] = _mix(mixer[dst], ha.mix(ent[s]))
        hb = _Hash(INIT_B, MULT_B)
        st = np.empty((N, 8), dtype=np.uint32)
        for k in range(8):
            st[:, k] = hb.mix(mixer[k % POOL])
    lo = st[:, 0::2].astype(np.uint64)
    hi = st[:, 1::2].astype(np.uint64)
    return lo | (hi << np.uint64(32))


def stream_keys(replicates: Sequence[int], owners: Sequence[int], purpose: str) -> np.ndarray:
    """The spawn keys ``(r, owner, PURPOSES[purpose])`` of ``fedsim.rng.Streams(seed,
    r).client(owner, purpose)`` (``owner = SERVER``: ``.server(purpose)``) for every ``r``
    of ``replicates`` then every ``owner`` (row ``k * len(owners) + j``), ``(N, 3)``
    int64: the one home of the key layout."""
    reps = np.asarray(list(replicates), dtype=np.int64)
    own = np.asarray(list(owners), dtype=np.int64)
    keys = np.empty((reps.size * own.size, 3), dtype=np.int64)
    keys[:, 0] = np.repeat(reps, own.size)
    keys[:, 1] = np.tile(own, reps.size)
    keys[:, 2] = PURPOSES[purpose]
    return keys


def grid_seed_words(seed: int, replicates: Sequence[int], owners: Sequence[int],
                    purpose: str) -> np.ndarray:
    """:func:`pcg64_seed_words` of :func:`stream_keys` ``(replicates, owners, purpose)``
    (the same rows, the same bits); from :data:`GRID_COMPILED_MIN` streams on, hashed in
    compiled code (:mod:`fedsim.rng.seed_kernel`) without laying the keys out."""
    reps = [int(r) for r in replicates]
    own = np.asarray(owners, dtype=np.int64)
    if (len(reps) * own.size < GRID_COMPILED_MIN or min(reps, default=0) < 0
            or max(reps, default=0) > _M32 or own.min(initial=0) < 0
            or own.max(initial=0) > _M32):
        return pcg64_seed_words(seed, stream_keys(reps, own, purpose))
    sw = _words(seed)
    sw += [0] * max(0, POOL - len(sw))
    return seed_words_grid(sw, reps, own, PURPOSES[purpose], INIT_A, MULT_A, INIT_B, MULT_B,
                           MIX_MULT_L, MIX_MULT_R)


class _Words(ISeedSequence):
    """Hands precomputed ``generate_state(4, uint64)`` words to a ``PCG64`` once."""

    __slots__ = ("w",)

    def __init__(self, w: np.ndarray) -> None:
        self.w = w

    def generate_state(self, n_words: int, dtype: Any = np.uint32) -> np.ndarray:
        if n_words != 4 or np.dtype(dtype) != np.uint64:  # pragma: no cover - PCG64 only
            raise ValueError("precomputed words serve PCG64 only")
        return self.w


def client_bitgens(seed: int, replicates: Sequence[int], clients: int,
                   purpose: str) -> list[list[np.random.PCG64]]:
    """``[[PCG64 of fedsim.rng.Streams(seed, r).client(i, purpose)] for i] for r]``."""
    R, n = len(replicates), int(clients)
    words = pcg64_seed_words(seed, stream_keys(replicates, range(n), purpose))
    pcg = np.random.PCG64
    bgs = [pcg(_Words(words[k])) for k in range(R * n)]
    return [bgs[k * n:(k + 1) * n] for k in range(R)]


def server_bitgens(seed: int, replicates: Sequence[int], purpose: str) -> list[np.random.PCG64]:
    """``[PCG64 of fedsim.rng.Streams(seed, r).server(purpose)] for r``."""
    words = pcg64_seed_words(seed, stream_keys(replicates, [SERVER], purpose))
    return [np.random.PCG64(_Words(words[k])) for k in range(words.shape[0])]


class _OneShotSeed(ISeedSequence):
    """Hands a ``SeedSequence``'s state to a new bit generator once, then forgets it (the
    bit generator keeps its seed sequence alive otherwise: ~300 bytes per stream)."""

    __slots__ = ("_ss",)

    def __init__(self, ss: np.random.SeedSequence) -> None:
        self._ss = ss

    def generate_state(self, n_words: int, dtype: Any = np.uint32) -> np.ndarray:
        ss, self._ss = self._ss, None
        if ss is None:
            raise RuntimeError("a lean stream's seed sequence has already been used")
        return ss.generate_state(n_words, dtype)


def lean_bitgen(streams: Streams, i: int, purpose: str) -> np.random.PCG64:
    """Client ``i``'s ``purpose`` stream as a bare ``PCG64``: the very bits of
    ``streams.client(i, purpose).bit_generator`` (``fedsim.rng``'s derivation,
    ``SeedSequence(seed, spawn_key=(replicate, i, PURPOSES[purpose]))``), without keeping
    the seed sequence or a ``Generator`` wrapper alive (tested against ``fedsim.rng``)."""
    rs = replicate_seedseq(streams.seed, streams.replicate)
    ss = np.random.SeedSequence(rs.entropy, spawn_key=(*rs.spawn_key, int(i),
                                                       PURPOSES[purpose]))
    return np.random.PCG64(_OneShotSeed(ss))
