"""The event tables of AREA's Appendix A iterate model (no SimPy, no model values).

Per replicate, client i's event times are the running sums ``t = t + c`` of the first
compute draw of each of its rounds, drawn from ``Streams(seed, r).client(i, "delays")`` in
the engine's blocks (:mod:`fedsim.engine.replay.delay_streams`); the timer's are the
running sums of ``Streams(seed, r).server("timer")``'s ``exponential(1/rate)`` draws (the
model's Poisson aggregation timer).  :func:`merge_events` (compiled) merges them by time
into the table of the first K events: time, kind (``K_CLIENT``/``K_SERVER``), client (-1
for the server), staleness in steps and in time since the client's previous event (the
model it computed from was read then; the first event reads step 0 at time 0), buffer fill
(client events since the last aggregation, counting this one; a server event: the count it
aggregates).  A replicate whose first K+1 merged times hold a tie (probability 0 under
continuous delays, but SimPy's order then depends on event ids) is flagged (``tie``) and
run by ``fedsim.engine.run`` instead, so every table used is the engine's bit for bit.

The draws.  The iterate model's delays are exponential compute cycles and zero
communication (a ``vector`` :class:`DelayPlan`), so the streams run compiled from their
state rows (:mod:`fedsim.engine.replay.streams`: NumPy's ``PCG64`` and
``standard_exponential`` bit for bit; a block draws ``plan.per_block`` numbers and round
``j``'s compute delay is entry ``off + j q`` times ``1/rate``, as ``DelayPlan.draw``).
``compiled=False`` (and any plan that is not ``vector``) draws through NumPy generators and
:class:`~fedsim.engine.replay.delay_streams.ClientDelayStream` instead: the reference the
tests compare with.  Either way the merge asks for more blocks until every source has an
event after the (K+1)-th.

Tables are ``(R, K + 1)`` arrays (:class:`AreaTables`), entry 0 of each row the initial
record of a Trace (time 0, kind 0, client -1, zeros), so a replicate's columns are its
row's first ``T + 1`` entries.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from fedsim.config import Scenario
from fedsim.engine.replay.delay_streams import ClientDelayStream, DelayPlan
from fedsim.engine.replay.seeding import client_bitgens
from fedsim.engine.replay.streams import client_states, server_states, stream
from fedsim.engine.replay.table import EventTable
from fedsim.jit import jit
from fedsim.rng import Streams
from fedsim.trace import KINDS

__all__ = ["AreaTables", "area_tables", "event_tables", "merge_events", "K_CLIENT",
           "K_SERVER"]

K_CLIENT = KINDS.index("client")
K_SERVER = KINDS.index("server")


class AreaTables:
    """The first ``K`` events of ``R`` replicates, ``(R, K + 1)`` arrays with the initial row
    first: ``time``, ``kind``, ``client``, ``stale_steps``, ``stale_time``, ``fill``;
    ``tie`` (R,): equal times among the first K+1 events (the replay defers to the engine)."""

    __slots__ = ("time", "kind", "client", "stale_steps", "stale_time", "fill", "tie")

    def __init__(self, R: int, K: int) -> None:
        self.time = np.zeros((R, K + 1))
        self.kind = np.zeros((R, K + 1), dtype=np.int8)
        self.client = np.full((R, K + 1), -1, dtype=np.int64)
        self.stale_steps = np.zeros((R, K + 1), dtype=np.int64)
        self.stale_time = np.zeros((R, K + 1))
        self.fill = np.zeros((R, K + 1), dtype=np.int64)
        self.tie = np.zeros(R, dtype=bool)


@jit
def merge_events(C, nc, S, ns, K, time, kind, client, st_steps, st_time, fill, k_client,
                 k_server):
    """Merge client ``i``'s delays ``C[i, :nc[i]]`` and the timer's ``S[:ns]`` (module
    docstring) into entries ``1..K`` of the table rows.  Returns 1 (done), 2 (done, with a
    tie among the first K+1 times), -1 (some client needs more draws) or -2 (the timer)."""
    n = C.shape[0]
    nxt = np.empty(n + 1)
    used = np.zeros(n + 1, dtype=np.int64)
    prev_step = np.ones(n, dtype=np.int64)
    prev_t = np.zeros(n)
    for i in range(n):
        if nc[i] == 0:
            return -1
        nxt[i] = C[i, 0]
        used[i] = 1
    if ns == 0:
        return -2
    nxt[n] = S[0]
    used[n] = 1
    pending = 0
    last = 0.0
    tie = False
    for j in range(K + 1):
        src = 0
        tm = nxt[0]
        for s in range(1, n + 1):
            if nxt[s] < tm:
                tm = nxt[s]
                src = s
        if j > 0 and tm == last:
            tie = True
        last = tm
        if j == K:
            break
        e = j + 1
        time[e] = tm
        if src < n:
            kind[e] = k_client
            client[e] = src
            st_steps[e] = e - prev_step[src]
            st_time[e] = tm - prev_t[src]
            prev_step[src] = e
            prev_t[src] = tm
            pending += 1
            fill[e] = pending
            if used[src] == nc[src]:
                return -1
            nxt[src] = tm + C[src, used[src]]
        else:
            kind[e] = k_server
            client[e] = -1
            st_steps[e] = 0
            st_time[e] = 0.0
            fill[e] = pending
            pending = 0
            if used[n] == ns:
                return -2
            nxt[n] = tm + S[used[n]]
        used[src] += 1
    return 2 if tie else 1


@jit
def _draw_blocks(states, blocks, per_block, off, q, B, scale, C, start):
    """``blocks`` more blocks of every client stream (``states`` (n, WIDTH), stream rows):
    round ``j`` of a block gets ``z[off + j q] * scale[i]`` into ``C[i, start + ...]``."""
    n = states.shape[0]
    z = np.empty(per_block)
    for i in range(n):
        gen = stream(states, i)
        col = start
        for _ in range(blocks):
            for k in range(per_block):
                z[k] = gen.standard_exponential()
            for j in range(B):
                C[i, col] = z[off + j * q] * scale[i]
                col += 1
    return 0


@jit
def _draw_timer(states, scale, S, start):
    """Timer delays ``S[start:]``: ``scale * standard_exponential`` (NumPy's
    ``exponential(scale)``) from the stream row ``states[0]``."""
    gen = stream(states, 0)
    for k in range(start, S.shape[0]):
        S[k] = scale * gen.standard_exponential()
    return 0


def _compute_column(plan: DelayPlan) -> tuple[int, np.ndarray] | None:
    """``(offset, 1/rate per client)`` of the compute delays in a vector plan's blocks, or
    ``None`` when compute is not drawn (constant)."""
    for a_, _b, _c, off, scale in plan.rand:
        if a_ == 1:
            return off, np.ascontiguousarray(scale, dtype=np.float64)
    return None


class _CompiledDraws:
    """One replicate's streams as state rows, drawn compiled
    (:mod:`fedsim.engine.replay.streams`)."""

    def __init__(self, cstate: np.ndarray, tstate: np.ndarray, plan: DelayPlan,
                 col: tuple[int, np.ndarray], q: int, timer: float) -> None:
        self.cstate, self.tstate = cstate, tstate
        self.plan, self.col, self.q, self.timer = plan, col, q, timer

    def clients(self, C: np.ndarray, start: int, blocks: int) -> None:
        p = self.plan
        _draw_blocks(self.cstate, blocks, p.per_block, self.col[0], self.q, p.B, self.col[1], C,
                     start)

    def server(self, S: np.ndarray, start: int) -> None:
        _draw_timer(self.tstate, self.timer, S, start)


class _StreamDraws:
    """One replicate's streams as NumPy generators (:class:`ClientDelayStream`)."""

    def __init__(self, scenario: Scenario, replicate: int, bitgens: Sequence, q: int,
                 timer: float) -> None:
        dc = scenario.delays
        self.streams = [ClientDelayStream(dc.for_client(i), np.random.Generator(bg), q)
                        for i, bg in enumerate(bitgens)]
        self.gen = Streams(scenario.seed, replicate).server("timer")
        self.timer = timer

    def clients(self, C: np.ndarray, start: int, blocks: int) -> None:
        for i, s in enumerate(self.streams):
            C[i, start:] = s.draw(blocks)[:, 1]

    def server(self, S: np.ndarray, start: int) -> None:
        S[start:] = self.gen.exponential(self.timer, size=S.size - start)


def _fill(out: AreaTables, k: int, draws, n: int, K: int, B: int,
          shares: tuple[float, float]) -> None:
    """Row ``k`` of ``out``: :func:`merge_events` on ``draws``, grown until complete (every
    client's draws doubled at once, so all streams stay in step).  ``shares``: the largest
    client's and the timer's expected fractions of the events (the first draws cover 1.5
    times their share of K; the numbers drawn do not depend on it)."""
    first = int(1.5 * K * shares[0]) + 8
    C = np.empty((n, -(-first // B) * B))
    draws.clients(C, 0, C.shape[1] // B)
    S = np.empty(int(1.5 * K * shares[1]) + 8)
    draws.server(S, 0)
    nc = np.full(n, C.shape[1], dtype=np.int64)
    while True:
        st = merge_events(C, nc, S, S.size, K, out.time[k], out.kind[k], out.client[k],
                          out.stale_steps[k], out.stale_time[k], out.fill[k], K_CLIENT,
                          K_SERVER)
        if st > 0:
            out.tie[k] = st == 2
            return
        if st == -1:
            m = C.shape[1]
            C = np.concatenate((C, np.empty((n, m))), axis=1)
            draws.clients(C, m, m // B)
            nc[:] = C.shape[1]
        else:
            m = S.size
            S = np.concatenate((S, np.empty(m)))
            draws.server(S, m)


def area_tables(scenario: Scenario, replicates: Sequence[int],
                plan: DelayPlan | None = None, compiled: bool = True) -> AreaTables:
    """The event tables of ``replicates`` (module docstring); ``compiled=False`` forces the
    :class:`ClientDelayStream` draws (the same numbers, for tests)."""
    reps = np.asarray([int(r) for r in replicates], dtype=np.int64)
    R, n = reps.size, scenario.problem.n
    K = int(scenario.horizon.steps)
    q = int(scenario.algorithm.get("M")) if scenario.delays.compute_per == "step" else 1
    if plan is None or plan.q != q:
        plan = DelayPlan(scenario, q=q)
    col = _compute_column(plan) if (plan.vector and compiled) else None
    timer = 1.0 / scenario.trigger.rate  # the iterate model's Poisson timer (config rule)
    rates = np.array([1.0 / scenario.delays.for_client(i)["compute"].mean for i in range(n)])
    total = float(rates.sum()) + scenario.trigger.rate
    shares = (float(rates.max()) / total, scenario.trigger.rate / total)
    out = AreaTables(R, K)
    if col is not None:
        cs = client_states(scenario.seed, reps, n, "delays")
        ts = server_states(scenario.seed, reps, "timer")
        for k in range(R):
            _fill(out, k, _CompiledDraws(cs[k], ts[k], plan, col, q, timer), n, K, plan.B,
                  shares)
    else:
        bgs = client_bitgens(scenario.seed, reps, n, "delays")
        for k in range(R):
            _fill(out, k, _StreamDraws(scenario, int(reps[k]), bgs[k], q, timer), n, K,
                  max(4, 16 // q), shares)
    return out


def event_tables(tabs: AreaTables, M: int, n: int, every: int) -> list[EventTable]:
    """Every row of ``tabs`` as the replay's :class:`~fedsim.engine.replay.table.EventTable`
    (REPLAY_SPEC 1), the one :func:`fedsim.engine.area.area_table` writes for the iterate
    model: a client event is one contribution reading version ``t - 1`` (``M`` local
    steps, ``c_stale`` its staleness column), a server event none; ``sim_time`` the time
    of the K-th event, the busy curve constant 1.  The columns of all rows are computed at
    once; each table's arrays are views of them."""
    R, K = tabs.time.shape[0], tabs.time.shape[1] - 1
    kind = tabs.kind[:, 1:]
    cl = kind == K_CLIENT
    ptr = np.zeros((R, K + 1), dtype=np.int64)
    np.cumsum(cl, axis=1, out=ptr[:, 1:])
    rows, before = np.nonzero(cl)  # row-major: each row's client events in step order
    before = before.astype(np.int64)
    client = tabs.client[:, 1:].astype(np.int32)
    c_client = client[cl]
    c_stale = tabs.stale_steps[:, 1:][cl]
    fill = tabs.fill[:, 1:].astype(np.int32)
    counts = np.bincount(rows * n + c_client, minlength=R * n).reshape(R, n)
    off = np.zeros(R + 1, dtype=np.int64)
    np.cumsum(ptr[:, K], out=off[1:])
    steps = np.full(int(ptr[:, K].max()) if R else 0, M, np.int32)
    ms = np.arange(0, K + 1, every, dtype=np.int64)
    if K % every:
        ms = np.append(ms, K)
    one, busy = np.zeros(1), np.ones(1)
    out = []
    for k in range(R):
        a, b = int(off[k]), int(off[k + 1])
        out.append(EventTable(
            time=tabs.time[k, 1:], kind=kind[k], client=client[k],
            staleness_steps=tabs.stale_steps[k, 1:], staleness_time=tabs.stale_time[k, 1:],
            buffer_fill=fill[k], ptr=ptr[k], c_client=c_client[a:b], c_read=before[a:b],
            c_steps=steps[:b - a], c_stale=c_stale[a:b], sim_time=float(tabs.time[k, K]),
            steps_done=K, client_updates=counts[k], concurrency_time=one,
            concurrency_busy=busy, metric_steps=ms, staleness_bound=math.inf,
            u_client=c_client[a:b], u_before=before[a:b]))
    return out
