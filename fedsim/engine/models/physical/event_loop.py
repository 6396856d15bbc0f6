"""The FedAsync timeline by a compiled copy of the SimPy engine's event loop (no SimPy).

For a scenario whose delay models are all ``Constant`` or ``Exponential``
(:attr:`DelayPlan.vector <fedsim.rng.delays.DelayPlan>`), this module
runs the physical model's event loop -- the clients as callbacks on one heap, the order of
the SimPy writer :class:`~fedsim.engine.models.physical.simpy_writer.AsyncRun` --
in compiled code, and emits the same
:class:`~fedsim.engine.models.physical.uploads.TimelineChunk` rows as
:class:`~fedsim.engine.models.physical.merge.FedAsyncTimeline` (the vectorised merge, which
serves every other delay model).  No model values are involved.

Contract with the SimPy writer, event by event
-----------------------------------------------------------------
*Order.*  SimPy processes events by ``(time, priority, eid)``; all client events are
``NORMAL`` and ``eid`` counts the pushes.  Each client has exactly one pending event, so
the heap here holds ``n`` entries ``(time, eid, client)`` and every processed event pushes
the client's next one, with the next ``eid``: the processing order, ties included, is the
engine's.  The roots are pushed by ``begin`` at ``t0 = 0`` in client order.

*Delays.*  Client ``i`` draws from ``fedsim.rng.Streams(seed, r).client(i, "delays")``
(a PCG64 state row, :mod:`fedsim.rng.streams`) in blocks of ``B = max(4, 16 //
q)`` rounds: download ``B``, compute ``B q``, upload ``B``, think ``B`` numbers, in this
order, ``scale * standard_exponential()`` each (NumPy's ``exponential(scale, size)``,
``scale = 1 / rate``) or nothing for a ``Constant``; the layout of
``DelaySampler.block_flat``.

*Cycle.*  ``begin(i, t)`` (a new round; a new block when the current one is used up):
with ``read_at = "arrival"`` the read is the download end at ``t + dl``; else the read is
at ``t`` and ``schedule`` follows at once.  ``schedule`` records ``omega`` (the uploads
processed so far) and the read time and pushes the upload at ``((t + dl) + c_1 + ... +
c_q) + ul`` (``t + dl`` the read with ``arrival``).  An upload is a server step; with a
think time ``th != 0`` it starts a think (busy event +1) that ends at ``t + th`` (busy
event -1, then ``begin``); with ``th == 0`` the next round begins at the upload.

*Stop.*  Events at ``time >= horizon.time`` are never processed (the engine's urgent halt
at the horizon comes first); the step horizon is the consumer's.  :meth:`take` stops just
before the upload after the ``k`` asked for, so the busy events it returns are those
processed before that upload.

The loop allocates nothing, so it is compiled without reference counting
(``jit(nrt=False)``: each count is an atomic operation, and they cost more than the event).
"""

from __future__ import annotations

import numpy as np

from fedsim.config import Scenario
from fedsim.engine.models.physical.uploads import TimelineChunk
from fedsim.jit import jit
from fedsim.rng.delays import DelayPlan
from fedsim.rng.streams import client_states, stream

__all__ = ["EventTimeline", "supports_plan", "delay_params", "start_loop", "advance_loop",
           "block_width", "think_start"]

_READ, _UPLOAD, _THINK = 0, 1, 2
# int64 state words: steps done, next eid, done flag
_STEPS, _EID, _DONE = 0, 1, 2


def supports_plan(plan: DelayPlan) -> bool:
    """Whether every client's four delay models are ``Constant`` or ``Exponential``."""
    return plan.supports_event()


def delay_params(plan: DelayPlan) -> tuple[np.ndarray, np.ndarray]:
    """``(const, value)`` ``(n, 4)``: whether client ``i``'s delay kind ``k`` (download,
    compute, upload, think) is a ``Constant``, and its value or else its scale ``1 /
    rate`` (shared by all replicates of a scenario)."""
    return plan.params()


def block_width(kconst: np.ndarray, q: int, B: int) -> int:
    """Floats per client of the loop's block: ``B (q + 3)``, or ``B (q + 2)`` when every
    client's think time is a ``Constant`` (its column is then not laid out: the think
    time is the constant, and a constant draws nothing, so the draws are the same)."""
    return B * (q + 2) if bool(np.all(kconst[:, 3])) else B * (q + 3)


def think_start(kconst: np.ndarray, kval: np.ndarray) -> np.ndarray:
    """The clients' next think times before their first round: the constant think times
    (read with a narrow block, :func:`block_width`), else 0 (overwritten by every round)."""
    return np.where(kconst[:, 3], kval[:, 3], 0.0).astype(np.float64)


@jit(inline=True)
def _sift_down(ht, he, hc, pos):
    """Restore the heap order ``(time, eid)`` below ``pos`` (the hole moves down, the
    entry is written once)."""
    n = ht.shape[0]
    t = ht[pos]
    e = he[pos]
    c = hc[pos]
    while True:
        child = 2 * pos + 1
        if child >= n:
            break
        right = child + 1
        if right < n:
            tr = ht[right]
            tl = ht[child]
            if tr < tl or (tr == tl and he[right] < he[child]):
                child = right
        tc = ht[child]
        if tc < t or (tc == t and he[child] < e):
            ht[pos] = tc
            he[pos] = he[child]
            hc[pos] = hc[child]
            pos = child
        else:
            break
    ht[pos] = t
    he[pos] = e
    hc[pos] = c
    return 0


@jit(inline=True)
def _refill(c, blk, kconst, kval, states, q, B):
    """The next block of client ``c`` (module docstring, *Delays*): cycle layout
    ``dl[B] | c[B q] | ul[B] | th[B]`` (``th`` left out of a narrow block,
    :func:`block_width`)."""
    gen = stream(states, c)
    off = 0
    for kind in range(4):
        cnt = B * q if kind == 1 else B
        if off + cnt > blk.shape[1]:  # narrow block: the think column is left out
            break
        if kconst[c, kind]:
            v = kval[c, kind]
            for m in range(cnt):
                blk[c, off + m] = v
        else:
            s = kval[c, kind]
            for m in range(cnt):
                blk[c, off + m] = s * gen.standard_exponential()
        off += cnt
    return 0


@jit(inline=True)
def _schedule(c, t_read, t, j, steps, blk, omega, tread, thnext, jn, kind, q, B):
    """Read at ``t_read`` (``omega`` = ``steps``); returns the upload time (docstring)."""
    omega[c] = steps
    tread[c] = t_read
    if q == 1:
        t = t + blk[c, B + j]
    else:
        for m in range(B + j * q, B + j * q + q):
            t = t + blk[c, m]
    t = t + blk[c, B * (1 + q) + j]
    if blk.shape[1] > B * (2 + q):
        thnext[c] = blk[c, B * (2 + q) + j]
    jn[c] = j + 1
    kind[c] = _UPLOAD
    return t


@jit(inline=True)
def _begin(c, t, arrival, steps, blk, omega, tread, thnext, jn, kind, kconst, kval, states,
           q, B):
    """A new round of ``c`` at ``t``; returns the time of its next event."""
    j = jn[c]
    if j == B:
        _refill(c, blk, kconst, kval, states, q, B)
        j = 0
    if arrival:
        jn[c] = j
        kind[c] = _READ
        return t + blk[c, j]
    return _schedule(c, t, t + blk[c, j], j, steps, blk, omega, tread, thnext, jn, kind, q, B)


@jit(nrt=False)
def start_loop(arrival, st, ht, he, hc, blk, omega, tread, thnext, jn, kind, kconst, kval, states,
           q, B):
    """The roots: ``begin(i, 0)`` for every client in order, then heapify."""
    n = ht.shape[0]
    for c in range(n):
        ht[c] = _begin(c, 0.0, arrival, 0, blk, omega, tread, thnext, jn, kind, kconst, kval,
                       states, q, B)
        he[c] = st[_EID]
        hc[c] = c
        st[_EID] += 1
    for pos in range(n // 2 - 1, -1, -1):
        _sift_down(ht, he, hc, pos)
    return 0


@jit(nrt=False)
def advance_loop(k, H, arrival, st, ht, he, hc, blk, omega, tread, thnext, jn, kind, gate, rnd,
             kconst, kval, states, q, B, up_t, up_c, up_o, up_r, up_n, b_t, b_d, b_g, b_b):
    """Process events until ``k`` uploads are emitted and the next event is an upload, or
    the time horizon; returns (uploads, busy events) written into the ``up_*``/``b_*``
    arrays."""
    nu = 0
    nb = 0
    steps = st[_STEPS]  # kept in registers, written back at the end
    eid = st[_EID]
    while True:
        t = ht[0]
        c = hc[0]
        if not t < H:
            st[_DONE] = 1
            break
        kd = kind[c]
        if kd == _UPLOAD and nu == k:
            break
        if kd == _READ:  # download done: read now
            nt = _schedule(c, t, t, jn[c], steps, blk, omega, tread, thnext, jn, kind, q, B)
        elif kd == _UPLOAD:
            steps += 1
            up_t[nu] = t
            up_c[nu] = c
            up_o[nu] = omega[c]
            up_r[nu] = tread[c]
            up_n[nu] = rnd[c]
            rnd[c] += 1
            nu += 1
            th = thnext[c]
            if th != 0.0:
                b_t[nb] = t
                b_d[nb] = 1
                b_g[nb] = steps
                b_b[nb] = steps
                nb += 1
                gate[c] = steps
                kind[c] = _THINK
                nt = t + th
            else:
                nt = _begin(c, t, arrival, steps, blk, omega, tread, thnext, jn, kind, kconst,
                            kval, states, q, B)
        else:  # think end
            b_t[nb] = t
            b_d[nb] = -1
            b_g[nb] = gate[c]
            b_b[nb] = steps
            nb += 1
            nt = _begin(c, t, arrival, steps, blk, omega, tread, thnext, jn, kind, kconst, kval,
                        states, q, B)
        ht[0] = nt
        he[0] = eid
        eid += 1
        _sift_down(ht, he, hc, 0)
    st[_STEPS] = steps
    st[_EID] = eid
    return nu, nb


class EventTimeline:
    """The timeline of one replicate by the compiled event loop (module docstring); the
    interface of :class:`~fedsim.engine.models.physical.merge.FedAsyncTimeline` (``take``,
    ``oldest_read``, ``done``).

    ``states``: the clients' ``delays`` stream rows ``(n, 6)`` (default: built here; they
    are advanced in place); ``params``: :func:`delay_params` of ``plan``.
    """

    def __init__(self, scenario: Scenario, replicate: int, *, plan: DelayPlan | None = None,
                 states: np.ndarray | None = None,
                 params: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        self.n = n = scenario.problem.n
        self.plan = plan = DelayPlan(scenario) if plan is None else plan
        if states is None:
            states = client_states(scenario.seed, [replicate], n, "delays")[0]
        self.states = states
        self.q, self.B = q, B = plan.q, plan.B
        self.arrival = scenario.delays.read_at == "arrival"
        self.H = float(scenario.horizon.time)
        self.kconst, self.kval = delay_params(plan) if params is None else params
        self.st = np.zeros(3, dtype=np.int64)
        self.ht, self.he, self.hc = np.empty(n), np.empty(n, np.int64), np.empty(n, np.int64)
        self.blk = np.empty((n, block_width(self.kconst, q, B)))
        self.omega = np.zeros(n, dtype=np.int64)
        self.tread = np.zeros(n)
        self.thnext = think_start(self.kconst, self.kval)
        self.jn = np.full(n, B, dtype=np.int64)
        self.kind = np.zeros(n, dtype=np.int64)
        self.gate = np.zeros(n, dtype=np.int64)
        self.rnd = np.zeros(n, dtype=np.int64)
        start_loop(self.arrival, self.st, self.ht, self.he, self.hc, self.blk, self.omega,
               self.tread, self.thnext, self.jn, self.kind, self.kconst, self.kval,
               self.states, q, B)

    @property
    def done(self) -> bool:
        """Whether the time horizon has been reached."""
        return bool(self.st[_DONE])

    def oldest_read(self) -> int:
        """A lower bound on ``omega`` of every upload not yet taken."""
        pend = self.kind == _UPLOAD
        lo = int(self.st[_STEPS])
        return min(lo, int(self.omega[pend].min())) if pend.any() else lo

    def take(self, k: int) -> TimelineChunk:
        """The next ``k`` server steps (fewer when the time horizon ends the run)."""
        k = int(k)
        n = self.n
        step0 = int(self.st[_STEPS])
        up_t, up_r = np.empty(k), np.empty(k)
        up_c, up_o, up_n = (np.empty(k, np.int64) for _ in range(3))
        m = 2 * k + n + 1
        b_t = np.empty(m)
        b_d, b_g, b_b = (np.empty(m, np.int64) for _ in range(3))
        if self.done:
            nu = nb = 0
        else:
            nu, nb = advance_loop(k, self.H, self.arrival, self.st, self.ht, self.he, self.hc,
                              self.blk, self.omega, self.tread, self.thnext, self.jn,
                              self.kind, self.gate, self.rnd, self.kconst, self.kval,
                              self.states, self.q, self.B, up_t, up_c, up_o, up_r, up_n,
                              b_t, b_d, b_g, b_b)
        return TimelineChunk(step0, up_t[:nu], up_c[:nu], up_o[:nu], up_r[:nu], b_t[:nb],
                             b_d[:nb], b_g[:nb], b_b[:nb], up_n[:nu])
