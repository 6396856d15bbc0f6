"""The event tables of AREA's Appendix A iterate model (no SimPy, no model values).

Per replicate, client i's event times are the running sums ``t = t + c`` of the first
compute draw of each of its rounds, drawn from ``Streams(seed, r).client(i, "delays")`` in
the engine's blocks (:mod:`fedsim.rng.delays`); the timer's are the
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
state rows (:mod:`fedsim.rng.streams`: NumPy's ``PCG64`` and
``standard_exponential`` bit for bit; a block draws ``plan.per_block`` numbers and round
``j``'s compute delay is entry ``off + j q`` times ``1/rate``, as ``DelayPlan.draw``).
``compiled=False`` (and any plan that is not ``vector``) draws through NumPy generators and
:class:`~fedsim.rng.delays.ClientDelayStream` instead: the reference the
tests compare with.  Either way the merge asks for more blocks until every source has an
event after the (K+1)-th (:func:`fill_row`, one source: compiled, all replicates in one
call, or interpreted).

Tables are ``(R, K + 1)`` arrays (:class:`AreaTables`), entry 0 of each row the initial
record of a Trace (time 0, kind 0, client -1, zeros), so a replicate's columns are its
row's first ``T + 1`` entries; the same pass writes the replay's contribution columns
(:func:`contributions`), and :func:`event_tables` hands each row to the replay as an
:class:`~fedsim.engine.replay.table.EventTable` of views, with no per-replicate copy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from fedsim.config import Scenario
from fedsim.engine.replay.group import TableGroup
from fedsim.engine.replay.table import EventTable
from fedsim.jit import jit
from fedsim.rng import Streams
from fedsim.rng.delays import ClientDelayStream, DelayPlan
from fedsim.rng.seeding import client_bitgens
from fedsim.rng.streams import client_states, server_states, stream
from fedsim.trace import KINDS

__all__ = ["AreaTables", "area_tables", "event_tables", "merged_group", "metric_steps",
           "merge_events", "fill_row", "contributions", "K_CLIENT", "K_SERVER"]

K_CLIENT = KINDS.index("client")
K_SERVER = KINDS.index("server")


class AreaTables:
    """The first ``K`` events of ``R`` replicates of ``n`` clients, ``(R, K + 1)`` arrays
    with the initial row first: ``time``, ``kind``, ``client``, ``stale_steps``,
    ``stale_time``, ``fill``, and ``ptr`` (the contributions of steps ``1..t``); ``tie``
    (R,): equal times among the first K+1 events (the replay defers to the engine).  The
    contributions (:func:`contributions`), ``(R, K)`` arrays whose first ``ncon[k]``
    entries are row ``k``'s: ``c_client``, ``c_read``, ``c_stale``; ``counts`` ``(R, n)``
    the clients' events."""

    __slots__ = ("time", "kind", "client", "stale_steps", "stale_time", "fill", "tie", "ptr",
                 "c_client", "c_read", "c_stale", "ncon", "counts")

    def __init__(self, R: int, K: int, n: int) -> None:
        self.time = np.zeros((R, K + 1))
        self.kind = np.zeros((R, K + 1), dtype=np.int8)
        self.client = np.full((R, K + 1), -1, dtype=np.int32)
        self.stale_steps = np.zeros((R, K + 1), dtype=np.int64)
        self.stale_time = np.zeros((R, K + 1))
        self.fill = np.zeros((R, K + 1), dtype=np.int32)
        self.tie = np.zeros(R, dtype=bool)
        self.ptr = np.zeros((R, K + 1), dtype=np.int64)
        self.c_client = np.empty((R, K), dtype=np.int32)
        self.c_read = np.empty((R, K), dtype=np.int64)
        self.c_stale = np.empty((R, K), dtype=np.int64)
        self.ncon = np.zeros(R, dtype=np.int64)
        self.counts = np.zeros((R, n), dtype=np.int64)


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


@jit(inline=True)
def _compiled_clients(draws, C, start, blocks):
    """``blocks`` more blocks of every client's compute delays into ``C[:, start:]``
    (``draws``: one replicate's stream rows and its plan, :func:`_merge_compiled`)."""
    cstate, _tstate, per_block, off, q, B, scale, _timer = draws
    return _draw_blocks(cstate, blocks, per_block, off, q, B, scale, C, start)


@jit(inline=True)
def _compiled_server(draws, S, start):
    """The timer's delays ``S[start:]`` (``draws`` as :func:`_compiled_clients`)."""
    _cstate, tstate, _per_block, _off, _q, _B, _scale, timer = draws
    return _draw_timer(tstate, timer, S, start)


def _stream_clients(draws, C, start, blocks):
    """:func:`_compiled_clients` on a :class:`_StreamDraws`."""
    for i, s in enumerate(draws.streams):
        C[i, start:] = s.draw(blocks)[:, 1]
    return 0


def _stream_server(draws, S, start):
    """:func:`_compiled_server` on a :class:`_StreamDraws`."""
    S[start:] = draws.gen.exponential(draws.timer, size=S.size - start)
    return 0


class _StreamDraws:
    """One replicate's streams as NumPy generators (:class:`ClientDelayStream`): the
    reference of the compiled draws (``area_tables(..., compiled=False)``)."""

    def __init__(self, scenario: Scenario, replicate: int, bitgens: Sequence, q: int,
                 timer: float) -> None:
        dc = scenario.delays
        self.streams = [ClientDelayStream(dc.for_client(i), np.random.Generator(bg), q)
                        for i, bg in enumerate(bitgens)]
        self.gen = Streams(scenario.seed, replicate).server("timer")
        self.timer = timer


@jit(cache=False, inline=True)
def fill_row(draw_clients, draw_server, draws, n, K, B, first_c, first_s, time, kind,
             client, st_steps, st_time, fill, k_client, k_server):
    """One replicate's table row: :func:`merge_events` on its draws, grown until complete
    (every client's draws doubled at once, so all streams stay in step; the numbers drawn
    do not depend on the growth).  ``draw_clients(draws, C, start, blocks)`` /
    ``draw_server(draws, S, start)`` draw them (compiled: :func:`_compiled_clients`, inlined
    into :func:`_merge_compiled`, which is cached; the same source interpreted,
    ``fill_row.py_func``, with :func:`_stream_clients`);
    ``first_c`` (a multiple of ``B``) and ``first_s`` the first draws' sizes.  Returns
    whether the first K+1 times hold a tie."""
    C = np.empty((n, first_c))
    draw_clients(draws, C, 0, first_c // B)
    S = np.empty(first_s)
    draw_server(draws, S, 0)
    nc = np.empty(n, dtype=np.int64)
    nc[:] = first_c
    while True:
        st = merge_events(C, nc, S, S.shape[0], K, time, kind, client, st_steps, st_time, fill,
                          k_client, k_server)
        if st > 0:
            return st == 2
        if st == -1:
            m = C.shape[1]
            C2 = np.empty((n, 2 * m))
            for i in range(n):  # loops, not slice assignment: its shape-error message
                for col in range(m):  # compiles string formatting (seconds)
                    C2[i, col] = C[i, col]
            C = C2
            draw_clients(draws, C, m, m // B)
            nc[:] = 2 * m
        else:
            m = S.shape[0]
            S2 = np.empty(2 * m)
            for col in range(m):
                S2[col] = S[col]
            S = S2
            draw_server(draws, S, m)


@jit
def contributions(kind, client, stale, k_client, ptr, c_client, c_read, c_stale, counts):
    """The contribution columns of a merged row (entries ``1..K`` of ``kind``/``client``/
    ``stale``, entry 0 the initial record): a client event at step ``t`` is one
    contribution of that client reading version ``t - 1`` with staleness ``stale[t]``;
    ``ptr[t]`` the contributions of steps ``1..t``; ``counts[i]`` client ``i``'s events.
    Returns the number of contributions."""
    K = kind.shape[0] - 1
    p = 0
    ptr[0] = 0
    for t in range(1, K + 1):
        if kind[t] == k_client:
            i = client[t]
            c_client[p] = i
            c_read[p] = t - 1
            c_stale[p] = stale[t]
            counts[i] += 1
            p += 1
        ptr[t] = p
    return p


@jit
def _merge_compiled(cs, ts, per_block, off, q, B, scale, timer, first_c, first_s, K, time,
                    kind, client, st_steps, st_time, fill, tie, ptr, c_client, c_read,
                    c_stale, counts, ncon, k_client, k_server):
    """Every replicate's row (:func:`fill_row` with the compiled draws from its stream
    rows ``cs[k]``/``ts[k]``, then :func:`contributions`), in one call."""
    n = cs.shape[1]
    for k in range(cs.shape[0]):
        draws = (cs[k], ts[k], per_block, off, q, B, scale, timer)
        tie[k] = fill_row(_compiled_clients, _compiled_server, draws, n, K, B, first_c,
                          first_s, time[k], kind[k], client[k], st_steps[k], st_time[k],
                          fill[k], k_client, k_server)
        ncon[k] = contributions(kind[k], client[k], st_steps[k], k_client, ptr[k],
                                c_client[k], c_read[k], c_stale[k], counts[k])
    return 0


def _compute_column(plan: DelayPlan) -> tuple[int, np.ndarray] | None:
    """``(offset, 1/rate per client)`` of the compute delays in a vector plan's blocks, or
    ``None`` when compute is not drawn (constant)."""
    for a_, _b, _c, off, scale in plan.rand:
        if a_ == 1:
            return off, np.ascontiguousarray(scale, dtype=np.float64)
    return None


def area_tables(scenario: Scenario, replicates: Sequence[int],
                plan: DelayPlan | None = None, compiled: bool = True) -> AreaTables:
    """The event tables of ``replicates`` (module docstring); ``compiled=False`` forces the
    :class:`ClientDelayStream` draws (the same numbers, for tests).  The first draws
    cover 1.5 times the largest client's and the timer's expected shares of the K events
    (the numbers drawn do not depend on it)."""
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
    B = plan.B if col is not None else max(4, 16 // q)
    first_c = -(-(int(1.5 * K * float(rates.max()) / total) + 8) // B) * B
    first_s = int(1.5 * K * scenario.trigger.rate / total) + 8
    out = AreaTables(R, K, n)
    cols = (out.time, out.kind, out.client, out.stale_steps, out.stale_time, out.fill)
    rest = (out.ptr, out.c_client, out.c_read, out.c_stale, out.counts)
    if col is not None:
        cs = client_states(scenario.seed, reps, n, "delays")
        ts = server_states(scenario.seed, reps, "timer")
        _merge_compiled(cs, ts, plan.per_block, col[0], q, B, col[1], timer, first_c, first_s,
                        K, *cols, out.tie, *rest, out.ncon, K_CLIENT, K_SERVER)
        return out
    bgs = client_bitgens(scenario.seed, reps, n, "delays")
    for k in range(R):
        draws = _StreamDraws(scenario, int(reps[k]), bgs[k], q, timer)
        out.tie[k] = fill_row.py_func(_stream_clients, _stream_server, draws, n, K, B,
                                      first_c, first_s, *(c[k] for c in cols), K_CLIENT,
                                      K_SERVER)
        out.ncon[k] = contributions(*(c[k] for c in (out.kind, out.client, out.stale_steps)),
                                    K_CLIENT, *(c[k] for c in rest))
    return out


def event_tables(tabs: AreaTables, M: int, every: int) -> list[EventTable]:
    """Every row of ``tabs`` as the replay's :class:`~fedsim.engine.replay.table.EventTable`
    (REPLAY_SPEC 1), the one :func:`~fedsim.engine.models.area.simpy_writer.area_table`
    writes for the iterate model: a client event is one contribution reading version
    ``t - 1`` (``M`` local steps, ``c_stale`` its staleness column), a server event none;
    ``sim_time`` the time of the K-th event, the busy curve constant 1.  Each table's
    arrays are views of ``tabs``' rows."""
    R, K = tabs.time.shape[0], tabs.time.shape[1] - 1
    steps = np.full(K, M, np.int32)
    ms = metric_steps(K, every)
    one, busy = np.zeros(1), np.ones(1)
    out = []
    for k in range(R):
        P = int(tabs.ncon[k])
        cc, cr = tabs.c_client[k, :P], tabs.c_read[k, :P]
        out.append(EventTable(
            time=tabs.time[k, 1:], kind=tabs.kind[k, 1:], client=tabs.client[k, 1:],
            staleness_steps=tabs.stale_steps[k, 1:], staleness_time=tabs.stale_time[k, 1:],
            buffer_fill=tabs.fill[k, 1:], ptr=tabs.ptr[k], c_client=cc, c_read=cr,
            c_steps=steps[:P], c_stale=tabs.c_stale[k, :P], sim_time=float(tabs.time[k, K]),
            steps_done=K, client_updates=tabs.counts[k], concurrency_time=one,
            concurrency_busy=busy, metric_steps=ms, staleness_bound=math.inf,
            u_client=cc, u_before=cr))
    return out


def metric_steps(K: int, every: int) -> np.ndarray:
    """The recorded steps of a K-step table: ``0, every, 2 every, ...`` and ``K``."""
    ms = np.arange(0, K + 1, every, dtype=np.int64)
    return ms if K % every == 0 else np.append(ms, K)


def merged_group(tabs: AreaTables, rows: np.ndarray, M: int, every: int) -> TableGroup:
    """Rows ``rows`` of ``tabs`` as one :class:`~fedsim.engine.replay.group.TableGroup`
    laid out directly from the arrays (:meth:`TableGroup.from_columns`): the columns the
    group would concatenate from :func:`event_tables`' tables of these rows, with no
    per-replicate object.  A contribution reads version ``t - 1`` (lag 1), one a step at
    most."""
    rows = np.asarray(rows, dtype=np.int64)
    G, K = rows.size, tabs.time.shape[1] - 1
    ncon = tabs.ncon[rows]
    keep = np.arange(K) < ncon[:, None]  # row-major: each replicate's contributions in order
    coff = np.zeros(G + 1, dtype=np.int64)
    np.cumsum(ncon, out=coff[1:])
    ms = metric_steps(K, every)
    P = int(coff[-1])
    return TableGroup.from_columns(
        n=tabs.counts.shape[1], soff=np.arange(G + 1, dtype=np.int64) * K, coff=coff,
        moff=np.arange(G + 1, dtype=np.int64) * ms.size, ptr=tabs.ptr[rows].ravel(),
        kind=tabs.kind[rows, 1:].ravel(), buffer_fill=tabs.fill[rows, 1:].ravel(),
        c_client=tabs.c_client[rows][keep], c_read=tabs.c_read[rows][keep],
        c_steps=np.full(P, M, dtype=np.int32), c_stale=tabs.c_stale[rows][keep],
        rec=np.tile(ms, G), max_lag=1, kmax=1 if P else 0, smax=M if P else 0)
