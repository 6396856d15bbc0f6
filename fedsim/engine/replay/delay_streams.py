"""Per-client delay draws of a FedAsync physical scenario, in the engine's block order.

Part of :mod:`fedsim.engine.replay.timeline` (the merge of the clients' renewal streams
lives there; docs/INTERNALS.md 3).  :class:`ClientDelayStream` draws one client's delays;
:class:`DelayPlan` holds the delay models of a scenario's clients and, when every kind is
always ``Constant`` or always ``Exponential``, draws a generation of clients at once.

Contract with the engine (``fedsim.engine.run``, FedAsync physical)
-------------------------------------------------------------------
*Streams.*  Client ``i``'s delays come only from ``fedsim.rng.Streams(seed, r).client(i,
"delays")``.  They are drawn in blocks of ``B = max(4, 16 // q)`` rounds (``q = Q`` when
``delays.compute_per = "step"``, else 1), each block drawing, in this order,
``download.sample(rng, size=B)``, ``compute.sample(rng, size=B * q)``,
``upload.sample(rng, size=B)``, ``think.sample(rng, size=B)``; a ``Constant`` model draws
nothing.  Round ``j`` of a block uses entry ``j`` of each column (compute: entries
``j q .. j q + q - 1``).  When at most one of the four models is random and it is one of
``Exponential``, ``Uniform``, ``LogNormal``, ``Normal`` (one NumPy draw per number), several
blocks are drawn in one call: the numbers are the same.
"""

from __future__ import annotations

import numpy as np

from fedsim.config import Scenario
from fedsim.config.runtime import DELAY_KINDS
from fedsim.delays import Constant, Exponential, LogNormal, Normal, Uniform

__all__ = ["ClientDelayStream", "DelayPlan", "ENGINE_BLOCK"]

ENGINE_BLOCK = 16
_CONCAT_SAFE = (Exponential, Uniform, LogNormal, Normal)


class ClientDelayStream:
    """One client's delays in the engine's block order (module docstring, *Streams*)."""

    __slots__ = ("rng", "models", "q", "B", "fast", "expo")

    def __init__(self, models: dict, rng: np.random.Generator, q: int) -> None:
        self.rng = rng
        self.models = [models[k] for k in DELAY_KINDS]
        self.q = int(q)
        self.B = max(4, ENGINE_BLOCK // self.q)
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

    def __init__(self, scenario: Scenario, q: int | None = None) -> None:
        """``q``: compute draws per round (default: the algorithm's Q with
        ``compute_per = "step"``, else 1)."""
        a, dc = scenario.algorithm, scenario.delays
        self.n = n = scenario.problem.n
        if q is None:
            q = int(a.get("Q")) if dc.compute_per == "step" else 1
        self.q = q = int(q)
        self.B = B = max(4, ENGINE_BLOCK // q)
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

