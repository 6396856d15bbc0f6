"""Delay draws: every client's delays, drawn from its ``delays`` stream (the one home).

Client ``i``'s delays come only from ``fedsim.rng.Streams(seed, r).client(i, "delays")``
(:mod:`fedsim.rng`).  They are drawn in blocks of ``B = max(4, BLOCK // q)`` rounds (``q``
compute draws per round: ``Q`` when ``delays.compute_per = "step"``, else 1), each block
drawing, in this order, ``download.sample(rng, size=B)``, ``compute.sample(rng, size=B *
q)``, ``upload.sample(rng, size=B)``, ``think.sample(rng, size=B)``; a ``Constant`` model
draws nothing.  Round ``j`` of a block uses entry ``j`` of each column (compute: entries
``j q .. j q + q - 1``).  Every writer of a timeline that draws delays in blocks uses one of
the classes below, so all consume the streams identically:

* :class:`DelaySampler` -- a client's delays, drawn from its ``delays`` stream in blocks of
  ``BLOCK`` rounds (download, compute, upload, think, in that order; constant models draw
  nothing).  The fast engine and the per-step reference engine share it, so both consume
  the stream identically.  Buffers are capped at ``BLOCK`` rounds (a few hundred bytes);
  clients with the same models share a :class:`DelaySpec` (and the constant columns).
* :class:`RoundDelays` -- one round at a time with a variable number of compute draws
  (AsyPFL's ``E_k`` local steps).
* :class:`ClientDelayStream` -- one client's blocks as one array (the compiled timelines),
  several blocks per call when the numbers are the same;
* :class:`DelayPlan` -- the delay models of all clients of a scenario, grouped (one entry
  per distinct set of models, :meth:`fedsim.config.DelaysConfig.groups`), drawing a
  generation of clients at once when every kind is always ``Constant`` or always
  ``Exponential``.
"""

from __future__ import annotations

from array import array
from typing import Any

import numpy as np

from fedsim.delays import Constant, Exponential, LogNormal, Normal, Uniform

__all__ = ["DelaySampler", "DelaySpec", "RoundDelays", "ClientDelayStream", "DelayPlan",
           "BLOCK", "DELAY_KINDS"]

#: rounds of a delay block are ``max(4, BLOCK // q)`` for ``q`` compute draws per round
BLOCK = 16
#: the order of a round's delay draws
DELAY_KINDS = ("download", "compute", "upload", "think")
_CONCAT_SAFE = (Exponential, Uniform, LogNormal, Normal)


class DelaySpec:
    """What clients with the same four delay models share: the models, the draws per
    round, and the (read-only) columns of the constant models."""

    __slots__ = ("models", "counts", "const_cols", "q", "rounds")

    KINDS = DELAY_KINDS

    def __init__(self, models: dict[str, Any], steps: int, block: int = BLOCK) -> None:
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


class ClientDelayStream:
    """One client's delays in the engine's block order (module docstring)."""

    __slots__ = ("rng", "models", "q", "B", "fast", "expo")

    def __init__(self, models: dict, rng: np.random.Generator, q: int) -> None:
        self.rng = rng
        self.models = [models[k] for k in DELAY_KINDS]
        self.q = int(q)
        self.B = max(4, BLOCK // self.q)
        rnd = [m for m in self.models if not isinstance(m, Constant)]
        self.fast = len(rnd) == 0 or (len(rnd) == 1 and isinstance(rnd[0], _CONCAT_SAFE))
        # several exponentials: NumPy draws ``exponential(scale)`` as ``scale *
        # standard_exponential()`` (distributions.c ``random_exponential``), one number at a
        # time, so one ``standard_exponential`` call of the whole span, scaled column by
        # column, gives the interleaved block draws' very numbers
        self.expo = (not self.fast) and all(isinstance(m, Exponential) for m in rnd)

    def draw(self, blocks: int, out: np.ndarray | None = None) -> np.ndarray:
        """``blocks`` blocks as an array ``(blocks * B, q + 3)``: dl, c_1..c_q, ul, th."""
        B, q = self.B, self.q
        rounds = blocks * B
        if out is None:
            out = np.empty((rounds, q + 3))
        counts = (1, q, 1, 1)
        cols = ((0, 1), (1, 1 + q), (1 + q, 2 + q), (2 + q, 3 + q))
        if self.fast:
            for m, (a, b), c in zip(self.models, cols, counts, strict=True):
                if isinstance(m, Constant):
                    out[:, a:b] = float(m.value)
                else:
                    out[:, a:b] = m.sample(self.rng, size=rounds * c).reshape(rounds, c)
            return out
        if self.expo:
            per = [0 if isinstance(m, Constant) else B * c
                   for m, c in zip(self.models, counts, strict=True)]
            z = self.rng.standard_exponential(blocks * sum(per))
            z = z.reshape(blocks, sum(per))
            o = out.reshape(blocks, B, q + 3)
            off = 0
            for m, (a, b), c, p in zip(self.models, cols, counts, per, strict=True):
                if isinstance(m, Constant):
                    o[:, :, a:b] = float(m.value)
                else:
                    np.multiply(z[:, off:off + p].reshape(blocks, B, c), 1.0 / m.rate,
                                out=o[:, :, a:b])
                    off += p
            return out
        for k in range(blocks):
            blk = out[k * B:(k + 1) * B]
            for m, (a, b), c in zip(self.models, cols, counts, strict=True):
                if isinstance(m, Constant):
                    blk[:, a:b] = float(m.value)
                else:
                    blk[:, a:b] = m.sample(self.rng, size=B * c).reshape(B, c)
        return out


class DelayPlan:
    """The delay models of a scenario's clients, shared by all its replicates' timelines.

    When every delay kind is, across all clients, either always ``Constant`` (values may
    differ) or always ``Exponential`` (rates may differ), a generation of ``m`` clients is
    drawn with one ``standard_exponential`` call per client and scaled and laid out for
    all ``m`` at once (``vector``; the numbers of :class:`ClientDelayStream`, see its
    ``expo`` note); otherwise each client's :class:`ClientDelayStream` draws its own.
    """

    def __init__(self, scenario: Any, q: int | None = None) -> None:
        """``q``: compute draws per round (default: the algorithm's Q with
        ``compute_per = "step"``, else 1)."""
        a, dc = scenario.algorithm, scenario.delays
        self.n = n = scenario.problem.n
        if q is None:
            q = int(a.get("Q")) if dc.compute_per == "step" else 1
        self.q = q = int(q)
        self.B = B = max(4, BLOCK // q)
        groups = dc.groups(n)
        rows = [[m[k] for k in DELAY_KINDS] for m, _ in groups]
        label = np.empty(n, dtype=np.intp)
        for g, (_, cl) in enumerate(groups):
            label[cl] = g
        self.groups = [(row, cl) for row, (_, cl) in zip(rows, groups, strict=True)]
        self.models = [rows[0]] * n if len(rows) == 1 else [rows[g] for g in label.tolist()]
        counts = (1, q, 1, 1)
        cols = ((0, 1), (1, 1 + q), (1 + q, 2 + q), (2 + q, 3 + q))
        self.rand: list[tuple[int, int, int, int, np.ndarray]] = []  # a, b, c, offset, scale
        self.const: list[tuple[int, int, np.ndarray]] = []
        self.vector = True
        off = 0
        for k in range(4):
            col = [row[k] for row in rows]
            a_, b_ = cols[k]
            if all(isinstance(m, Constant) for m in col):
                self.const.append((a_, b_, np.array([float(m.value) for m in col])[label]))
            elif all(isinstance(m, Exponential) for m in col):
                self.rand.append((a_, b_, counts[k], off,
                                  np.array([1.0 / m.rate for m in col])[label]))
                off += B * counts[k]
            else:
                self.vector = False
        self.per_block = off

    def thinks(self) -> bool:
        """Whether some client's think time is not the constant 0 (read from the groups of
        clients, not per client)."""
        return not all(isinstance(row[3], Constant) and float(row[3].value) == 0.0
                       for row, _ in self.groups)

    def supports_event(self) -> bool:
        """Whether every client's four delay models are ``Constant`` or ``Exponential``."""
        return all(isinstance(m, (Constant, Exponential)) for row, _ in self.groups
                   for m in row)

    def params(self) -> tuple[np.ndarray, np.ndarray]:
        """``(const, value)`` ``(n, 4)``: whether client ``i``'s delay kind ``k``
        (download, compute, upload, think) is a ``Constant``, and its value or else its
        scale ``1 / rate``; one row per group of clients, laid out by group."""
        const = np.empty((self.n, 4), dtype=bool)
        value = np.empty((self.n, 4), dtype=np.float64)
        for row, cl in self.groups:
            const[cl] = [isinstance(m, Constant) for m in row]
            value[cl] = [float(m.value) if isinstance(m, Constant) else 1.0 / m.rate
                         for m in row]
        return const, value

    def draw(self, gens: list, idx: np.ndarray, blocks: int,
             clients: np.ndarray | None = None) -> np.ndarray:
        """``(m, blocks * B, q + 3)`` delays of the streams ``gens[idx]`` (``vector`` plans),
        those of clients ``clients`` (default ``idx``)."""
        m, B, w = idx.size, self.B, self.q + 3
        cl = idx if clients is None else clients
        out = np.empty((m, blocks, B, w))
        if self.per_block:
            z = np.empty((m, blocks * self.per_block))
            for r, i in enumerate(idx.tolist()):
                gens[i].standard_exponential(out=z[r])
            z = z.reshape(m, blocks, self.per_block)
            for a_, b_, c, off, scale in self.rand:
                np.multiply(z[:, :, off:off + B * c].reshape(m, blocks, B, c),
                            scale[cl][:, None, None, None], out=out[:, :, :, a_:b_])
        for a_, b_, val in self.const:
            out[:, :, :, a_:b_] = val[cl][:, None, None, None]
        return out.reshape(m, blocks * B, w)

