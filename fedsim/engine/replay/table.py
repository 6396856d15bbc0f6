"""The event table: what an execution model's timeline writer hands to the replay.

One :class:`EventTable` is one replicate's timeline (docs/INTERNALS.md section 3): the
server steps (these ARE the Trace's timeline columns), the client contributions each step
consumes, in the order the server rule consumes them, and the run's per-run facts.  No
model value is in it: the writer (SimPy, or a compiled or vectorised timeline tested
bitwise equal to SimPy) draws only the ``delays``, ``timer``, ``events`` and ``sampling``
streams; the replay (:mod:`fedsim.engine.replay.kernel`) applies the rules along it.

*Steps* (``T`` rows, row ``t - 1`` is server step ``t``): ``time`` f8, ``kind`` i1
(:data:`fedsim.trace.KINDS` code), ``client`` i4 (-1: the server, or several clients),
``staleness_steps`` i8, ``staleness_time`` f8, ``buffer_fill`` i4; ``ptr`` i8 ``(T + 1,)``:
the contributions of step ``t`` are rows ``ptr[t-1]:ptr[t]`` (``ptr[t-1] == ptr[t]``: a step
that consumes none).

*Contributions* (``P`` rows, arrival order): ``c_client`` i4; ``c_read`` i8 (the server
version, = step index, of the model the round started from; 0 = ``w^0``); ``c_steps`` i4
(local steps of the round); ``c_stale`` i8 (the staleness the server rule is given).

*Per run*: ``sim_time``, ``steps_done``, ``client_updates`` i8 ``(n,)``, the busy curve
``concurrency_time``/``concurrency_busy`` of the run as it ended, ``metric_steps`` (the
steps the engine records when the run does not diverge: ``0, every, 2 every, ...`` and the
last step), ``staleness_bound``, ``info`` (timeline-only facts).

*Divergence truncation.*  A replay that finds the model diverged at step ``t`` stops there;
:meth:`EventTable.truncated` gives what the engine reports then.  It needs

* ``u_client`` i4 / ``u_before`` i8 (one row per completed round, in processing order):
  the client and the server steps done when its upload was processed; the engine has
  counted the rounds with ``u_before < t`` (the upload that makes step ``t`` included);
* the busy events ``b_time`` f8, ``b_delta`` i8 (+1: a client starts idling, -1: it stops),
  ``b_gate`` i8 and ``b_before`` i8 (an idle start: the step of the upload that started it;
  an idle end: that same gate, and the steps done when the end was processed): the engine
  has processed an event with ``b_gate < t`` when it precedes step ``t``'s upload
  (``b_before < t``), or is an idle start, or happened at step ``t``'s time (SimPy runs the
  events at the stop time that are already due).  With no busy events the curve is the
  constant 1 (no think times).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fedsim.errors import require
from fedsim.jit import jit
from fedsim.trace import Trace, running_averages

__all__ = ["EventTable", "busy_curve"]

_STEP_COLS = {"time": np.float64, "kind": np.int8, "client": np.int32,
              "staleness_steps": np.int64, "staleness_time": np.float64,
              "buffer_fill": np.int32}
_CONTRIB_COLS = {"c_client": np.int32, "c_read": np.int64, "c_steps": np.int32,
                 "c_stale": np.int64}
_UPLOAD_COLS = {"u_client": np.int32, "u_before": np.int64}
_BUSY_COLS = {"b_time": np.float64, "b_delta": np.int64, "b_gate": np.int64,
              "b_before": np.int64}
#: the one-dimensional columns and their dtypes; then the other arrays
_ONE_D = tuple((name, np.dtype(dt)) for cols in (_STEP_COLS, _CONTRIB_COLS, _UPLOAD_COLS,
                                                 _BUSY_COLS) for name, dt in cols.items())
_ARRAYS = (("ptr", np.dtype(np.int64)), ("client_updates", np.dtype(np.int64)),
           ("metric_steps", np.dtype(np.int64)), ("concurrency_time", np.dtype(np.float64)),
           ("concurrency_busy", np.dtype(np.float64)))


def busy_curve(n: int, b_time: np.ndarray, b_delta: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """The busy-fraction step curve ``(times, fractions)`` from ``(n - idle) / n`` after
    each event, starting at ``(0, 1)`` (``fedsim.trace.Recorder.busy``'s rule: a change at
    the time of the previous one replaces it)."""
    idle = np.cumsum(b_delta)
    busy = (n - idle) / n
    t = np.concatenate(([0.0], b_time))
    b = np.concatenate(([1.0], busy))
    last = np.append(t[1:] != t[:-1], True)
    return t[last], b[last]


@jit(nrt=False)
def _table_facts(ptr, c_read, c_steps, out):
    """One pass over a table's contributions: ``out`` = ``[ptr rises, min c_read, min
    (t - c_read), max (t - c_read), max contributions of a step, min c_steps, max
    c_steps]`` (the lag and step entries only when ``ptr`` rises; 0 with no contribution)."""
    T = ptr.shape[0] - 1
    rises = 1
    kmax = 0
    for t in range(1, T + 1):
        k = ptr[t] - ptr[t - 1]
        if k < 0:
            rises = 0
        elif k > kmax:
            kmax = k
    out[0] = rises
    out[4] = kmax
    P = c_read.shape[0]
    if rises == 0 or P == 0:
        for m in (1, 2, 3, 5, 6):
            out[m] = 0
        return 0
    rmin = c_read[0]
    lmin = T + 1 - c_read[0]  # no lag is above this
    lmax = 1 - c_read[0]  # nor below this
    smin = c_steps[0]
    smax = smin
    for t in range(1, T + 1):
        for p in range(ptr[t - 1], ptr[t]):
            r = c_read[p]
            lag = t - r
            rmin = min(rmin, r)
            lmin = min(lmin, lag)
            lmax = max(lmax, lag)
            smin = min(smin, c_steps[p])
            smax = max(smax, c_steps[p])
    out[1] = rmin
    out[2] = lmin
    out[3] = lmax
    out[5] = smin
    out[6] = smax
    return 0


@dataclass(frozen=True)
class EventTable:
    """One replicate's timeline (module docstring).  Build it with keyword arguments; the
    arrays are converted to their dtypes and their shapes checked (``FedsimError`` naming
    the column)."""

    time: np.ndarray
    kind: np.ndarray
    client: np.ndarray
    staleness_steps: np.ndarray
    staleness_time: np.ndarray
    buffer_fill: np.ndarray
    ptr: np.ndarray
    c_client: np.ndarray
    c_read: np.ndarray
    c_steps: np.ndarray
    c_stale: np.ndarray
    sim_time: float
    steps_done: int
    client_updates: np.ndarray
    concurrency_time: np.ndarray
    concurrency_busy: np.ndarray
    metric_steps: np.ndarray
    staleness_bound: float
    u_client: np.ndarray
    u_before: np.ndarray
    b_time: np.ndarray = field(default_factory=lambda: np.empty(0))
    b_delta: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    b_gate: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    b_before: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        cast = object.__setattr__
        for name, dt in _ONE_D:
            a = getattr(self, name)
            if not (type(a) is np.ndarray and a.ndim == 1 and a.dtype == dt
                    and a.flags.c_contiguous):
                a = np.ascontiguousarray(a, dtype=dt)
                cast(self, name, a)
            if a.ndim != 1:
                require(False, f"EventTable.{name}", a.shape, "must be one-dimensional")
        for name, dt in _ARRAYS:
            a = getattr(self, name)
            if not (type(a) is np.ndarray and a.dtype == dt and a.flags.c_contiguous):
                cast(self, name, np.ascontiguousarray(a, dtype=dt))
        if self.concurrency_busy.shape != self.concurrency_time.shape:
            require(False, "EventTable.concurrency_busy", self.concurrency_busy.shape,
                    f"must have the shape of concurrency_time {self.concurrency_time.shape}")
        cast(self, "sim_time", float(self.sim_time))
        cast(self, "steps_done", int(self.steps_done))
        cast(self, "staleness_bound", float(self.staleness_bound))
        T = self.steps_done
        P = self.c_client.size
        B = self.b_time.size
        for names, rows, rule in ((_STEP_COLS, T, f"steps_done = {T}"),
                                  (_CONTRIB_COLS, P, "c_client's"),
                                  (_BUSY_COLS, B, "b_time's")):
            for name in names:
                size = getattr(self, name).size
                if size != rows:
                    require(False, f"EventTable.{name}", size, f"must have {rule} rows "
                            f"({rows})")
        if self.u_before.size != self.u_client.size:
            require(False, "EventTable.u_before", self.u_before.size,
                    f"must have {self.u_client.size} rows (as u_client)")
        ptr = self.ptr
        if ptr.shape != (T + 1,):
            require(False, "EventTable.ptr", ptr.shape, f"must be ({T + 1},)")
        f = np.empty(7, np.int64)
        if ptr[0] == 0 and ptr[-1] == P:
            _table_facts(ptr, self.c_read, self.c_steps, f)
        if not (ptr[0] == 0 and ptr[-1] == P and (T == 0 or f[0] == 1)):
            require(False, "EventTable.ptr", f"[{ptr[0]} .. {ptr[-1]}]",
                    f"must rise from 0 to the {P} contributions")
        lag = 1
        if P:
            require(bool(f[1] >= 0 and f[2] >= 1), "EventTable.c_read", int(f[1]),
                    "must name a model older than the step consuming it")
            require(bool(f[5] >= 0), "EventTable.c_steps", int(f[5]), "must be >= 0")
            lag = max(1, int(f[3]))
        cast(self, "_lag", lag)
        cast(self, "_kmax", int(f[4]) if T else 0)
        cast(self, "_smax", int(f[6]) if P else 0)

    # -- derived ------------------------------------------------------------------------
    @property
    def n(self) -> int:
        """The number of clients."""
        return int(self.client_updates.size)

    def contribution_steps(self) -> np.ndarray:
        """The step consuming each contribution, ``(P,)`` int64."""
        return np.repeat(np.arange(1, self.steps_done + 1, dtype=np.int64), np.diff(self.ptr))

    def max_lag(self) -> int:
        """The largest ``t - c_read`` of a contribution (1 with none): the replay's ring
        must hold more models than this."""
        return self._lag

    def max_steps(self) -> int:
        """The most local steps of a contribution (0 with none)."""
        return self._smax

    def max_contributions(self) -> int:
        """The most contributions a step consumes (0 with no step)."""
        return self._kmax

    def columns(self, t: int | None = None) -> dict[str, np.ndarray]:
        """The Trace's timeline columns up to step ``t`` (default: all), with the row of
        step 0 (time 0, kind 0, client -1, zeros) first."""
        t = self.steps_done if t is None else int(t)
        z = np.zeros(1)
        return {"time": np.concatenate((z, self.time[:t])),
                "kind_code": np.concatenate((np.zeros(1, np.int8), self.kind[:t])),
                "client": np.concatenate(([-1], self.client[:t])).astype(np.int64),
                "staleness_steps": np.concatenate(([0], self.staleness_steps[:t])
                                                  ).astype(np.int64),
                "staleness_time": np.concatenate((z, self.staleness_time[:t])),
                "buffer_fill": np.concatenate(([0], self.buffer_fill[:t])).astype(np.int64)}

    def truncated(self, t: int) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
        """``(sim_time, client_updates, concurrency_time, concurrency_busy)`` the engine
        reports for a run stopped by a divergence at step ``t`` (module docstring)."""
        t = int(t)
        sim_time = float(self.time[t - 1])
        counts = np.bincount(self.u_client[self.u_before < t], minlength=self.n
                             ).astype(np.int64)
        if self.concurrency_time.size == 0:  # a model with no busy curve (the window model)
            return sim_time, counts, self.concurrency_time.copy(), self.concurrency_busy.copy()
        ok = (self.b_gate < t) & ((self.b_delta > 0) | (self.b_before < t)
                                  | (self.b_time == sim_time))
        ct, cb = busy_curve(self.n, self.b_time[ok], self.b_delta[ok])
        return sim_time, counts, ct, cb

    def trace(self, *, metric_steps: np.ndarray, metrics: dict[str, np.ndarray],
              final_w: np.ndarray, diverged_step: int | None,
              info: dict[str, Any] | None = None) -> Trace:
        """The engine's :class:`~fedsim.trace.Trace` of this replicate, from the replayed
        metrics (``metric_steps``/``metrics``: the records as the engine keeps them, no
        running averages yet) and final model."""
        if diverged_step is None:
            t = self.steps_done
            sim_time, counts = self.sim_time, self.client_updates.copy()
            ct, cb = self.concurrency_time.copy(), self.concurrency_busy.copy()
        else:
            t = int(diverged_step)
            sim_time, counts, ct, cb = self.truncated(t)
        if ct.size and sim_time > ct[0]:
            dur = np.diff(np.append(ct, sim_time))
            conc_mean = float(np.sum(dur * cb) / (sim_time - ct[0]))
        else:
            conc_mean = float(cb[-1]) if cb.size else math.nan
        return Trace(**self.columns(t), metric_steps=np.asarray(metric_steps, np.int64),
                     metrics=running_averages(metrics), client_updates=counts,
                     concurrency_time=ct, concurrency_busy=cb, concurrency_mean=conc_mean,
                     diverged=diverged_step is not None, diverged_step=diverged_step,
                     final_w=np.array(final_w, dtype=np.float64), steps_done=t,
                     sim_time=float(sim_time), staleness_bound=self.staleness_bound,
                     info={**self.info, **(info or {})})
