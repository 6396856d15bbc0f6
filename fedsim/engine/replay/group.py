"""``replay_group``: the rules replayed along a group of replicates' tables in one call.

The Python half of :mod:`fedsim.engine.replay.group_kernel`: :class:`TableGroup` lays
``G`` :class:`~fedsim.engine.replay.table.EventTable` s end to end (their columns
concatenated, with offsets), :func:`replay_group` allocates the state, snapshot and metric
buffers once for the group, runs the compiled outer loop (or the same source interpreted)
and returns one :class:`Replayed` per table.  A replicate's numbers are those of its
table, its streams and its initial model only: they do not depend on the group it is
replayed in, its place there or the budget of the calls (tests/engine/replay/
test_replay_group.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fedsim.engine.replay.buffers import check_buffers
from fedsim.engine.replay.group_kernel import group_kernel
from fedsim.engine.replay.metrics import MetricPlan
from fedsim.engine.replay.table import EventTable
from fedsim.errors import require
from fedsim.local.forms import ClientForm, ServerForm
from fedsim.trace import DIVERGE_NORM

__all__ = ["Replayed", "TableGroup", "replay_group", "group_slices", "group_bytes",
           "GROUP_STEPS"]

_DIV2 = DIVERGE_NORM * DIVERGE_NORM

#: a group holds about this many server steps (its concatenated tables and its snapshots
#: are allocated at once)
GROUP_STEPS = 1 << 20


@dataclass
class Replayed:
    """One replicate replayed: ``steps_done``, ``diverged_step`` (``None``: did not
    diverge), the final server state row 0 ``final_w``, the records ``metric_steps`` /
    ``metrics`` (no running averages), the counters ``info``."""

    steps_done: int
    diverged_step: int | None
    final_w: np.ndarray
    metric_steps: np.ndarray
    metrics: dict[str, np.ndarray]
    info: dict[str, Any] = field(default_factory=dict)
    #: the clients' states ``(n, c_rows, d)`` as the replay left them (when kept)
    client_state: np.ndarray | None = None
    #: row 0 of every client's state at each recorded step ``(records, n, d)``, when kept
    personal: np.ndarray | None = None


def _cat(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
    return parts[0] if len(parts) == 1 else np.concatenate(parts).astype(dtype, copy=False)


def _offsets(sizes: list[int]) -> np.ndarray:
    off = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=off[1:])
    return off


class TableGroup:
    """``tables`` end to end (module docstring of :mod:`~fedsim.engine.replay.
    group_kernel`): the step, contribution and record columns concatenated and their
    offsets ``soff``, ``coff``, ``moff``; the ring size ``H`` (a power of two above every
    table's :meth:`~EventTable.max_lag`), the most contributions of a step ``kmax`` and
    local steps of a round ``smax``."""

    def __init__(self, tables: Sequence[EventTable]) -> None:
        require(len(tables) >= 1, "tables", len(tables), "must hold at least one table")
        tabs = list(tables)
        self.n = tabs[0].n
        self.soff = _offsets([t.steps_done for t in tabs])
        self.coff = _offsets([t.c_client.size for t in tabs])
        self.moff = _offsets([t.metric_steps.size for t in tabs])
        self.ptr = _cat([t.ptr for t in tabs], np.int64)
        self.kind = _cat([t.kind for t in tabs], np.int8)
        self.buffer_fill = _cat([t.buffer_fill for t in tabs], np.int32)
        self.c_client = _cat([t.c_client for t in tabs], np.int32)
        self.c_read = _cat([t.c_read for t in tabs], np.int64)
        self.c_steps = _cat([t.c_steps for t in tabs], np.int32)
        self.c_stale = _cat([t.c_stale for t in tabs], np.int64)
        self.rec = _cat([t.metric_steps for t in tabs], np.int64)
        self.H = 1 << max(t.max_lag() for t in tabs).bit_length()
        self.kmax = max(1, max(t.max_contributions() for t in tabs))
        self.smax = max(1, max(t.max_steps() for t in tabs))

    @classmethod
    def from_columns(cls, *, n: int, soff: np.ndarray, coff: np.ndarray, moff: np.ndarray,
                     ptr: np.ndarray, kind: np.ndarray, buffer_fill: np.ndarray,
                     c_client: np.ndarray, c_read: np.ndarray, c_steps: np.ndarray,
                     c_stale: np.ndarray, rec: np.ndarray, max_lag: int, kmax: int,
                     smax: int) -> TableGroup:
        """The group of tables a writer produced in bulk, already laid end to end (the
        columns and offsets :meth:`__init__` would build from its tables, with their dtypes;
        ``max_lag``/``kmax``/``smax`` as :class:`EventTable` reports them): no per-table
        object."""
        g = cls.__new__(cls)
        g.n = int(n)
        g.soff, g.coff, g.moff, g.ptr, g.kind = soff, coff, moff, ptr, kind
        g.buffer_fill, g.c_client, g.c_read, g.c_steps = buffer_fill, c_client, c_read, c_steps
        g.c_stale, g.rec = c_stale, rec
        g.H = 1 << max(1, int(max_lag)).bit_length()
        g.kmax = max(1, int(kmax))
        g.smax = max(1, int(smax))
        return g

    def __len__(self) -> int:
        return int(self.soff.size) - 1

    @property
    def steps(self) -> int:
        """The group's server steps."""
        return int(self.soff[-1])

    def rows(self, g: int) -> slice:
        """Replicate ``g``'s snapshot rows (its records and one more)."""
        return slice(int(self.moff[g]) + g, int(self.moff[g + 1]) + g + 1)


def group_slices(tables: Sequence[EventTable], steps: int | None = None) -> list[slice]:
    """Consecutive groups of ``tables``, each of about ``steps`` (default
    :data:`GROUP_STEPS`) server steps, at least one table."""
    steps = GROUP_STEPS if steps is None else int(steps)
    out, start, acc = [], 0, 0
    for k, t in enumerate(tables):
        acc += t.steps_done + 1
        if acc >= steps:
            out.append(slice(start, k + 1))
            start, acc = k + 1, 0
    if start < len(tables):
        out.append(slice(start, len(tables)))
    return out


def _templates(cf: ClientForm, sf: ServerForm, n: int, w0s: Sequence[np.ndarray]
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(init, hist0, cst0)``: one pair of initial server/client states per distinct
    initial model (rule ``init_state``s, once each), ``init[g]`` replicate ``g``'s."""
    keys: dict[bytes, int] = {}
    init = np.empty(len(w0s), dtype=np.int64)
    uniq: list[np.ndarray] = []
    for g, w in enumerate(w0s):
        k = keys.setdefault(w.tobytes(), len(uniq))
        if k == len(uniq):
            uniq.append(w)
        init[g] = k
    d = uniq[0].shape[0]
    hist0 = np.empty((len(uniq), sf.s_rows, d))
    cst0 = np.zeros((len(uniq), n, cf.c_rows, d))
    for k, w in enumerate(uniq):
        if sf.init_state is None:
            hist0[k][:] = w
        else:
            sf.init_state(hist0[k], w)
        if cf.init_state is not None:  # a function of w0 alone: once, for all n clients
            cf.init_state(cst0[k, 0], w)
            cst0[k, 1:] = cst0[k, 0]
    return init, hist0, cst0


def group_bytes(group: TableGroup, cf: ClientForm, sf: ServerForm, plan: MetricPlan, d: int,
                inits: int, keep_personal: bool = False, keep_state: bool = False
                ) -> dict[str, int]:
    """The bytes of the buffers :func:`replay_group` allocates for ``group`` (``inits``
    distinct initial models), by buffer (:func:`fedsim.engine.replay.buffers.
    check_buffers` adds them up)."""
    G, n = len(group), group.n
    rows = int(group.moff[-1]) + G
    personal = cf.personal_row >= 0 and (plan.personal or keep_personal)
    item = np.dtype(cf.dtype).itemsize if cf.dtype is not None else 8
    return {"ring": 8 * group.H * sf.s_rows * d,
            "client states": 8 * n * cf.c_rows * d * (1 + inits + (G if keep_state else 0)),
            "snapshots": 8 * rows * d * (2 if plan.ergodic else 1),
            "personal snapshots": 8 * rows * n * d if personal else 0,
            "metric values": 8 * rows * (len(plan.rest) + 1),
            "round randomness": item * group.smax * max(cf.k, 1),
            "step messages": 16 * group.kmax * d,
            "fills": 8 * group.steps}


def replay_group(group: TableGroup, cf: ClientForm, sf: ServerForm, plan: MetricPlan,
                 states: Any, w0s: Sequence[np.ndarray], *, keep_personal: bool = False,
                 keep_state: bool = False, budget: int | None = None,
                 progress: Callable[[int], None] | None = None) -> list[Replayed]:
    """The group's replicates replayed (module docstring): ``states`` their clients' noise
    streams (``(G, n, 6)`` state rows compiled, a list of lists of ``Generator`` s
    interpreted), ``w0s`` their initial models; ``keep_personal``: snapshot the personal
    models (``cf.personal_row``) at the recorded steps (:attr:`Replayed.personal`);
    ``keep_state``: the clients' final states (:attr:`Replayed.client_state`).  The outer
    loop runs ``budget`` steps a call (default: all), ``progress(steps)`` called after
    each with the group's steps replayed so far."""
    G = len(group)
    d = w0s[0].shape[0]
    n = group.n
    mf = plan.kernel_metrics if cf.compiled else None  # evaluated inline by the loop
    check_buffers(f"the replay of {G} replicate(s) ({group.steps} steps)",
                  group_bytes(group, cf, sf, plan, d, len({w.tobytes() for w in w0s}),
                              keep_personal, keep_state))
    kern = group_kernel(cf.draw_round, cf.update, sf.apply, mf, cf.compiled)
    init, hist0, cst0 = _templates(cf, sf, n, w0s)
    hist = np.empty((group.H, sf.s_rows, d))
    cst = np.zeros((n, cf.c_rows, d))
    rows = int(group.moff[-1]) + G
    snap = np.empty((rows, d))
    ergo = plan.ergodic
    wsum = np.zeros(d)
    esnap = np.empty((rows, d)) if ergo else np.empty((1, 1))
    prow = cf.personal_row if plan.personal or keep_personal else -1
    psnap = np.empty((rows, n, d)) if prow >= 0 else np.empty((1, 1, 1))
    isnap = np.ones(G, dtype=np.int64)
    smax, kmax = group.smax, group.kmax
    Z = cf.make_z(smax) if cf.make_z is not None else np.empty((smax, cf.k), dtype=cf.dtype)
    clients = np.zeros(kmax, dtype=np.int32)
    reads, news = np.zeros((kmax, d)), np.zeros((kmax, d))
    stale = np.zeros(kmax, dtype=np.int64)
    ccnt = np.zeros((G, max(cf.ncnt, 1)), dtype=np.int64)
    scnt = np.zeros((G, max(sf.ncnt, 1)), dtype=np.int64)
    fills = np.zeros(max(group.steps, 1), dtype=np.int64)
    done = np.zeros(G, dtype=np.int64)
    final = np.empty((G, d))
    cout = np.empty((G, n, cf.c_rows, d)) if keep_state else np.empty((1, 1, 1, 1))
    xbar = np.zeros(d)
    if mf is not None and plan.compiled:
        mon, mdata, codes, ecodes = True, plan.mdata, plan.codes, plan.ecode
        mvals = np.empty((rows, len(plan.rest)))
        evals = np.empty((rows, 1)) if ergo else np.empty((1, 1))
    elif mf is not None:  # the view's metrics in the loop, never evaluated (snapshots)
        mon, mdata, codes, mvals, ecodes, evals, xbar = plan.idle_buffers(xbar)
    else:
        mon, mdata, codes, ecodes = False, cf.vdata, group.rec, group.rec
        mvals = evals = np.empty((1, 1))
    pos = np.zeros(3, dtype=np.int64)
    total = group.steps
    step = max(1, total if budget is None else int(budget))  # > 0: a group of empty tables ends
    replayed = 0
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        while pos[0] < G:
            replayed += kern(cf.vdata, pos, step, group.soff, group.coff, group.moff, group.ptr,
                             group.kind, group.c_client, group.c_read, group.c_steps,
                             group.c_stale, group.rec, init, hist0, cst0, hist, cst, states, Z,
                             clients, reads, news, stale, cf.fp, sf.fp, ccnt, scnt, isnap,
                             snap, ergo, wsum, esnap, prow, psnap, _DIV2, fills, done, final,
                             keep_state, cout, mon, mdata, codes, mvals, ecodes, evals, xbar)
            if progress is not None:
                progress(replayed)
    return [_result(group, g, cf, plan, int(done[g]), int(isnap[g]), fills, snap, esnap, psnap,
                    prow, mvals if mon else None, evals, final[g],
                    cout[g] if keep_state else None, ccnt[g]) for g in range(G)]


def _result(group: TableGroup, g: int, cf: ClientForm, plan: MetricPlan, done: int, j: int,
            fills: np.ndarray, snap: np.ndarray, esnap: np.ndarray, psnap: np.ndarray,
            prow: int, mvals: np.ndarray | None, evals: np.ndarray, final: np.ndarray,
            cstate: np.ndarray | None, ccnt: np.ndarray) -> Replayed:
    """Replicate ``g``'s :class:`Replayed` from the group's buffers (the records up to a
    divergence, then the diverged step's)."""
    t = -done if done < 0 else done
    s0 = int(group.soff[g])
    got, want = fills[s0:s0 + t], group.buffer_fill[s0:s0 + t]
    require(np.array_equal(got, want), "server rule fill", got.tolist()[:8],
            "must equal the table's buffer_fill")
    rec = group.rec[group.moff[g]:group.moff[g + 1]]
    if done < 0:
        steps = np.append(rec[:j], t)
        nrows = j + 1
    else:
        steps, nrows = rec, rec.size
    r = group.rows(g)
    r0 = r.start
    esn = esnap[r0:r0 + nrows] if plan.ergodic else None
    psn = psnap[r0:r0 + nrows] if prow >= 0 else None
    inline = None
    if mvals is not None:
        inline = (True, None, None, mvals[r], None, evals[r] if plan.ergodic else evals, None)
    metrics = plan.values(steps, snap[r0:r0 + nrows], esn, psn, inline)
    info = {name: int(ccnt[k]) for k, name in enumerate(cf.counters)}
    return Replayed(steps_done=t, diverged_step=t if done < 0 else None, final_w=final,
                    metric_steps=steps, metrics=metrics, info=info, client_state=cstate,
                    personal=psn)
