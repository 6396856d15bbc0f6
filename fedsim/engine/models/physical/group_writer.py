"""Many replicates' FedAsync tables written in one compiled call, laid end to end.

For a FedAsync physical scenario (one server step per upload) with a step horizon whose
delay models are all ``Constant`` or ``Exponential``
(:func:`~fedsim.engine.models.physical.event_loop.supports_plan`), :func:`upload_group` runs the
compiled event loop of :mod:`fedsim.engine.models.physical.event_loop` for ``G`` replicates in
one call and writes the replay's step and contribution columns directly in the layout of
:class:`~fedsim.engine.replay.group.TableGroup` (:meth:`TableGroup.from_columns
<fedsim.engine.replay.group.TableGroup.from_columns>`), with no per-replicate Python:

* each replicate starts from the state :class:`~fedsim.engine.models.physical.event_loop.
  EventTimeline` starts from, its clients' ``delays`` stream rows its own (row ``g`` of
  ``states``), and runs :func:`~fedsim.engine.models.physical.event_loop.start_loop` then
  :func:`~fedsim.engine.models.physical.event_loop.advance_loop` for ``T`` uploads (fewer when
  the time horizon comes first): the uploads and busy events that ``EventTimeline.take``
  returns in chunks, in one piece;
* its columns, as :func:`~fedsim.engine.models.physical.uploads.uploads_table` writes them with
  ``K = 1``: step ``t`` consumes upload ``t`` (``ptr = 0 .. T``), ``c_read = omega``,
  ``c_stale = max(t - 1 - omega, 0)``, ``c_steps = Q``, kind ``"upload"``, fill 1, the
  recorded steps ``0, every, ...`` and the last.

:meth:`UploadGroup.table` gives a replicate's :class:`~fedsim.engine.replay.table.
EventTable` when one is asked for (a kept timeline, a divergence's truncation): it is
``uploads_table`` of the replicate's rows, so it is the per-replicate writer's table, and
the group's columns are those :class:`TableGroup` concatenates from such tables
(``tests/engine/replay/test_upload_group.py`` checks both, column by column).  A
replicate's rows do not depend on the others, on ``G`` or on its place in the group.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fedsim.config import Scenario
from fedsim.engine.models.physical.event_loop import (
    advance_loop,
    block_width,
    delay_params,
    start_loop,
    supports_plan,
    think_start,
)
from fedsim.engine.models.physical.uploads import TimelineChunk, uploads_table
from fedsim.engine.replay.buffers import check_buffers
from fedsim.engine.replay.driver import TableSet
from fedsim.engine.replay.group import GROUP_STEPS, TableGroup
from fedsim.engine.replay.table import EventTable
from fedsim.jit import jit
from fedsim.rng.delays import DelayPlan
from fedsim.rng.streams import client_states
from fedsim.trace import KINDS

__all__ = ["UploadGroup", "GroupTables", "upload_group", "group_table_set", "group_writes",
           "write_uploads", "group_columns", "upload_row_bytes"]

_UPLOAD = KINDS.index("upload")


def group_writes(scenario: Scenario, plan: DelayPlan) -> bool:
    """Whether :func:`upload_group` can write ``scenario``'s tables (``plan`` its
    :class:`~fedsim.rng.delays.DelayPlan`): a step horizon and every delay
    model ``Constant`` or ``Exponential`` (the time-horizon-only runs and other delay
    models take the per-replicate writers)."""
    return scenario.horizon.steps is not None and supports_plan(plan)


def upload_row_bytes(think: bool) -> int:
    """Bytes :func:`upload_group` holds per upload of a group (the loop's four rows, the
    group's ``ptr``/``c_stale`` and three narrow columns, the replay's fill), with
    ``think`` the room for two busy events (four columns each)."""
    return 8 * 4 + 8 * 2 + 4 * 3 + 1 + 8 + (2 * 32 if think else 0)


@jit(nrt=False)
def write_uploads(T, Hor, arrival, q, B, kconst, kval, states, st, ht, he, hc, blk, omega,
                  tread, thnext, th0, jn, kind, gate, rnd, up_n, up_t, up_c, up_o, up_r, b_t,
                  b_d, b_g, b_b, bcap, nup, nbusy, counts):
    """The event loop of each replicate ``g`` of ``states`` ``(G, n, 6)`` (its clients'
    ``delays`` rows, advanced in place) from a fresh start, ``T`` uploads at most: its
    uploads at rows ``sum(nup[:g]) ..`` of ``up_*``, its busy events at rows ``sum(nbusy[:g])
    ..`` of ``b_*`` (at most ``bcap`` a replicate), ``counts[g]`` its uploads per client;
    the per-client arrays are the loop's scratch (``thnext`` reset to ``th0``,
    :func:`~fedsim.engine.models.physical.event_loop.think_start`), ``up_n`` (``T``) its
    round numbers (unused).  Returns the uploads written."""
    G = states.shape[0]
    n = ht.shape[0]
    s = 0
    b = 0
    for g in range(G):
        st[0] = 0
        st[1] = 0
        st[2] = 0
        for c in range(n):
            omega[c] = 0
            tread[c] = 0.0
            thnext[c] = th0[c]
            jn[c] = B
            kind[c] = 0
            gate[c] = 0
            rnd[c] = 0
        sg = states[g]
        start_loop(arrival, st, ht, he, hc, blk, omega, tread, thnext, jn, kind, kconst, kval,
                   sg, q, B)
        nu, nb = advance_loop(T, Hor, arrival, st, ht, he, hc, blk, omega, tread, thnext, jn,
                              kind, gate, rnd, kconst, kval, sg, q, B, up_t[s:s + T],
                              up_c[s:s + T], up_o[s:s + T], up_r[s:s + T], up_n,
                              b_t[b:b + bcap], b_d[b:b + bcap], b_g[b:b + bcap],
                              b_b[b:b + bcap])
        nup[g] = nu
        nbusy[g] = nb
        for u in range(s, s + nu):
            counts[g, up_c[u]] += 1
        s += nu
        b += nb
    return s


@jit(nrt=False)
def group_columns(nup, up_o, every, ptr, c_stale, rec, moff):
    """The replay's columns of the group (module docstring): per replicate ``g`` its
    ``ptr`` ``0 .. T_g`` at rows ``soff[g] + g ..``, ``c_stale`` and its recorded steps at
    rows ``moff[g] ..`` (``moff`` ``(G + 1,)`` written here).  Returns the largest lag
    ``t - c_read`` (1 with no upload)."""
    G = nup.shape[0]
    s = 0
    m = 0
    lag = 1
    for g in range(G):
        T = nup[g]
        p0 = s + g
        for t in range(T + 1):
            ptr[p0 + t] = t
        for u in range(T):
            o = up_o[s + u]
            st = u - o
            c_stale[s + u] = st if st > 0 else 0
            if u + 1 - o > lag:
                lag = u + 1 - o
        moff[g] = m
        for t in range(0, T + 1, every):
            rec[m] = t
            m += 1
        if T % every != 0:
            rec[m] = T
            m += 1
        s += T
    moff[G] = m
    return lag


class UploadGroup:
    """``G`` replicates' FedAsync tables written at once (module docstring): ``group`` the
    replay's :class:`~fedsim.engine.replay.group.TableGroup`, ``sim_time`` ``(G,)`` and
    ``client_updates`` ``(G, n)`` of the runs as they end without a divergence,
    :meth:`table` a replicate's :class:`~fedsim.engine.replay.table.EventTable`."""

    def __init__(self, *, n: int, Q: int, horizon_time: float, every: int,
                 staleness_bound: float, T: int, nup: np.ndarray, nbusy: np.ndarray,
                 up: tuple[np.ndarray, ...], busy: tuple[np.ndarray, ...],
                 counts: np.ndarray, group: TableGroup) -> None:
        self.n, self.Q, self.T = int(n), int(Q), int(T)
        self.horizon_time, self.every = float(horizon_time), int(every)
        self.staleness_bound = float(staleness_bound)
        self.up, self.busy, self.group = up, busy, group
        self.uoff = np.concatenate(([0], np.cumsum(nup)))
        self.boff = np.concatenate(([0], np.cumsum(nbusy)))
        self.client_updates = counts
        U = np.asarray(nup, dtype=np.int64)
        last = np.zeros(U.size)
        on = U > 0
        last[on] = self.up[0][self.uoff[1:][on] - 1]
        self.sim_time = np.where(U < self.T, self.horizon_time, last)

    def __len__(self) -> int:
        return int(self.uoff.size) - 1

    def table(self, g: int) -> EventTable:
        """Replicate ``g``'s table: :func:`~fedsim.engine.models.physical.uploads.uploads_table` of
        its rows (views of the group's)."""
        u = slice(int(self.uoff[g]), int(self.uoff[g + 1]))
        b = slice(int(self.boff[g]), int(self.boff[g + 1]))
        t, c, o, r = (a[u] for a in self.up)
        U = u.stop - u.start
        chunk = TimelineChunk(0, t, c, o, r, *(a[b] for a in self.busy), np.empty(0, np.int64))
        return uploads_table(self.n, self.Q, [chunk], uploads=U, stop_by_time=U < self.T,
                             horizon_time=self.horizon_time, every=self.every,
                             staleness_bound=self.staleness_bound)


def upload_group(scenario: Scenario, replicates: Sequence[int], *, n: int, Q: int,
                 staleness_bound: float, plan: DelayPlan) -> UploadGroup:
    """The FedAsync tables of ``replicates`` written in one compiled call (module
    docstring); ``scenario`` must satisfy :func:`group_writes` with ``plan``."""
    kconst, kval = delay_params(plan)
    reps = [int(r) for r in replicates]
    G = len(reps)
    T = int(scenario.horizon.steps)
    q, B = plan.q, plan.B
    think = plan.thinks()
    bcap = 2 * T + n + 1 if think else 0
    check_buffers(f"the FedAsync timeline of {G} replicate(s) ({T} steps)",
                  {"uploads": G * T * upload_row_bytes(False),
                   "busy events": G * bcap * 32,
                   "records": 8 * G * (T // max(int(scenario.record.every), 1) + 2)})
    states = client_states(scenario.seed, reps, n, "delays")
    st = np.zeros(3, dtype=np.int64)
    ht, he, hc = np.empty(n), np.empty(n, np.int64), np.empty(n, np.int64)
    blk = np.empty((n, block_width(kconst, q, B)))
    omega, jn, kind, gate, rnd = (np.zeros(n, np.int64) for _ in range(5))
    tread, thnext = np.zeros(n), think_start(kconst, kval)
    th0 = thnext.copy()
    up_n = np.empty(T, np.int64)
    up_t, up_r = np.empty(G * T), np.empty(G * T)
    up_c, up_o = np.empty(G * T, np.int64), np.empty(G * T, np.int64)
    b_t = np.empty(G * bcap)
    b_d, b_g, b_b = (np.empty(G * bcap, np.int64) for _ in range(3))
    nup, nbusy = np.zeros(G, np.int64), np.zeros(G, np.int64)
    counts = np.zeros((G, n), np.int64)
    arrival = scenario.delays.read_at == "arrival"
    S = write_uploads(T, float(scenario.horizon.time), arrival, q, B, kconst, kval, states, st,
                      ht, he, hc, blk, omega, tread, thnext, th0, jn, kind, gate, rnd, up_n, up_t,
                      up_c, up_o, up_r, b_t, b_d, b_g, b_b, bcap, nup, nbusy, counts)
    every = int(scenario.record.every)
    ptr = np.empty(S + G, np.int64)
    c_stale = np.empty(S, np.int64)
    rec = np.empty(G * (T // every + 2), np.int64)
    moff = np.empty(G + 1, np.int64)
    lag = group_columns(nup, up_o, every, ptr, c_stale, rec, moff)
    soff = np.concatenate(([0], np.cumsum(nup))).astype(np.int64)
    grp = TableGroup.from_columns(
        n=n, soff=soff, coff=soff, moff=moff, ptr=ptr, kind=np.full(S, _UPLOAD, np.int8),
        buffer_fill=np.ones(S, np.int32), c_client=up_c[:S].astype(np.int32),
        c_read=up_o[:S], c_steps=np.full(S, Q, np.int32), c_stale=c_stale,
        rec=rec[:int(moff[G])], max_lag=lag, kmax=1, smax=Q if S else 0)
    nb = int(nbusy.sum())
    return UploadGroup(n=n, Q=Q, horizon_time=float(scenario.horizon.time), every=every,
                       staleness_bound=staleness_bound, T=T, nup=nup, nbusy=nbusy,
                       up=(up_t[:S], up_c[:S], up_o[:S], up_r[:S]),
                       busy=(b_t[:nb], b_d[:nb], b_g[:nb], b_b[:nb]), counts=counts,
                       group=grp)


class GroupTables(Sequence):
    """The replicates' tables of consecutive :class:`UploadGroup` s, replicate ``k``'s
    table built only when asked for (:meth:`UploadGroup.table`: a Trace, a truncation);
    :meth:`end` its simulated time and uploads per client as the run ends undiverged."""

    def __init__(self, groups: Sequence[UploadGroup]) -> None:
        self.parts = list(groups)
        self.off = np.concatenate(([0], np.cumsum([len(g) for g in self.parts]))).astype(int)

    def __len__(self) -> int:
        return int(self.off[-1])

    def _where(self, k: int) -> tuple[UploadGroup, int]:
        p = int(np.searchsorted(self.off, k, side="right")) - 1
        return self.parts[p], k - int(self.off[p])

    def __getitem__(self, k):  # type: ignore[override]
        if isinstance(k, slice):
            return [self[j] for j in range(*k.indices(len(self)))]
        ug, j = self._where(int(k))
        return ug.table(j)

    def end(self, k: int) -> tuple[float, np.ndarray]:
        """Replicate ``k``'s ``(sim_time, client_updates)`` without a divergence."""
        ug, j = self._where(int(k))
        return float(ug.sim_time[j]), ug.client_updates[j]


def group_table_set(scenario: Scenario, replicates: Sequence[int], *, n: int, Q: int,
                    staleness_bound: float, plan: DelayPlan,
                    steps: int | None = None) -> TableSet:
    """The replicates' tables written by :func:`upload_group` about ``steps`` (default
    :data:`~fedsim.engine.replay.group.GROUP_STEPS`) server steps a call, handed to the
    replay as the groups the writer laid out (``TableSet.groups``: no per-replicate table
    unless one is asked for); ``scenario`` must satisfy :func:`group_writes`."""
    reps = [int(r) for r in replicates]
    T = int(scenario.horizon.steps)
    size = max(1, (GROUP_STEPS if steps is None else int(steps)) // (T + 1))
    ugs = [upload_group(scenario, reps[g:g + size], n=n, Q=Q,
                        staleness_bound=staleness_bound, plan=plan)
           for g in range(0, len(reps), size)]
    tables = GroupTables(ugs)
    groups = [(ug.group, range(int(tables.off[p]), int(tables.off[p + 1])))
              for p, ug in enumerate(ugs)]
    return TableSet(tables=tables, groups=groups)
