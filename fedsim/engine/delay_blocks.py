"""Client delays, drawn in blocks from the client's ``delays`` stream.

* :class:`DelaySampler` -- a client's delays, drawn from its ``delays`` stream in blocks of
  ``BLOCK`` rounds (download, compute, upload, think, in that order; constant models draw
  nothing).  The fast engine and the per-step reference engine share it, so both consume
  the stream identically.  Buffers are capped at ``BLOCK`` rounds (a few hundred bytes);
  clients with the same models share a :class:`DelaySpec` (and the constant columns).
* :class:`RoundDelays` -- one round at a time with a variable number of compute draws
  (AsyPFL's ``E_k`` local steps).
* :func:`lean_bitgen` -- a client stream of :mod:`fedsim.rng` (the same bits) held as a
  bare ``PCG64`` that does not keep its ``SeedSequence`` alive (memory per client).
"""

from __future__ import annotations

from array import array
from typing import Any

import numpy as np
from numpy.random.bit_generator import ISeedSequence

from fedsim.rng import PURPOSES, Streams, replicate_seedseq

__all__ = ["DelaySampler", "DelaySpec", "RoundDelays", "lean_bitgen", "BLOCK"]

BLOCK = 16


class DelaySpec:
    """What clients with the same four delay models share: the models, the draws per
    round, and the (read-only) columns of the constant models."""

    __slots__ = ("models", "counts", "const_cols", "q", "rounds")

    KINDS = ("download", "compute", "upload", "think")

    def __init__(self, models: dict[str, Any], steps: int, block: int = BLOCK) -> None:
        from fedsim.delays import Constant

        self.q = int(steps)
        self.rounds = max(4, int(block) // self.q)
        self.models = [models[k] for k in self.KINDS]
        self.counts = [1, self.q, 1, 1]
        self.const_cols = [array("d", [float(m.value)]) * (self.rounds * self.counts[k])
                           if isinstance(m, Constant) else None
                           for k, m in enumerate(self.models)]


class DelaySampler:
    """One client's delays, drawn in blocks of rounds (module docstring).

    :meth:`block` returns the next ``rounds`` rounds as four ``array('d')`` columns
    (download, compute, upload, think; compute holds ``steps`` entries per round when
    ``compute_per = "step"``, else one); :meth:`next_round` returns one round as
    ``(download, (compute, ...), upload, think)``.  A block holds ``max(4, BLOCK // steps)``
    rounds, so the buffers stay below ~600 bytes per client.  Columns of constant models
    are shared, read-only arrays.

    ``rng`` is the client's ``delays`` stream, a ``Generator`` or its ``BitGenerator``;
    only the bit generator is kept and each block wraps it in a fresh ``Generator``
    (the stream's state lives in the bit generator, so the draws are the same).
    """

    __slots__ = ("bg", "spec", "j", "_cols")

    KINDS = DelaySpec.KINDS

    def __init__(self, models: dict[str, Any] | None, rng: Any, steps: int,
                 block: int = BLOCK, spec: DelaySpec | None = None) -> None:
        self.spec = spec if spec is not None else DelaySpec(models or {}, steps, block)
        self.bg = rng.bit_generator if isinstance(rng, np.random.Generator) else rng
        self._cols: tuple[array, ...] | None = None
        self.j = self.spec.rounds

    @classmethod
    def for_clients(cls, delays_cfg: Any, rngs: list[Any], steps: int,
                    block: int = BLOCK) -> list[DelaySampler]:
        """One sampler per client (``rngs[i]`` its ``delays`` stream); clients with the
        same model objects share one :class:`DelaySpec`."""
        specs: dict[tuple[int, ...], DelaySpec] = {}
        out = []
        for i, rng in enumerate(rngs):
            models = delays_cfg.for_client(i)
            key = tuple(id(models[k]) for k in DelaySpec.KINDS)
            sp = specs.get(key)
            if sp is None:
                sp = specs[key] = DelaySpec(models, steps, block)
            out.append(cls(None, rng, steps, block, spec=sp))
        return out

    @property
    def q(self) -> int:
        """Compute draws per round."""
        return self.spec.q

    @property
    def rounds(self) -> int:
        """Rounds per block."""
        return self.spec.rounds

    def block(self) -> tuple[array, array, array, array]:
        """Draw the next block of rounds (download, compute, upload, think, in that order)."""
        sp = self.spec
        B = sp.rounds
        rng = np.random.Generator(self.bg)
        cols = []
        for k, m in enumerate(sp.models):
            c = sp.const_cols[k]
            if c is None:
                cols.append(array("d", m.sample(rng, size=B * sp.counts[k]).tobytes()))
            else:
                cols.append(c)
        return cols[0], cols[1], cols[2], cols[3]

    def block_flat(self) -> tuple[array, array]:
        """The next block (the same draws as :meth:`block`) as ``(cycle, think)``:
        ``cycle`` = download, compute and upload columns in one array (offsets ``0``,
        ``rounds``, ``rounds * (1 + q)``; one array object instead of three saves ~250
        bytes per client) and the think column."""
        dl, cp, ul, th = self.block()
        return dl + cp + ul, th

    def next_round(self) -> tuple[float, tuple[float, ...], float, float]:
        """``(download, (compute per step, or one per round), upload, think)``."""
        if self.j == self.spec.rounds:
            self._cols = self.block()
            self.j = 0
        j = self.j
        self.j = j + 1
        dl, cp, ul, th = self._cols
        q = self.spec.q
        return dl[j], tuple(cp[j * q:(j + 1) * q]), ul[j], th[j]


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



class RoundDelays:
    """One client's delays, one round at a time with a variable number of compute draws.

    :meth:`next_round` draws ``(download, (compute_1, ..., compute_E), upload, think)`` from
    the client's ``delays`` stream in that order; constant models consume nothing.  (The
    block layout of :class:`DelaySampler` assumes a fixed number of compute draws per round,
    which AsyPFL's ``E_k = pi_k E`` is not.)
    """

    __slots__ = ("rng", "dl", "cp", "ul", "th")

    def __init__(self, models: dict[str, Any], rng: np.random.Generator) -> None:
        self.rng = rng
        self.dl, self.cp = models["download"], models["compute"]
        self.ul, self.th = models["upload"], models["think"]

    def next_round(self, steps: int) -> tuple[float, tuple[float, ...], float, float]:
        """``(download, (compute per step, ...), upload, think)`` with ``steps`` compute draws."""
        rng = self.rng
        dl = float(self.dl.sample(rng))
        cp = tuple(float(c) for c in np.asarray(self.cp.sample(rng, size=int(steps))))
        ul = float(self.ul.sample(rng))
        th = float(self.th.sample(rng))
        return dl, cp, ul, th
