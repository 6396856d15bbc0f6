"""``fedsim.rng.seeding.pcg64_seed_words`` in compiled code, for many streams at once.

The ``SeedSequence`` hash (:mod:`fedsim.rng.seeding`) is 32-bit multiply/xor/shift
arithmetic whose multipliers do not depend on the data; :func:`seed_words_grid` runs it
row by row in compiled code (64-bit words masked to 32 bits after every product and
difference: the same integers), for the keys ``(r, owner, purpose)`` of every replicate
then every owner, without laying the keys out.  The vectorised NumPy hash costs ~0.3 s per
million streams; this ~0.02 s.  The multipliers come from the interpreted hash's own
sequence (:func:`hash_constants`), so both share one definition of the constants;
``tests/rng/test_seed_kernel.py`` checks the words against ``pcg64_seed_words``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fedsim.jit import jit

__all__ = ["seed_words_grid", "hash_constants"]

_M = 0xFFFFFFFF


def hash_constants(init: int, mult: int, calls: int) -> np.ndarray:
    """The ``calls + 1`` values ``h_0 = init, h_{k+1} = h_k mult mod 2**32`` that call ``k``
    of ``hashmix`` reads (``h_k`` then ``h_{k+1}``)."""
    out = np.empty(calls + 1, dtype=np.uint64)
    h = init & _M
    for k in range(calls + 1):
        out[k] = h
        h = (h * mult) & _M
    return out


@jit(inline=True)
def _hashmix(x, h0, h1):
    """``SeedSequence``'s ``hashmix`` of the word ``x`` with its multipliers ``h0, h1``."""
    v = (x ^ h0) & np.uint64(0xFFFFFFFF)
    v = (v * h1) & np.uint64(0xFFFFFFFF)
    return v ^ (v >> np.uint64(16))


@jit(inline=True)
def _mix(x, y, ml, mr):
    """``SeedSequence``'s ``mix`` of the words ``x`` and ``y`` (``y`` already hashed)."""
    r = ((ml * x) - (mr * y)) & np.uint64(0xFFFFFFFF)
    return r ^ (r >> np.uint64(16))


@jit(nrt=False)
def _grid(ent0, reps, owners, purpose, ha, hb, ml, mr, ent, mixer, out):
    P = ent0.shape[0]
    n = owners.shape[0]
    for a in range(reps.shape[0]):
        for j in range(n):
            for p in range(P):
                ent[p] = ent0[p]
            ent[P] = reps[a]
            ent[P + 1] = owners[j]
            ent[P + 2] = purpose
            c = 0
            for i in range(4):
                mixer[i] = _hashmix(ent[i], ha[c], ha[c + 1])
                c += 1
            for s in range(4):
                for dst in range(4):
                    if s != dst:
                        mixer[dst] = _mix(mixer[dst], _hashmix(mixer[s], ha[c], ha[c + 1]),
                                          ml, mr)
                        c += 1
            for s in range(4, P + 3):
                for dst in range(4):
                    mixer[dst] = _mix(mixer[dst], _hashmix(ent[s], ha[c], ha[c + 1]), ml, mr)
                    c += 1
            row = a * n + j
            for k in range(4):
                lo = _hashmix(mixer[(2 * k) % 4], hb[2 * k], hb[2 * k + 1])
                hi = _hashmix(mixer[(2 * k + 1) % 4], hb[2 * k + 1], hb[2 * k + 2])
                out[row, k] = lo | (hi << np.uint64(32))
    return 0


def seed_words_grid(entropy: Sequence[int], replicates: Sequence[int], owners: Sequence[int],
                    purpose: int, init_a: int, mult_a: int, init_b: int, mult_b: int,
                    mix_l: int, mix_r: int) -> np.ndarray:
    """``(R * len(owners), 4)`` uint64: the ``PCG64`` seed words of the spawn keys ``(r,
    owner, purpose)`` (row ``k * len(owners) + j``) for the seed's pool-padded 32-bit
    ``entropy`` words (the constants of :mod:`fedsim.rng.seeding`)."""
    ent0 = np.asarray([int(w) & _M for w in entropy], dtype=np.uint64)
    reps = np.asarray(list(replicates), dtype=np.uint64)
    own = np.asarray(owners, dtype=np.uint64)
    calls = 4 + 12 + 4 * (ent0.size + 3 - 4)
    ha = hash_constants(init_a, mult_a, calls)
    hb = hash_constants(init_b, mult_b, 8)
    out = np.empty((reps.size * own.size, 4), dtype=np.uint64)
    ent, mixer = np.empty(ent0.size + 3, dtype=np.uint64), np.empty(4, dtype=np.uint64)
    _grid(ent0, reps, own, np.uint64(purpose), ha, hb, np.uint64(mix_l), np.uint64(mix_r), ent,
          mixer, out)
    return out
