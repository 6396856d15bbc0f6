"""Pieces shared by the engine's modes: delay blocks, the server-step log, staleness bounds.

* :class:`DelaySampler` -- a client's delays, drawn from its ``delays`` stream in blocks of
  ``BLOCK`` rounds (download, compute, upload, think, in that order; constant models draw
  nothing).  The fast engine and the per-step reference engine share it, so both consume
  the stream identically.  Buffers are capped at ``BLOCK`` rounds (a few hundred bytes);
  clients with the same models share a :class:`DelaySpec` (and the constant columns).
* :func:`lean_bitgen` -- a client stream of :mod:`fedsim.rng` (the same bits) held as a
  bare ``PCG64`` that does not keep its ``SeedSequence`` alive (memory per client).
* :class:`StepLog` -- appends one server step to compact ``array.array`` columns, checks
  divergence (``||w|| > 1e150`` or non-finite), records metrics every ``record.every``
  steps, drives the progress bar and stops the run at the step horizon.
* :func:`physical_staleness_bound` -- the provable bound on ``t - Omega(t)`` derived from
  the delays' supports (derivation in the function's docstring).
* :func:`at` -- a SimPy event firing at an absolute simulated time.
"""

from __future__ import annotations

import math
import sys
from array import array
from heapq import heappush
from typing import Any

import numpy as np
import simpy
from numpy.random.bit_generator import ISeedSequence
from simpy.events import NORMAL, URGENT

from fedsim.rng import PURPOSES, Streams, replicate_seedseq
from fedsim.trace import DIVERGE_NORM, KINDS, Recorder, Trace

__all__ = ["DelaySampler", "DelaySpec", "lean_bitgen", "StepLog", "physical_staleness_bound",
           "at", "think_pause", "BLOCK", "cycle_support"]

BLOCK = 16
_DIV2 = DIVERGE_NORM * DIVERGE_NORM
_new_event = object.__new__
_dot = np.dot
_K_UPLOAD = KINDS.index("upload")


def at(env: simpy.Environment, t: float, priority: int = NORMAL) -> simpy.Event:
    """An already-triggered event processed at absolute time ``t >= env.now``.

    ``env.timeout(t - now)`` would fire at ``now + (t - now)``, which can differ from ``t``
    in the last bit; the engine computes arrival times by the same sequence of additions
    as the per-step reference (``((now + dl) + c_1) + ...``) and schedules them exactly.
    This uses SimPy's documented event queue layout ``(time, priority, eid, event)``.
    """
    ev = _new_event(simpy.Event)
    ev.env = env
    ev.callbacks = []
    ev._ok = True
    ev._value = None
    heappush(env._queue, (t, priority, next(env._eid), ev))
    return ev


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
        """The next block (the same draws as :meth:`block`) as ``(dcu, think)``:
        ``dcu`` = download, compute and upload columns in one array (offsets ``0``,
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


class StepLog:
    """Server-step columns, metrics, divergence, progress and the step horizon."""

    def __init__(self, rec: Recorder, steps: int | None, w0: np.ndarray, progress: bool,
                 stop: Any = None) -> None:
        self.rec = rec
        self.T = steps if steps is not None else sys.maxsize
        self.t = 0
        self.time = array("d", [0.0])
        self.kind = array("b", [0])
        self.client = array("q", [-1])
        self.sst = array("q", [0])
        self.stt = array("d", [0.0])
        self.fill = array("q", [0])
        self.diverged: int | None = None
        self.stopped = False
        self.stop_cb = stop
        self.every = rec.every
        self.pbar = None
        self.pstride = sys.maxsize
        if progress:
            from tqdm import tqdm

            self.pbar = tqdm(total=steps, file=sys.stderr, unit="step", mininterval=0.5,
                             leave=False)
            self.pstride = max(1, (steps or 100000) // 200)
        self.next_metric = self.every
        self.next_prog = self.pstride
        self.next_hook = min(self.next_metric, self.next_prog)
        self.ergodic = rec.ergodic
        self.lazy = False
        self._app = (self.time.append, self.kind.append, self.client.append, self.sst.append,
                     self.stt.append, self.fill.append)
        rec.metrics_at(0, w0)
        if rec.ergodic:
            np.add(rec.wsum, w0, out=rec.wsum)

    def log(self, now: float, kind: int, client: int, sst: int, stt: float, fill: int,
            w: np.ndarray) -> bool:
        """Append step ``t+1`` (model ``w`` after it); True when the run must stop."""
        t = self.t + 1
        self.t = t
        a = self._app
        a[0](now)
        a[1](kind)
        a[2](client)
        a[3](sst)
        a[4](stt)
        a[5](fill)
        if not _dot(w, w) <= _DIV2:
            self.diverged = t
            self.halt()
            return True
        if t >= self.next_hook:
            self.hook(t, w)
        if self.ergodic:
            np.add(self.rec.wsum, w, out=self.rec.wsum)
        if t >= self.T:
            self.halt()
            return True
        return False

    def fast_columns(self) -> tuple[Any, Any, Any, Any]:
        """Switch to the lean FedAsync layout; returns the appenders of
        ``(time, client, omega, t_read)``.

        Every step is then an ``"upload"`` of one update whose staleness columns
        ``t - 1 - omega`` and ``time - t_read`` are computed at :meth:`finish`; the caller
        does the rest of :meth:`log` itself (``fedsim.engine._AsyncRun._start_fedasync``).
        """
        self.lazy = True
        self.omega = array("q", [0])
        self.t_read = array("d", [0.0])
        return self.time.append, self.client.append, self.omega.append, self.t_read.append

    def hook(self, t: int, w: np.ndarray) -> None:
        """Metrics / progress at step ``t`` (call when ``t >= next_hook``)."""
        if t >= self.next_metric:
            rec = self.rec
            if rec.ergodic:
                rec.metrics_at(t, w)
            else:  # Recorder.metrics_at, inlined for the hot path
                rec.m_steps.append(t)
                for fn, app in rec._pairs:
                    app(fn(w))
            self.next_metric = t + self.every
        if t >= self.next_prog:
            self.pbar.update(t - self.pbar.n)
            self.next_prog = t + self.pstride
        self.next_hook = min(self.next_metric, self.next_prog)

    def halt(self) -> None:
        """Stop the run (idempotent)."""
        if not self.stopped:
            self.stopped = True
            if self.stop_cb is not None:
                self.stop_cb()

    def finish(self, w: np.ndarray, sim_time: float, bound: float) -> Trace:
        """Build the Trace (closes the progress bar)."""
        rec = self.rec
        if self.lazy:
            m = len(self.time)
            om = np.frombuffer(self.omega, dtype=np.int64)
            tr = np.frombuffer(self.t_read, dtype=np.float64)
            tm = np.frombuffer(self.time, dtype=np.float64)
            self.sst = array("q", (np.arange(m, dtype=np.int64) - 1 - om).clip(0).tobytes())
            self.stt = array("d", (tm - tr).tobytes())
            self.kind = array("b", np.full(m, _K_UPLOAD, dtype=np.int8).tobytes())
            self.fill = array("q", np.ones(m, dtype=np.int64).tobytes())
            self.kind[0], self.fill[0] = 0, 0
        rec.time = np.frombuffer(self.time, dtype=np.float64).copy()
        rec.kind = np.frombuffer(self.kind, dtype=np.int8).copy()
        rec.client = np.frombuffer(self.client, dtype=np.int64).copy()
        rec.st_steps = np.frombuffer(self.sst, dtype=np.int64).copy()
        rec.st_time = np.frombuffer(self.stt, dtype=np.float64).copy()
        rec.fill = np.frombuffer(self.fill, dtype=np.int64).copy()
        if self.pbar is not None:
            self.pbar.update(self.t - self.pbar.n)
            self.pbar.close()
        if self.diverged is not None and rec.m_steps[-1] != self.t:
            with np.errstate(all="ignore"):
                rec.metrics_at(self.t, w)
        return rec.finish(self.t, w, sim_time, self.diverged, bound)


def cycle_support(d: dict[str, Any], steps: int, read_at: str) -> tuple[float, float]:
    """``(c_min, W)``: the shortest upload-to-upload cycle and the longest read-to-upload window.

    ``c_min = lo(think) + lo(download) + q lo(compute) + lo(upload)`` and
    ``W = hi(download) + q hi(compute) + hi(upload)`` (``read_at="request"``) or
    ``q hi(compute) + hi(upload)`` (``"arrival"``), with ``q`` the compute draws per round.
    """
    lo = d["think"].lower + d["download"].lower + steps * d["compute"].lower + d["upload"].lower
    hi = steps * d["compute"].upper + d["upload"].upper
    if read_at == "request":
        hi += d["download"].upper
    return float(lo), float(hi)


def physical_staleness_bound(delays_cfg: Any, n: int, steps: int, per_step: bool,
                             count: int | None) -> float:
    """Provable ``sup_t (t - Omega(t))`` for the physical asynchronous model.

    Derivation.  Client j uploads at times ``u_1 < u_2 < ...`` with
    ``u_{k+1} - u_k >= c_min_j`` (a whole think + download + compute + upload cycle lies
    between two uploads of j).  An upload of client i at ``t_a`` was computed from the model
    read at ``t_r`` with ``t_a - t_r <= W_i`` (:func:`cycle_support`), and i itself does not
    upload in between.  A closed interval of length ``W_i`` holds at most
    ``floor(W_i / c_min_j) + 1`` uploads of j (the +1 covers uploads at both ends, i.e. ties
    resolved either way).  Hence the number of server steps applied between the read and
    i's upload is at most ``U_i = sum_{j != i} (floor(W_i / c_min_j) + 1)`` and FedAsync's
    staleness is at most ``max_i U_i``.  With a count trigger of ``K`` uploads (FedBuff,
    AS-FedAvg), the first aggregation after the read may need a single new upload (the
    buffer can already hold K-1), each later one K, and i's update is in the very next
    aggregation after it arrives, so the staleness is at most ``max_i ceil(U_i / K)``.
    Unbounded supports (``upper = inf`` or ``c_min_j = 0``) give ``inf``; timer triggers give
    ``inf``.
    """
    q = steps if per_step else 1
    cmin, win = [], []
    for i in range(n):
        c, w = cycle_support(delays_cfg.for_client(i), q, delays_cfg.read_at)
        cmin.append(c)
        win.append(w)
    if any(c <= 0 for c in cmin) or any(not math.isfinite(w) for w in win):
        return math.inf
    if count is None:
        return math.inf
    cm = np.asarray(cmin)
    wi = np.asarray(win)
    # The simulated clock is a float64 running sum, so realised gaps can fall below the
    # support minimum by ~n_cycles * 1e-16 relative; the 1e-9 slack covers ~1e7 cycles of
    # one client within a single window (beyond that the bound may be short by one; the
    # validation layer also checks measured staleness against it).
    f = np.floor(wi[:, None] / cm[None, :] * (1.0 + 1e-9)) + 1.0
    np.fill_diagonal(f, 0.0)
    u = f.sum(axis=1)
    best = float(np.max(np.ceil(u / count)))
    return float(best)


def think_pause(env: simpy.Environment, rec: Any, idle: list[int], n: int, t: float,
                th: float):
    """Generator: a client thinks from ``t`` to ``t + th`` and is not busy meanwhile.

    ``idle[0]`` counts idle clients; the busy fraction ``(n - idle)/n`` is recorded at both
    ends.  Use as ``yield from think_pause(...)`` inside a client process.
    """
    idle[0] += 1
    rec.busy(t, (n - idle[0]) / n)
    yield at(env, t + th)
    idle[0] -= 1
    rec.busy(t + th, (n - idle[0]) / n)


def urgent_at(env: simpy.Environment, t: float) -> simpy.Event:
    """An event at absolute time ``t`` processed before every normal event at ``t``."""
    return at(env, t, URGENT)
